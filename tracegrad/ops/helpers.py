"""Op-level helpers: small functions that apply the registry's primitives directly, for the
derivative rules of ``ops/`` and for ``autograd/`` (which stand below the PyTorch surface of
``_api/`` and must not call up into it).

They take Tensors (and, where said, Python numbers), and do no more than the primitives need:
no argument parsing, no ``out=``, no view bookkeeping (a rule's results are fresh gradients,
never aliases a user can write through), no grad_fn renaming. The conversions and the
promotion rule (``to_tensor``, ``cast``, ``promoted``) and ``sum_to_shape`` live here once and
the surface re-exports them.

>>> import tracegrad as tg
>>> from tracegrad.ops import helpers as H
>>> H.where(tg.tensor([True, False]), tg.tensor([1.0, 2.0]), 0.0)
tensor([1., 0.])
"""
from __future__ import annotations

import numpy as np

from ..core import creation
from ..core import dtypes as _dt
from ..core.tensor import Tensor
from . import elementwise as E
from . import movement as M
from . import reduce as R
from .shapes import normalize_dims, wrap_dim


# ----------------------------------------------------------------------------- conversion
def scalar_tensor(value, dtype: _dt.DType) -> Tensor:
    """A 0-dim tensor of ``dtype`` holding the number ``value`` (an int outside a smaller
    dtype's range wraps into it, as in PyTorch)."""
    try:
        array = np.asarray(value, dtype=dtype.np)
    except OverflowError:  # (beyond int64 this raises, as PyTorch does)
        array = np.asarray(value).astype(dtype.np)
    return creation._wrap(array, dtype)


def to_tensor(x, dtype: _dt.DType | None = None) -> Tensor:
    """A Tensor for ``x`` (tensor, Python number, ndarray, list); cast when ``dtype`` differs."""
    if isinstance(x, Tensor):
        return x if dtype is None or x.dtype is dtype else cast(x, dtype)
    if isinstance(x, (bool, int, float, np.number, np.bool_)):
        return scalar_tensor(x, dtype or _dt.category_default(_dt.scalar_category(x)))
    return creation.tensor(x, dtype=dtype)


def cast(x: Tensor, dtype) -> Tensor:
    """``x`` in ``dtype`` (``x`` itself when it has it)."""
    dtype = _dt.to_dtype(dtype)
    if x.dtype is dtype:
        return x
    return E.CAST(x, dtype=dtype)


def promoted(*args, floating: bool = False) -> list[Tensor]:
    """The operands as tensors of their common dtype (PyTorch's promotion, ``dtypes.result_type``);
    with ``floating``, integer and bool results become the default float dtype."""
    dt = _dt.result_type(*args)
    if floating and not dt.is_floating_point:
        dt = _dt.get_default_dtype()
    return [to_tensor(a, dt) for a in args]


# ----------------------------------------------------------------------------- elementwise
def mul(a, b) -> Tensor:
    return E.MUL(*promoted(a, b))


def floor_divide(a, b) -> Tensor:
    """``a // b`` (exact on integers)."""
    return E.FLOOR_DIVIDE(*promoted(a, b))


def where(cond: Tensor, a, b) -> Tensor:
    """``a`` where ``cond`` holds, else ``b`` (either may be a number)."""
    return E.WHERE(cond, *promoted(a, b))


def eq(a, b) -> Tensor:
    return E.EQ(*promoted(a, b))


def gt(a, b) -> Tensor:
    return E.GT(*promoted(a, b))


def lt(a, b) -> Tensor:
    return E.LT(*promoted(a, b))


def logical_and(a: Tensor, b: Tensor) -> Tensor:
    return E.LOGICAL_AND(*promoted(a, b))


# ----------------------------------------------------------------------------- shapes
def reshape(x: Tensor, shape) -> Tensor:
    shape = tuple(shape)
    return x if tuple(x.shape) == shape else M.RESHAPE(x, shape=shape)


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    shape = list(x.shape)
    shape.insert(wrap_dim(dim, x.ndim + 1), 1)
    return M.RESHAPE(x, shape=tuple(shape))


def squeeze(x: Tensor, dim: int) -> Tensor:
    """``x`` without ``dim`` when that dim has size 1 (else ``x``)."""
    d = wrap_dim(dim, x.ndim)
    if x.shape[d] != 1:
        return x
    return M.RESHAPE(x, shape=tuple(s for i, s in enumerate(x.shape) if i != d))


def expand(x: Tensor, shape) -> Tensor:
    """``x`` broadcast to ``shape`` (no -1 entries)."""
    shape = tuple(shape)
    return x if tuple(x.shape) == shape else M.EXPAND(x, shape=shape)


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``length`` entries of ``x`` from ``start`` along ``dim`` (0 <= start <= start + length <= size)."""
    d = wrap_dim(dim, x.ndim)
    if start == 0 and length == x.shape[d]:
        return x
    index = tuple((start, start + length, 1) if i == d else (0, s, 1) for i, s in enumerate(x.shape))
    return M.SLICE(x, index=index)


def cat(tensors, dim: int = 0) -> Tensor:
    """The tensors (of one dtype) joined along ``dim``."""
    tensors = list(tensors)
    if len(tensors) == 1:
        return M.COPY(tensors[0])
    return M.CAT(*tensors, dim=wrap_dim(dim, tensors[0].ndim))


def stack(tensors, dim: int = 0) -> Tensor:
    """The tensors (of one shape and dtype) joined along a new ``dim``."""
    tensors = list(tensors)
    d = wrap_dim(dim, tensors[0].ndim + 1)
    return cat([unsqueeze(t, d) for t in tensors], d)


def flip(x: Tensor, dims) -> Tensor:
    return M.FLIP(x, dims=normalize_dims(dims, x.ndim))


def sum_to_shape(g: Tensor, shape) -> Tensor:
    """Sum a broadcast gradient back to ``shape`` (the one place broadcasting is undone)."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and g.shape[lead + i] != 1)
    out = R.SUM(g, dim=dims, keepdim=True) if dims else g
    return reshape(out, shape)


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (the rest zero); ``diagonal`` shifts it."""
    return _triangle(x, diagonal, E.LE)


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (the rest zero); ``diagonal`` shifts it."""
    return _triangle(x, diagonal, E.GE)


def _triangle(x, diagonal, keep):
    rows, cols = x.shape[-2:]
    dev = x.device  # (a cuda tensor's mask is made on the device: ops do not mix devices)
    offset = E.SUB(unsqueeze(creation.arange(cols, device=dev), 0), unsqueeze(creation.arange(rows, device=dev), 1))  # col - row
    return E.WHERE(keep(*promoted(offset, int(diagonal))), x, scalar_tensor(0, x.dtype))

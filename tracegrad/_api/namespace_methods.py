"""More of ``torch.Tensor``'s methods, bound onto Tensor: the methods of functions defined
elsewhere (``kron``, ``renorm``, ``mode``, ``frexp``, ...), the in-place forms PyTorch has for
them, the real-valued answers of the complex API (``conj``, ``real``, ``adjoint``, ``mH``),
flat writes (``put_``), ``index_reduce``, ``sum_to_size``, Python-callable fills (``apply_``,
``map_``), ``resize_``, ``bfloat16()``, and a clear error for CUDA tensors.

>>> import tracegrad as tg
>>> x = tg.zeros(2, 3)
>>> x.put_(tg.tensor([0, 5]), tg.tensor([1.0, 2.0]))
tensor([[1., 0., 0.],
        [0., 0., 2.]])
>>> tg.ones(2, 3).sum_to_size(1, 3)
tensor([[2., 2., 2.]])
"""
from __future__ import annotations

import numpy as np

from . import functional as F
from .. import linalg as LA
from . import arithmetic as MX
from . import numerics as NU
from . import searching as SR
from . import strided as ST
from ..core.creation import ones_like
from ..core.dtypes import bfloat16, bool_
from .contractions import kron
from ..core import tracing as trace
from ..ops.index import check_index
from ..core.tensor import Tensor
from ..core.views import assign


def _inplace(fn):
    from .tensor_methods import _inplace as make

    return make(fn)


# ----------------------------------------------------------------------------- methods of functions
Tensor.kron = lambda self, other: kron(self, other)
Tensor.nonzero_static = lambda self, *, size, fill_value=-1: SR.nonzero_static(self, size=size, fill_value=fill_value)
Tensor.lu = lambda self, pivot=True, get_infos=False: _legacy().lu(self, pivot, get_infos)
Tensor.triangular_solve = lambda self, A, upper=True, transpose=False, unitriangular=False: \
    _legacy().triangular_solve(self, A, upper, transpose, unitriangular)
Tensor.i0 = lambda self: _special().i0(self)
Tensor.i0_ = _inplace(lambda self: _special().i0(self))
Tensor.as_strided = lambda self, size, stride, storage_offset=None: ST.as_strided(self, size, stride, storage_offset)
Tensor.as_strided_scatter = lambda self, src, size, stride, storage_offset=None: ST.as_strided_scatter(
    self, src, size, stride, storage_offset)
Tensor.renorm = lambda self, p, dim, maxnorm: NU.renorm(self, p, dim, maxnorm)
Tensor.renorm_ = _inplace(NU.renorm)
Tensor.frexp = lambda self: NU.frexp(self)
Tensor.hardshrink = lambda self, lambd=0.5: NU.hardshrink(self, lambd)
Tensor.mode = lambda self, dim=-1, keepdim=False: SR.mode(self, dim, keepdim)
Tensor.matrix_exp = lambda self: LA.matrix_exp(self)
Tensor.prelu = lambda self, weight: _prelu(self, weight)
Tensor.angle = lambda self: NU.angle(self)
Tensor.gcd, Tensor.lcm, Tensor.nextafter = NU.gcd, NU.lcm, NU.nextafter
Tensor.gcd_, Tensor.lcm_, Tensor.nextafter_ = _inplace(NU.gcd), _inplace(NU.lcm), _inplace(NU.nextafter)
Tensor.histogram = lambda self, bins, *, range=None, weight=None, density=False: NU.histogram(
    self, bins, range=range, weight=weight, density=density)
Tensor.split_with_sizes = lambda self, split_sizes, dim=0: F.split(self, list(split_sizes), dim)
Tensor.unsafe_split = lambda self, split_size, dim=0: F.split(self, split_size, dim)
Tensor.unsafe_split_with_sizes = Tensor.split_with_sizes
Tensor.unsafe_chunk = lambda self, chunks, dim=0: F.chunk(self, chunks, dim)
Tensor.narrow_copy = lambda self, dim, start, length: F.narrow(self, dim, start, length).clone()
for _alias, _name in [("greater_", "gt_"), ("greater_equal_", "ge_"), ("less_", "lt_"),
                      ("less_equal_", "le_"), ("not_equal_", "ne_")]:
    setattr(Tensor, _alias, getattr(Tensor, _name))
for _name in ["addmm", "addbmm", "addmv", "addr", "baddbmm"]:
    setattr(Tensor, _name + "_", _inplace(getattr(MX, _name)))


def _legacy():
    from ..linalg import legacy as linalg_legacy

    return linalg_legacy


def _special():
    from .. import special

    return special


def _prelu(x, weight):
    from ..nn.functional import prelu

    return prelu(x, weight)


# ----------------------------------------------------------------------------- the complex API, real dtypes
def _same(self):
    return self


Tensor.conj = Tensor.conj_physical = Tensor.resolve_conj = Tensor.resolve_neg = _same
Tensor.conj_physical_ = _same
Tensor.is_conj = Tensor.is_neg = lambda self: False
Tensor.isreal = lambda self: ones_like(self, dtype=bool_)
Tensor.real = property(_same)


def _imag(self):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


Tensor.imag = property(_imag)
Tensor.adjoint = lambda self: self.transpose(-2, -1)
Tensor.mH = property(lambda self: self.transpose(-2, -1))


def _H(self):
    if self.ndim > 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
    return self.t()


Tensor.H = property(_H)


# ----------------------------------------------------------------------------- writes and reductions
def _put_(self, index, source, accumulate=False):
    """Writes ``source`` at the flat (row-major) positions ``index`` of this tensor."""
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = self.numel()
    flat = F.reshape(self, (n,))
    idx = check_index(index.reshape(-1), n, 0, "take", negative=True)  # (PyTorch's message, as take)
    idx = F.where(idx < 0, idx + n, idx)
    updated = flat.index_put((idx,), source.reshape(-1).to(self.dtype), accumulate)
    return assign(self, F.reshape(updated, tuple(self.shape)))


Tensor.put_ = _put_
Tensor.put = lambda self, index, source, accumulate=False: _put_(self.clone(), index, source, accumulate)


def _index_reduce(self, dim, index, source, reduce, *, include_self=True):
    """Reduces the slices of ``source`` along ``dim`` into the slices of this tensor that
    ``index`` names (``prod``, ``mean``, ``amax``, ``amin``), as PyTorch's index_reduce."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = dim % max(self.ndim, 1)
    index = check_index(index, self.shape[d] if self.ndim else 1, d, "select")  # (PyTorch's message)
    shape = [1] * source.ndim
    shape[d] = -1
    spread = index.reshape(shape).expand(*source.shape)
    return self.scatter_reduce(d, spread, source, reduce, include_self=include_self)


Tensor.index_reduce = _index_reduce
Tensor.index_reduce_ = _inplace(_index_reduce)


def _sum_to_size(self, *size):
    """This tensor summed down to ``size`` (which it must broadcast to)."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    try:
        ok = np.broadcast_shapes(size, tuple(self.shape)) == tuple(self.shape)
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(self.shape)}.")
    return F.sum_to_shape(self, size)


Tensor.sum_to_size = _sum_to_size


# ----------------------------------------------------------------------------- Python callables, resize
def _eager_only(self, what):
    trace.graph_break(f"{what} runs a Python callable on every element")
    if self.requires_grad:
        raise RuntimeError(f"{what}: a leaf Variable that requires grad is being used in an in-place operation.")


def _apply_(self, callable):
    """Replaces every element ``x`` by ``callable(x)`` (a Python call per element: slow)."""
    _eager_only(self, "apply_")
    values = np.vectorize(callable, otypes=[self._value.dtype])(self._value) if self.numel() else self._value
    return assign(self, Tensor._make(np.asarray(values, dtype=self._value.dtype), self.dtype))


def _map_(self, tensor, callable):
    """Replaces every element ``x`` by ``callable(x, y)``, ``y`` the matching element of
    ``tensor`` (broadcast to this tensor's shape)."""
    _eager_only(self, "map_")
    other = np.broadcast_to(tensor._value, self._value.shape)
    values = np.vectorize(callable, otypes=[self._value.dtype])(self._value, other) if self.numel() else self._value
    return assign(self, Tensor._make(np.asarray(values, dtype=self._value.dtype), self.dtype))


Tensor.apply_ = _apply_
Tensor.map_ = _map_


def _resize_(self, *sizes, memory_format=None):
    """This tensor given a new shape in place: its elements kept in row-major order, new ones
    zero (PyTorch leaves them uninitialized)."""
    sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    trace.graph_break("resize_ changes a tensor's size in place")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if self._base is not None:
        raise RuntimeError("resize_ of a view is not supported: its storage belongs to its base tensor")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(sizes)}")
    old = self._value.reshape(-1)
    new = np.zeros(int(np.prod(sizes, dtype=np.int64)), dtype=old.dtype)
    k = min(old.size, new.size)
    new[:k] = old[:k]
    self._value = new.reshape(sizes)
    self._vc.value += 1
    return self


Tensor.resize_ = _resize_
Tensor.resize_as_ = lambda self, other, memory_format=None: _resize_(self, tuple(other.shape))
Tensor.new_empty_strided = lambda self, size, stride, **kw: self.new_empty(tuple(size), **kw)
Tensor.dim_order = lambda self, **kw: tuple(range(self.ndim))


def _storage_offset(self):
    """Elements between the start of the base tensor's storage and this view's first element."""
    if self._is_traced or self._base is None:
        return 0
    start = self._value.__array_interface__["data"][0]
    return (start - self._base._value.__array_interface__["data"][0]) // self._value.itemsize


Tensor.storage_offset = _storage_offset


# ----------------------------------------------------------------------------- what tracegrad has no form of
for _name in ["is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_nested", "is_mkldnn", "is_xla",
              "is_mps", "is_xpu", "is_ipu", "is_vulkan", "is_maia", "is_mtia"]:
    setattr(Tensor, _name, property(lambda self: False))
Tensor.is_pinned = lambda self, device=None: False
Tensor.is_shared = lambda self: False


def _cuda(self, device=None, non_blocking=False, memory_format=None):
    """``x.cuda()``: a copy in device memory (core/placement.py); without a GPU or the
    emulation, PyTorch's CPU build's error (core/device.py)."""
    from ..core.device import device as _dev
    from ..core.placement import move

    return move(self, _dev("cuda") if device is None else _dev("cuda", device) if isinstance(device, int)
                else _dev(device))


Tensor.cuda = _cuda


Tensor.bfloat16 = lambda self, memory_format=None: self.to(bfloat16)

"""The public tensor functions (``tg.add``, ``tg.sum``, ``tg.reshape``, ...): argument handling,
type promotion and composites built from the registry's primitives. Composites have no
rules of their own: their gradients come from the primitives they are made of.

>>> import tracegrad as tg
>>> tg.add(tg.ones(2), 1.5, alpha=2)
tensor([4., 4.])
"""
from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from ..core.placement import on_host as _on_host, on_inputs_device as _on_inputs_device
from .. import amp as _amp
from ..core import dtypes as _dt
from ..autograd.graph import named_backward  # (grad_fn names as PyTorch's)
from ..ops import bitwise as B
from ..ops import elementwise as E
from ..ops import linalg as L
from ..ops import movement as M
from ..ops import reduce as R
from ..ops import scan as S
# (op-level, defined once there; sum_to_shape is re-exported for Tensor.sum_to_size)
from ..ops.helpers import cast, sum_to_shape, to_tensor  # noqa: F401
from ..ops.helpers import promoted as _promoted
from ..ops.shapes import normalize_dims, numel, wrap_dim, wrap_dim_of_nonscalar, wrap_dim_or_none
from ..core.tensor import Tensor
from ..core import views
from .numpy_names import accept_numpy_names

# the functions of the tg.* namespace (tracegrad/__init__.py imports them by name)
__all__ = ['add', 'sub', 'mul', 'div', 'true_divide', 'divide', 'pow', 'neg', 'maximum', 'minimum', 'eq',
           'ne', 'lt', 'le', 'gt', 'ge', 'greater', 'less', 'greater_equal', 'less_equal', 'not_equal',
           'logical_and', 'logical_or', 'logical_not', 'bitwise_and', 'bitwise_or', 'bitwise_xor',
           'bitwise_left_shift', 'bitwise_right_shift', 'bitwise_not', 'where', 'clamp', 'clip', 'exp', 'log',
           'log1p', 'expm1', 'sqrt', 'rsqrt', 'sin', 'cos', 'tan', 'tanh', 'sigmoid', 'relu', 'erf', 'floor',
           'abs', 'sign', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'asinh', 'acosh', 'atanh', 'exp2', 'ceil',
           'trunc', 'erfc', 'arcsin', 'arccos', 'arctan', 'arcsinh', 'arccosh', 'arctanh', 'fix', 'round',
           'atan2', 'arctan2', 'hypot', 'fmod', 'remainder', 'square', 'reciprocal', 'log2', 'log10', 'sum',
           'cumsum', 'cumprod', 'cummax', 'cummin', 'logcumsumexp', 'mean', 'var', 'std', 'prod', 'amax',
           'amin', 'argmax', 'argmin', 'max', 'min', 'logsumexp', 'reshape', 'view', 'flatten', 'unflatten',
           'unsqueeze', 'squeeze', 'permute', 'transpose', 'swapaxes', 't', 'expand', 'expand_as',
           'broadcast_to', 'contiguous', 'clone', 'flip', 'narrow', 'cat', 'concat', 'concatenate', 'stack',
           'split', 'chunk', 'unbind', 'matmul', 'mm', 'bmm', 'mv', 'dot', 'outer', 'argsort', 'argwhere',
           'gather', 'index_add', 'index_select', 'nonzero', 'scatter_add', 'sort', 'topk', 'scatter',
           'scatter_reduce', 'allclose']

values_indices = namedtuple("values_indices", ["values", "indices"])


# ----------------------------------------------------------------------------- conversion
def _check_arg(x, name="input"):
    if not isinstance(x, (Tensor, bool, int, float, np.number, np.bool_)):
        raise TypeError(f"{name} must be a Tensor or a number, got {type(x).__name__}")


# ----------------------------------------------------------------------------- arithmetic
def _times_alpha(a, b, alpha):
    """``a`` and ``alpha * b`` in add's and sub's result dtype, that of ``a`` and ``b`` alone (a
    Python alpha does not take part in the promotion, as in PyTorch)."""
    if isinstance(alpha, Tensor):  # (a tensor alpha: an optimizer option in a trace)
        return a, mul(b, alpha)
    if alpha == 1 and not isinstance(alpha, (bool, np.bool_)):
        return a, b
    dtype = _dt.result_type(a, b)
    if dtype is not _dt.bool_ and isinstance(alpha, (bool, np.bool_)):
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not dtype.is_floating_point and _dt.scalar_category(alpha) == 2:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    a, b = _promoted(a, b)
    return a, mul(b, bool(alpha) if dtype is _dt.bool_ else alpha)


def add(a, b, alpha=1):
    _check_arg(a), _check_arg(b, "other")
    return E.ADD(*_promoted(*_times_alpha(a, b, alpha)))


def sub(a, b, alpha=1):
    _check_arg(a), _check_arg(b, "other")
    bools = [isinstance(x, Tensor) and x.dtype is _dt.bool_ for x in (a, b)]
    if all(bools):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if any(bools) or isinstance(a, (bool, np.bool_)) or isinstance(b, (bool, np.bool_)):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return E.SUB(*_promoted(*_times_alpha(a, b, alpha)))


def mul(a, b):
    _check_arg(a), _check_arg(b, "other")
    return E.MUL(*_promoted(a, b))


def div(a, b, rounding_mode=None):
    _check_arg(a), _check_arg(b, "other")
    if rounding_mode not in (None, "floor", "trunc"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")
    if rounding_mode is None:
        return E.DIV(*_promoted(a, b, floating=True))
    dt = _dt.result_type(a, b)
    if dt.category == 1:  # exactly, in integers (float64 rounds above 2^53)
        return (E.FLOOR_DIVIDE if rounding_mode == "floor" else E.TRUNC_DIVIDE)(*_promoted(a, b))
    operands = _promoted(a, b, floating=True)
    q = E.FLOOR_DIVIDE(*operands) if rounding_mode == "floor" else E.TRUNC(E.DIV(*operands))
    return cast(q, dt)


true_divide = divide = div


@named_backward(lambda a, b: "PowBackward1" if hasattr(b, "_grad_fn") and hasattr(a, "_grad_fn") else None)
def pow(a, b):
    _check_arg(a), _check_arg(b, "exponent")
    if (isinstance(b, int) and not isinstance(b, bool) and b < 0 and isinstance(a, Tensor)
            and a.dtype.category == 1):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return E.POW(*_promoted(a, b))


def neg(x):
    if x.dtype is _dt.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return E.NEG(x)


def maximum(a, b):
    return E.MAXIMUM(*_promoted(a, b))


def minimum(a, b):
    return E.MINIMUM(*_promoted(a, b))


def _compare(op):
    def fn(a, b):
        _check_arg(a), _check_arg(b, "other")
        return op(*_promoted(a, b))

    fn.__name__ = op.name
    return fn


eq, ne, lt, le, gt, ge = (_compare(o) for o in (E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE))
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne


def logical_and(a, b):
    return E.LOGICAL_AND(*_promoted(a, b))


def logical_or(a, b):
    return E.LOGICAL_OR(*_promoted(a, b))


def logical_not(x):
    return E.LOGICAL_NOT(x)


def _bitwise(op):
    def fn(a, b):
        return op(*_promoted(a, b))

    fn.__name__ = op.name
    fn.__doc__ = f"Elementwise {op.name} of integer or bool tensors (ops/bitwise.py)."
    return fn


bitwise_and, bitwise_or, bitwise_xor = _bitwise(B.BITWISE_AND), _bitwise(B.BITWISE_OR), _bitwise(B.BITWISE_XOR)
bitwise_left_shift, bitwise_right_shift = _bitwise(B.BITWISE_LEFT_SHIFT), _bitwise(B.BITWISE_RIGHT_SHIFT)


def bitwise_not(x):
    """``~x``: every bit flipped (``x ^ -1``); for bools, ``logical_not``."""
    if x.dtype is _dt.bool_:
        return logical_not(x)
    return bitwise_xor(x, to_tensor(-1, x.dtype))


def where(condition, input=None, other=None):
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    cond = to_tensor(condition)
    if cond.dtype is not _dt.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{cond.dtype.torch_name}")
    dtype = _dt.result_type(input, other)
    if dtype.category == 1:  # (a Python int beyond an int8's range is an error, as PyTorch's)
        input, other = (_int_scalar(v, dtype) if type(v) is int else v for v in (input, other))
    a, b = _promoted(input, other)
    return E.WHERE(cond, a, b)


@named_backward(lambda x, min=None, max=None: "ClampBackward0" if hasattr(min, "shape") or hasattr(max, "shape") else "ClampBackward1")
def clamp(x, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = where(out < min, min, out) if not isinstance(min, Tensor) else maximum(out, min)
        if max is not None:
            out = minimum(out, max) if isinstance(max, Tensor) else where(out > max, max, out)
        return out
    if x.dtype.category < 2 and (isinstance(min, float) or isinstance(max, float)):
        x = cast(x, _dt.get_default_dtype())
    elif x.dtype.category == 1:
        min, max = (None if b is None else _int_scalar(b, x.dtype) for b in (min, max))
    return E.CLAMP(x, min=min, max=max)


def _int_scalar(value, dtype):
    """A Python int as an op's scalar argument of integer ``dtype`` (dtypes.convert_ints)."""
    return _dt.convert_ints(int(value), dtype, dtype.c_type).item()


clip = clamp


def _unary(op):
    def fn(input):  # (PyTorch's name: torch.exp(input=x) is a call programs make)
        if not isinstance(input, Tensor):
            raise TypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        return op(input)

    fn.__name__ = op.name
    fn.__doc__ = f"Elementwise {op.name}."
    return fn


exp, log, log1p, expm1, sqrt, rsqrt, sin, cos, tan, tanh, sigmoid, relu, erf, floor = (
    _unary(o) for o in (E.EXP, E.LOG, E.LOG1P, E.EXPM1, E.SQRT, E.RSQRT, E.SIN, E.COS, E.TAN,
                        E.TANH, E.SIGMOID, E.RELU, E.ERF, E.FLOOR))
abs, sign = _unary(E.ABS), _unary(E.SIGN)
asin, acos, atan, sinh, cosh, asinh, acosh, atanh, exp2, ceil, trunc, erfc = (
    _unary(o) for o in (E.ASIN, E.ACOS, E.ATAN, E.SINH, E.COSH, E.ASINH, E.ACOSH, E.ATANH, E.EXP2,
                        E.CEIL, E.TRUNC, E.ERFC))
arcsin, arccos, arctan, arcsinh, arccosh, arctanh, fix = asin, acos, atan, asinh, acosh, atanh, trunc


def round(x, *, decimals=0):  # (torch.round)
    """Half to even, as ``torch.round``; ``decimals`` scales by 10**decimals around it, as
    PyTorch does (so ``round(x, decimals=2)`` is ``round(x * 100) / 100``)."""
    if decimals == 0:
        return E.ROUND(x)
    scale = float(10.0 ** builtins.abs(decimals))
    if decimals > 0:
        return div(E.ROUND(mul(x, scale)), scale)
    return mul(E.ROUND(div(x, scale)), scale)


def atan2(input, other):
    return E.ATAN2(*_promoted(input, other, floating=True))


arctan2 = atan2


def hypot(input, other):
    return E.HYPOT(*_promoted(input, other, floating=True))


def _mod(op, a, b):
    """``op`` (fmod or remainder) after promotion; on integers exactly (in integers)."""
    a, b = _promoted(a, b)
    if a.dtype is _dt.bool_:
        raise TypeError(f"tg.{op.name}: not implemented for bool tensors")
    return op(a, b)


def fmod(input, other):
    """The remainder of ``input / other`` with the sign of ``input`` (C's fmod)."""
    return _mod(E.FMOD, input, other)


def remainder(input, other):
    """The remainder of ``input / other`` with the sign of ``other`` (Python's ``%``)."""
    return _mod(E.REMAINDER, input, other)


def square(x):
    return mul(x, x)


def reciprocal(x):
    return div(1.0, x)


def log2(x):
    return log(x) / float(np.log(2.0))


def log10(x):
    return log(x) / float(np.log(10.0))


# ----------------------------------------------------------------------------- reductions
@named_backward(lambda x, dim=None, *a, **k: "SumBackward0" if dim is None else "SumBackward1")
def sum(x, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        x = cast(x, _dt.to_dtype(dtype))
    return R.SUM(x, dim=normalize_dims(dim, x.ndim), keepdim=bool(keepdim))


def _scan(op, x, dim, indices=False):
    """``op`` (a scan primitive) along ``dim``; a 0-dim ``x`` scans as one element. With
    ``indices``, also the positions of the running extremes (cummax, cummin)."""
    flat = x.ndim == 0
    d = wrap_dim(dim, 1 if flat else x.ndim)  # (0 and -1 name a 0-dim tensor's only element)
    xs = reshape(x, (1,)) if flat else x
    out = [op(xs, dim=d)]
    if indices:
        out.append(S.scan_indices(xs.detach(), out[0].detach(), d))
    if flat:
        out = [reshape(o, ()) for o in out]
    return values_indices(*out) if indices else out[0]


def cumsum(x, dim, *, dtype=None):
    """Running sums along ``dim`` (integers and bools sum as int64, as in PyTorch).

    >>> import tracegrad as tg
    >>> tg.cumsum(tg.tensor([1.0, 2.0, 3.0]), 0)
    tensor([1., 3., 6.])
    """
    return _scan(S.CUMSUM, x if dtype is None else cast(x, _dt.to_dtype(dtype)), dim)


def cumprod(x, dim, *, dtype=None):
    """Running products along ``dim`` (integers and bools multiply as int64). The gradient is
    exact through zeros.

    >>> import tracegrad as tg
    >>> tg.cumprod(tg.tensor([1.0, 2.0, 3.0]), 0)
    tensor([1., 2., 6.])
    """
    return _scan(S.CUMPROD, x if dtype is None else cast(x, _dt.to_dtype(dtype)), dim)


@_on_inputs_device
def cummax(x, dim):
    """``(values, indices)``: the running maximum along ``dim`` and where it was reached (the
    latest position, for ties). NaN propagates.

    >>> import tracegrad as tg
    >>> tg.cummax(tg.tensor([1.0, 3.0, 2.0]), 0)
    values_indices(values=tensor([1., 3., 3.]), indices=tensor([0, 1, 1]))
    """
    return _scan(S.CUMMAX, x, dim, indices=True)


@_on_inputs_device
def cummin(x, dim):
    """``(values, indices)``: the running minimum along ``dim``; see ``cummax``.

    >>> import tracegrad as tg
    >>> tg.cummin(tg.tensor([2.0, 1.0, 3.0]), 0).values
    tensor([2., 1., 1.])
    """
    return _scan(S.CUMMIN, x, dim, indices=True)


def logcumsumexp(x, dim):
    """``log(cumsum(exp(x)))`` along ``dim``, computed without overflow or underflow.

    >>> import tracegrad as tg
    >>> tg.logcumsumexp(tg.tensor([-1000.0, -1000.0]), 0)
    tensor([-1000.0000,  -999.3068])
    """
    return _scan(S.LOGCUMSUMEXP, x, dim)


@named_backward(lambda x, dim=None, *a, **k: "MeanBackward0" if dim is None else "MeanBackward1")
def mean(x, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        x = cast(x, _dt.to_dtype(dtype))
    if not x.dtype.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {x.dtype.name.capitalize()}"
        )
    dims = normalize_dims(dim, x.ndim)
    n = numel([x.shape[d] for d in dims])
    return div(R.SUM(x, dim=dims, keepdim=bool(keepdim)), float(n) if n else float("nan"))


@named_backward("VarBackward0")
def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = normalize_dims(dim, x.ndim)
    n = numel([x.shape[d] for d in dims])
    centered = x - mean(x, dims, keepdim=True)
    return sum(centered * centered, dims, keepdim=keepdim) / float(builtins.max(n - correction, 0))


@named_backward("StdBackward0")
def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return sqrt(var(x, dim, unbiased, keepdim, correction=correction))


@_amp.float32
def prod(x, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        x = cast(x, _dt.to_dtype(dtype))
    return R.PROD(x, dim=normalize_dims(dim, x.ndim), keepdim=bool(keepdim))


def amax(x, dim=(), keepdim=False):
    return R.AMAX(x, dim=normalize_dims(dim if dim != () else None, x.ndim), keepdim=bool(keepdim))


def amin(x, dim=(), keepdim=False):
    return R.AMIN(x, dim=normalize_dims(dim if dim != () else None, x.ndim), keepdim=bool(keepdim))


def _no_bool(name, x):
    if x.dtype is _dt.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")


def argmax(x, dim=None, keepdim=False):
    _no_bool("argmax", x)
    return R.ARGMAX(x, dim=None if dim is None else wrap_dim_or_none(dim, x.ndim),
                    keepdim=bool(keepdim))


def argmin(x, dim=None, keepdim=False):
    _no_bool("argmin", x)
    return R.ARGMIN(x, dim=None if dim is None else wrap_dim_or_none(dim, x.ndim),
                    keepdim=bool(keepdim))


def _extreme(x, dim, keepdim, other, reduce_op, arg_op, binary):
    if isinstance(dim, Tensor):
        return binary(x, dim)
    if other is not None:
        return binary(x, other)
    if dim is None:
        return reduce_op(x, dim=normalize_dims(None, x.ndim), keepdim=False)
    d = wrap_dim_or_none(dim, x.ndim)
    idx = arg_op(x, dim=d, keepdim=True)
    from .indexing import gather as take_along  # (not ops.index.gather, bound below for tg.gather)

    values = take_along(x, d, idx) if d is not None else x
    if not keepdim and d is not None:
        values, idx = squeeze(values, d), squeeze(idx, d)
    return values_indices(values, idx)


@named_backward(lambda x, dim=None, *a, other=None, **k: "MaxBackward1" if dim is None and other is None else "MaxBackward0" if other is None else None)
def max(x, dim=None, keepdim=False, *, other=None):
    """``max(x)`` (ties share the gradient), ``max(x, dim)`` -> (values, indices), ``max(x, y)``."""
    return _extreme(x, dim, keepdim, other, R.AMAX, R.ARGMAX, maximum)


def min(x, dim=None, keepdim=False, *, other=None):
    return _extreme(x, dim, keepdim, other, R.AMIN, R.ARGMIN, minimum)


def logsumexp(x, dim=None, keepdim=False):
    dims = normalize_dims(dim, x.ndim)
    m = R.AMAX(x, dim=dims, keepdim=True).detach()
    m = where(m.abs() == float("inf"), 0.0, m)
    out = log(sum(exp(x - m), dims, keepdim=True)) + m
    return out if keepdim else reshape(out, [s for i, s in enumerate(x.shape) if i not in dims])


# ----------------------------------------------------------------------------- shapes
def _size_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(map(int, shape))


def _infer_minus_one(shape, total):
    if -1 not in shape:  # (the usual case: nothing to infer)
        return tuple(shape)
    shape = list(shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    i = shape.index(-1)
    known = numel(shape[:i] + shape[i + 1:])  # (the only -1 left out)
    if known == 0 or total % known:
        raise RuntimeError(f"shape '{shape}' is invalid for input of size {total}")
    shape[i] = total // known
    return tuple(shape)



# grad_fn names as PyTorch's (named_backward) for the movement and reduction functions below:
# a reshape of a contiguous tensor is a view there; of any other, a copy then an unsafe view.
def _reshape_name(x, *a, **k):
    return "ViewBackward0" if x.is_contiguous() else "UnsafeViewBackward0"


def _squeeze_name(x, dim=None):
    return "SqueezeBackward0" if dim is None else "SqueezeBackward2" if isinstance(dim, (tuple, list)) else "SqueezeBackward1"


def _matmul_name(a, b):
    # (PyTorch's matmul dispatches on the ranks: dot, mv, mm; batched products are named after
    # the reshapes around bmm, so those keep tracegrad's name)
    return {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0"}.get((a.dim(), b.dim()))


def _view_of(out, src, view_fn, inv_fn):
    return views.make_view(out, src, view_fn, inv_fn)


@named_backward(_reshape_name)
def reshape(x, *shape):
    old = tuple(x.shape)
    shape = _infer_minus_one(_size_args(shape), numel(old))
    if old == shape:
        return _alias(x)
    out = M.RESHAPE(x, shape=shape)
    if x._is_traced or np.may_share_memory(out._value, x._value):  # (exact for a reshape)
        _view_of(out, x, lambda b: reshape(b, shape), lambda r: reshape(r, old))
    return out


def view_as_dtype(x, dtype):
    """``x.view(dtype)``: the same bits read as ``dtype`` (PyTorch's): the last dim scales by the
    ratio of the element sizes, which must divide it, and must be contiguous. Eager only: it
    shares ``x``'s memory and version counter, without autograd history (bits reinterpreted
    have no derivative; the same dtype is an ordinary view)."""
    dtype = _dt.to_dtype(dtype)
    if dtype is x.dtype:
        return _alias(x)
    if x._is_traced:
        from ..core import tracing

        tracing.graph_break("Tensor.view(dtype) inside a compiled function")
    a, size, new = x._value, x.dtype.itemsize, dtype.itemsize
    if size != new:
        if x.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to view {x.dtype.torch_name} as {dtype.torch_name} "
                               "(different element sizes)")
        if a.shape[-1] != 1 and a.strides[-1] != size:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {x.dtype.torch_name} as {dtype.torch_name} "
                               "(different element sizes)")
        if (a.shape[-1] * size) % new:
            raise RuntimeError(f"self.size(-1) must be divisible by {new // size} to view {x.dtype.torch_name} as "
                               f"{dtype.torch_name} (different element sizes), but got {a.shape[-1]}")
        if a.shape[-1] == 1 and a.strides[-1] != size:  # (a size-1 last dim: any stride; numpy wants one)
            a = a.reshape(a.shape)
    out = Tensor._make(a.view(dtype.np), dtype)
    out._vc = x._vc  # (the same memory: an in-place write to either bumps both)
    return out


@named_backward("ViewBackward0")
def view(x, *shape):
    if len(shape) == 1 and isinstance(shape[0], _dt.DType):  # x.view(dtype): bits reinterpreted
        return view_as_dtype(x, shape[0])
    if not x._is_traced:
        shape_ = _infer_minus_one(_size_args(shape), x.numel())
        probe = x._value.view() if x._value.__class__ is np.ndarray else None
        try:
            if probe is None:  # (a cuda tensor's DeviceArray says whether strides express it)
                if x._value.reshape_view(shape_) is None:
                    raise AttributeError
            else:
                probe.shape = shape_
        except AttributeError:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ) from None
    return reshape(x, *shape)


_alias = views.alias  # (a view of the same shape)


@named_backward(_reshape_name)
def flatten(x, start_dim=0, end_dim=-1):
    s, e = wrap_dim(start_dim, x.ndim), wrap_dim(end_dim, x.ndim)  # (checked on 0-d too)
    if x.ndim == 0:
        return reshape(x, 1)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = list(x.shape[:s]) + [numel(x.shape[s:e + 1])] + list(x.shape[e + 1:])
    return reshape(x, shape)


@named_backward("ViewBackward0")
def unflatten(x, dim, sizes):
    d = wrap_dim(dim, x.ndim)
    if x.ndim == 0:  # (PyTorch: a dim out of range is an IndexError, then a 0-d tensor this)
        raise RuntimeError("unflatten: Dimension specified as 0 but tensor has no dimensions")
    sizes = _infer_minus_one(sizes, x.shape[d])
    return reshape(x, list(x.shape[:d]) + list(sizes) + list(x.shape[d + 1:]))


@named_backward("UnsqueezeBackward0")
def unsqueeze(x, dim):
    d = wrap_dim(dim, x.ndim + 1)
    shape = list(x.shape)
    shape.insert(d, 1)
    return reshape(x, shape)


@named_backward(_squeeze_name)
def squeeze(x, dim=None):
    if dim is None:
        dims = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        dims = [d for d in normalize_dims(dim, x.ndim) if x.shape[d] == 1]  # (() on 0-d, once validated)
    return reshape(x, [s for i, s in enumerate(x.shape) if i not in dims])


@named_backward("PermuteBackward0")
def permute(x, *dims):
    ndim = x.ndim
    dims = tuple([wrap_dim(d, ndim) for d in _size_args(dims)])
    if len(dims) != ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {ndim} is not "
            f"equal to len(dims) = {len(dims)}"
        )
    if dims == tuple(range(ndim)):
        return _alias(x)
    out = M.PERMUTE(x, dims=dims)
    inv = M._inverse(dims)
    return _view_of(out, x, lambda b: permute(b, dims), lambda r: permute(r, inv))


@named_backward("TransposeBackward0")
def transpose(x, dim0, dim1):
    ndim = x.ndim
    if ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)  # (only 0 and -1 name a 0-d tensor's dim: IndexError)
        return _alias(x)
    dims = list(range(ndim))
    a, b = wrap_dim(dim0, ndim), wrap_dim(dim1, ndim)
    dims[a], dims[b] = dims[b], dims[a]
    return permute(x, dims)


swapaxes = transpose


@named_backward("TBackward0")
def t(x):
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return transpose(x, 0, 1) if x.ndim == 2 else x


@named_backward("ExpandBackward0")
def expand(x, *sizes):
    sizes = list(_size_args(sizes))
    lead = len(sizes) - x.ndim
    for i, s in enumerate(sizes):
        if s == -1:
            if i < lead:
                raise RuntimeError(
                    f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                    f"non-existing dimension {i}"
                )
            sizes[i] = x.shape[i - lead]
    sizes = tuple(sizes)
    if sizes == tuple(x.shape):
        return _alias(x)
    out = M.EXPAND(x, shape=sizes)
    return _view_of(out, x, lambda b: expand(b, sizes), None)


@named_backward("ExpandBackward0")
def expand_as(x, other):
    return expand(x, tuple(other.shape))


def broadcast_to(x, shape):
    return expand(x, tuple(shape))


@named_backward("CloneBackward0")
def contiguous(x):
    if x._is_traced or x._value.flags.c_contiguous:
        return x
    return M.COPY(x, order="C")


@named_backward("CloneBackward0")
def clone(x):
    return M.COPY(x)


def flip(x, *dims):
    """Reversed along ``dims`` (a list, or ints as separate arguments: ``x.flip(0, 1)``)."""
    dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else dims
    return M.FLIP(x, dims=normalize_dims(dims, x.ndim))


def write_out(result, out):
    """PyTorch's ``out=``: ``result`` written into the tensor ``out`` (resized to its shape
    first if needed), which is returned; None gives ``result`` back."""
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(tuple(result.shape))
    out.copy_(result)
    return out


@named_backward("SliceBackward0")
def narrow(x, dim, start, length):
    from .indexing import slice_dim

    d = wrap_dim_of_nonscalar(dim, x.ndim, "narrow() cannot be applied to a 0-dim tensor.")
    return slice_dim(x, d, start, start + length, 1)


def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for i, t_ in enumerate(tensors):
        if not isinstance(t_, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t_).__name__}")
    # legacy behaviour: 1-D empty tensors are skipped
    tensors = [t_ for t_ in tensors if not (t_.ndim == 1 and t_.shape[0] == 0)] or tensors[:1]
    dt = _dt.result_type(*tensors)
    tensors = [cast(t_, dt) for t_ in tensors]
    d = wrap_dim(dim, tensors[0].ndim)
    if len(tensors) == 1:
        return clone(tensors[0])
    return M.CAT(*tensors, dim=d)


concat = concatenate = cat


@named_backward("StackBackward0")
def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t_ in enumerate(tensors[1:], 1):
        if tuple(t_.shape) != tuple(tensors[0].shape):
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                f"entry 0 and {list(t_.shape)} at entry {i}"
            )
    d = wrap_dim(dim, tensors[0].ndim + 1)
    return cat([unsqueeze(t_, d) for t_ in tensors], d)


@named_backward(lambda x, s, *a, **k: "SplitBackward0" if isinstance(s, int) else "SplitWithSizesBackward0")
def split(tensor, split_size_or_sections, dim=0):
    from .indexing import slice_dim

    x = tensor
    d = wrap_dim_of_nonscalar(dim, x.ndim, "split expects at least a 1-dimensional tensor")
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and n:
            raise RuntimeError(f"split_size must be positive, got {step}")
        bounds = [(i, builtins.min(i + step, n)) for i in range(0, n, step)] or [(0, 0)]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                f"dimension {d}), but got split_sizes={sizes}"
            )
        starts = np.cumsum([0] + sizes[:-1])
        bounds = [(int(s), int(s) + k) for s, k in zip(starts, sizes)]
    return tuple(slice_dim(x, d, a, b, 1) for a, b in bounds)


@named_backward("SplitBackward0")
def chunk(x, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = x.shape[wrap_dim_of_nonscalar(dim, x.ndim, "chunk expects at least a 1-dimensional tensor")]
    size = -(-n // chunks) if n else 1
    return split(x, builtins.max(size, 1), dim)


def unbind(x, dim=0):
    d = wrap_dim_of_nonscalar(dim, x.ndim, "Dimension specified as 0 but tensor has no dimensions",
                              IndexError)
    return tuple(squeeze(p, d) for p in split(x, 1, d))


# ----------------------------------------------------------------------------- linear algebra
@named_backward(_matmul_name)
@_amp.lower_precision
def matmul(a, b):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("matmul(): arguments must be Tensors")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D"
        )
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {a.dtype.name} != {b.dtype.name}"
        )
    if a.ndim == 1 and b.ndim == 1:
        if a.shape[0] != b.shape[0]:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to "
                "have the same number of elements, but got "
                f"{a.shape[0]} and {b.shape[0]} elements respectively"
            )
        return reshape(L.MATMUL(unsqueeze(a, 0), unsqueeze(b, 1)), ())
    if a.ndim == 1:
        return squeeze(L.MATMUL(unsqueeze(a, 0), b), -2)
    if b.ndim == 1:
        return squeeze(L.MATMUL(a, unsqueeze(b, 1)), -1)
    return L.MATMUL(a, b)


@named_backward("MmBackward0")
@_amp.lower_precision
def mm(a, b):
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(a, b)


@_amp.lower_precision
def bmm(a, b):
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
            f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}]."
        )
    return matmul(a, b)


def mv(a, v):
    return matmul(a, v)


def dot(a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    return matmul(a, b)


def outer(a, b):
    return mul(unsqueeze(a, 1), unsqueeze(b, 0))


# ----------------------------------------------------------------------------- ordering, gather/scatter
from ..ops.index import (argsort, argwhere, gather, index_add, index_select, nonzero,  # noqa: E402
                         scatter_add, sort, topk)
from ..ops.scatter import scatter, scatter_reduce  # noqa: E402


# ----------------------------------------------------------------------------- comparisons to Python values
@_on_host
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|`` everywhere (a Python bool, like PyTorch).

    >>> import tracegrad as tg
    >>> tg.allclose(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0 + 1e-9]))
    True
    """
    a, b = (to_tensor(x) for x in (input, other))
    return bool(np.allclose(np.asarray(a.detach()), np.asarray(b.detach()), rtol=rtol, atol=atol,
                            equal_nan=equal_nan))


# (last: every function above with a dim= takes axis= too, as PyTorch's)
accept_numpy_names(globals())

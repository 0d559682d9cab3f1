"""Binds the functional API onto Tensor as methods, operators and in-place variants.
Every method is a thin call into ``tracegrad._api.functional``: one place for each rule."""
from __future__ import annotations

from ..core import device as _device
from ..core import dtypes as _dt
from . import composites as C
from ..core import creation
from . import rearrange as LY
from .. import linalg as LA
from . import arithmetic as MX
from . import selection as SE
from . import statistics as ST
from . import functional as F
from . import indexing
from ..autograd import forward_ad, grad_mode
from ..core.tensor import Tensor, VersionCounter
from ..core.views import _history_alias, assign


def _method(fn):
    def m(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    m.__name__ = fn.__name__
    m.__doc__ = fn.__doc__
    return m


_PLAIN = [
    "add", "sub", "mul", "div", "pow", "neg", "maximum", "minimum", "eq", "ne", "lt", "le", "gt",
    "ge", "logical_and", "logical_or", "logical_not", "where", "clamp", "clip", "exp", "log",
    "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "erf",
    "floor", "abs", "sign", "square", "reciprocal", "log2", "log10", "sum", "mean", "var", "std",
    "prod", "amax", "amin", "argmax", "argmin", "max", "min", "logsumexp", "reshape", "view",
    "flatten", "unflatten", "unsqueeze", "squeeze", "permute", "transpose", "swapaxes", "t",
    "expand", "expand_as", "broadcast_to", "contiguous", "clone", "flip", "narrow", "split",
    "chunk", "unbind", "matmul", "mm", "bmm", "mv", "dot", "outer", "true_divide", "divide",
    "greater", "less", "greater_equal", "less_equal", "not_equal",
]
for _name in _PLAIN:
    setattr(Tensor, _name, _method(getattr(F, _name)))
for _name in ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos",
              "arctan", "arcsinh", "arccosh", "arctanh", "exp2", "ceil", "trunc", "fix", "round",
              "atan2", "arctan2", "hypot", "fmod", "remainder", "cumsum", "cumprod", "cummax",
              "cummin", "logcumsumexp", "erfc"]:
    setattr(Tensor, _name, _method(getattr(F, _name)))
for _name in C.__all__:
    setattr(Tensor, _name, _method(getattr(C, _name)))
for _module in (MX, LY, ST, SE):
    for _name in _module.__all__ + getattr(_module, "METHODS_ONLY", []):
        if _name not in ("meshgrid", "broadcast_tensors", "broadcast_shapes"):  # (functions only, in PyTorch too)
            setattr(Tensor, _name, _method(getattr(_module, _name)))
Tensor.repeat = _method(LY.repeat)
Tensor.polygamma = lambda self, n: MX.polygamma(n, self)  # (torch's argument order)


Tensor.inverse = _method(LA.inv)
Tensor.det = _method(LA.det)
Tensor.slogdet = _method(LA.slogdet)
Tensor.matrix_power = _method(LA.matrix_power)
Tensor.cholesky = lambda self, upper=False: LA.cholesky(self, upper=upper)
Tensor.pinverse = _method(LA.pinverse)
Tensor.svd = _method(LA.legacy_svd)
Tensor.qr = lambda self, some=True: LA.qr(self, "reduced" if some else "complete")  # (PyTorch's old API)
Tensor.cholesky_solve = _method(LA.cholesky_solve)
Tensor.cholesky_inverse = _method(LA.cholesky_inverse)
Tensor.allclose = _method(F.allclose)

Tensor.multiply = Tensor.mul
Tensor.subtract = Tensor.sub
Tensor.negative = Tensor.neg
Tensor.absolute = Tensor.abs


def _where_method(self, condition, other):
    """``x.where(cond, y)`` is ``where(cond, x, y)`` (PyTorch's method order)."""
    return F.where(condition, self, other)


Tensor.where = _where_method


def _to(self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
    """PyTorch's ``Tensor.to``: ``to(dtype)``, ``to(device, dtype)``, ``to(other)`` (its dtype and
    device), with ``copy=True`` for a new tensor even when nothing changes. A device other than
    the CPU and cuda (where available: core/placement.py) raises (core/device.py)."""
    dtype, dev = _device.to_arguments(args, dtype, device)
    if dev is not None and dev != self.device:
        from ..core import placement

        moved = placement.move(self, dev)
        return moved if dtype is None else _to(moved, dtype)
    if dtype is None or _dt.to_dtype(dtype) is self.dtype:
        return F.clone(self) if copy else self
    return F.cast(self, _dt.to_dtype(dtype))


Tensor.to = _to
Tensor.type = lambda self, dtype=None: f"tracegrad.{self.dtype.torch_name}Tensor" if dtype is None else _to(self, dtype)
for _name, _d in [("float", _dt.float32), ("double", _dt.float64), ("half", _dt.float16), ("long", _dt.int64),
                  ("int", _dt.int32), ("short", _dt.int16), ("char", _dt.int8), ("byte", _dt.uint8),
                  ("bool", _dt.bool_)]:
    setattr(Tensor, _name, (lambda d: lambda self: F.cast(self, d))(_d))
Tensor.cpu = lambda self, memory_format=None: _to(self, "cpu")
Tensor.type_as = lambda self, other: F.cast(self, other.dtype)
Tensor.T = property(lambda self: F.permute(self, tuple(reversed(range(self.ndim)))))
Tensor.mT = property(lambda self: F.transpose(self, -2, -1))
Tensor.__getitem__ = indexing.getitem
Tensor.__setitem__ = indexing.setitem
Tensor.gather = lambda self, dim, index: indexing.gather(self, dim, index)
Tensor.nonzero = lambda self, as_tuple=False: indexing.nonzero(self, as_tuple)
for _name in ["scatter_add", "index_select", "index_add", "sort", "topk", "argsort", "argwhere"]:
    setattr(Tensor, _name, _method(getattr(F, _name)))
Tensor.index_add_ = lambda self, dim, index, source, *, alpha=1: _index_ops().index_add_(
    self, dim, index, source, alpha=alpha)
Tensor.scatter_add_ = lambda self, dim, index, src: _index_ops().scatter_add_(self, dim, index, src)
Tensor.scatter = _method(F.scatter)
Tensor.scatter_reduce = _method(F.scatter_reduce)
Tensor.scatter_ = lambda self, *args, **kwargs: _scatter_ops().scatter_(self, *args, **kwargs)
Tensor.scatter_reduce_ = lambda self, *args, **kwargs: _scatter_ops().scatter_reduce_(self, *args, **kwargs)


def _scatter_ops():
    from ..ops import scatter

    return scatter


def _index_ops():
    from ..ops import index

    return index


def _binop(fn, reflected=False):
    if reflected:
        return lambda self, other: fn(other, self)
    return lambda self, other: fn(self, other)


for _op, _fn in [("add", F.add), ("sub", F.sub), ("mul", F.mul), ("truediv", F.div),
                 ("pow", F.pow), ("matmul", F.matmul)]:
    setattr(Tensor, f"__{_op}__", _binop(_fn))
    setattr(Tensor, f"__r{_op}__", _binop(_fn, reflected=True))
for _op, _fn in [("eq", F.eq), ("ne", F.ne), ("lt", F.lt), ("le", F.le), ("gt", F.gt), ("ge", F.ge)]:
    setattr(Tensor, f"__{_op}__", _binop(_fn))
for _op, _fn in [("and", F.bitwise_and), ("or", F.bitwise_or), ("xor", F.bitwise_xor),
                 ("lshift", F.bitwise_left_shift), ("rshift", F.bitwise_right_shift)]:
    setattr(Tensor, f"__{_op}__", _binop(_fn))
    setattr(Tensor, f"__r{_op}__", _binop(_fn, reflected=True))
Tensor.__invert__ = lambda self: F.bitwise_not(self)
Tensor.__neg__ = F.neg
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = F.abs
Tensor.__floordiv__ = lambda self, other: F.div(self, other, rounding_mode="floor")
Tensor.__rfloordiv__ = _binop(lambda a, b: F.div(a, b, rounding_mode="floor"), reflected=True)
Tensor.__rtruediv__ = _binop(F.div, reflected=True)


# ----------------------------------------------------------------------------- in-place variants
def _inplace_source(self, *others):
    """The operand to compute from (see ``_inplace_operand``), carrying ``self``'s forward-mode
    tangent so that an in-place op on a dual tensor updates its tangent."""
    src = _inplace_operand(self, *others)
    if forward_ad._active_level is not None:
        forward_ad.copy_tangent(self, src)
    return src


def _inplace_operand(self, *others):
    """The operand to compute from: a private copy when autograd records the op, so that the
    node saves the pre-update value (PyTorch's original_self) while ``self`` changes."""
    records = grad_mode.is_grad_enabled() and (
        self.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in others))
    if not records or self._is_traced:
        return _history_alias(self) if records else self.detach()
    alias = _history_alias(self)
    alias._value = alias._value.copy()
    alias._vc = VersionCounter()
    return alias


def _inplace_view(fn):
    """``x.t_()`` and kin: ``x`` itself becomes ``fn(x)``, a view of the same memory with
    another shape, and takes its autograd history (as PyTorch's in-place view ops; the data is
    not written, so the version stays). A leaf that requires grad is refused, as in PyTorch;
    inside a compiled function they break the graph."""
    from ..core import tracing as trace
    from ..core.views import check_inplace_target

    def m(self, *args, **kwargs):
        if self._is_traced:
            trace.graph_break(f"{fn.__name__}_() (an in-place view op) inside a compiled function")
        check_inplace_target(self)
        out = fn(self, *args, **kwargs)
        self._value = out._value
        if self._base is not None:  # (a view stays one, of the same base, by the new view function)
            self._view_fn, self._view_inv = out._view_fn, out._view_inv
        if out.requires_grad:
            self._grad_fn, self._output_nr, self._requires_grad = out._grad_fn, out._output_nr, True
        return self

    m.__name__ = fn.__name__ + "_"
    return m


def _inplace(fn):
    def m(self, *args, **kwargs):
        src = _inplace_source(self, *args, *kwargs.values())
        return assign(self, fn(src, *args, **kwargs))

    m.__name__ = fn.__name__ + "_"
    return m


for _name in ["add", "sub", "mul", "div", "pow", "clamp", "clip", "exp", "log", "sqrt", "tanh",
              "sigmoid", "relu", "neg", "abs", "sin", "cos", "floor", "maximum", "minimum",
              "square", "reciprocal", "sign", "log1p", "expm1", "rsqrt", "t", "squeeze",
              "unsqueeze", "transpose"]:
    if _name in ("t", "squeeze", "unsqueeze", "transpose"):
        continue  # (the in-place view ops: _inplace_view, next)
    setattr(Tensor, _name + "_", _inplace(getattr(F, _name)))
for _name in ("t", "squeeze", "unsqueeze", "transpose", "swapaxes"):
    setattr(Tensor, _name + "_", _inplace_view(getattr(Tensor, _name)))
Tensor.swapdims_ = Tensor.transpose_
for _name in ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "ceil",
              "trunc", "round", "atan2", "hypot", "fmod", "remainder"]:
    setattr(Tensor, _name + "_", _inplace(getattr(F, _name)))
for _name in ["masked_fill", "nan_to_num", "lerp", "addcmul", "addcdiv", "tril", "triu", "frac",
              "deg2rad", "rad2deg", "logaddexp"]:
    setattr(Tensor, _name + "_", _inplace(getattr(C, _name)))
Tensor.__mod__ = _binop(F.remainder)
Tensor.__rmod__ = _binop(F.remainder, reflected=True)
for _name in ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
              "bitwise_right_shift"]:
    setattr(Tensor, _name, _method(getattr(F, _name)))
    setattr(Tensor, _name + "_", _inplace(getattr(F, _name)))
Tensor.__iand__, Tensor.__ior__, Tensor.__ixor__ = Tensor.bitwise_and_, Tensor.bitwise_or_, Tensor.bitwise_xor_
Tensor.__ilshift__, Tensor.__irshift__ = Tensor.bitwise_left_shift_, Tensor.bitwise_right_shift_
Tensor.__iadd__ = Tensor.add_
Tensor.__isub__ = Tensor.sub_
Tensor.__imul__ = Tensor.mul_
Tensor.__itruediv__ = Tensor.div_


def _zero_(self):
    src = _inplace_source(self)
    return assign(self, src * 0 if src.requires_grad else creation.zeros_like(src))


def _fill_(self, value):
    src = _inplace_source(self, value)
    if src.requires_grad or (isinstance(value, Tensor) and value.requires_grad):
        return assign(self, src * 0 + value)
    return assign(self, F.expand(F.to_tensor(value, self.dtype), tuple(self.shape)))


def _copy_(self, src_tensor, non_blocking=False):
    value = F.to_tensor(src_tensor)
    if tuple(value.shape) != tuple(self.shape):
        value = F.expand(value, tuple(self.shape))
    if value.dtype is not self.dtype:
        value = F.cast(value, self.dtype)
    src = value if value.requires_grad else value.detach()
    if forward_ad._active_level is not None:  # copying a dual copies its tangent
        forward_ad.copy_tangent(value, src)
    return assign(self, src)


Tensor.zero_ = _zero_
Tensor.fill_ = _fill_
Tensor.copy_ = _copy_


def _softmax_method(name):
    def m(self, dim, dtype=None):
        from ..nn import functional as NF  # (nn imports this module's Tensor methods)

        return getattr(NF, name)(self, dim, dtype=dtype)

    m.__name__ = name
    m.__doc__ = f"``t.{name}(dim)``: ``tg.nn.functional.{name}(t, dim)``, as ``torch.Tensor.{name}``."
    return m


Tensor.softmax = _softmax_method("softmax")
Tensor.log_softmax = _softmax_method("log_softmax")


# ----------------------------------------------------------------------------- construction helpers
def _new(make):
    def m(self, *size, dtype=None, requires_grad=False, **kwargs):
        return getattr(creation, make)(*size, dtype=dtype or self.dtype, requires_grad=requires_grad, **kwargs)

    m.__name__ = "new_" + make
    m.__doc__ = f"``tg.{make}(...)`` with this tensor's dtype unless ``dtype`` is given."
    return m


def _new_tensor(self, data, dtype=None, requires_grad=False):
    return creation.tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _random_fill(name):
    def m(self, *args, **kwargs):
        from ..nn import init  # (tracegrad.nn needs the Tensor methods this module binds)

        return getattr(init, name)(self, *args, **kwargs)

    m.__name__ = name
    m.__doc__ = f"In place, as ``tg.nn.init.{name}(self, ...)``."
    return m


def _draw_fill(sample):
    """An in-place random fill (``Tensor.exponential_`` and kin): ``sample(rng, shape)`` from
    the global generator (or ``generator``), written without autograd history."""
    def m(self, *args, generator=None, **kwargs):
        from ..nn.init import _fill, _rng

        return _fill(self, sample(_rng(generator), tuple(self.shape), *args, **kwargs))

    return m


def _random_integers(rng, shape, low=0, high=None):
    if high is None:  # random_(to): [0, to); random_(): [0, 2^mantissa] for floats, as PyTorch's
        low, high = 0, low if low else 2 ** 24
    return rng.integers(low, high, shape)


Tensor.random_ = _draw_fill(lambda rng, shape, frm=0, to=None: _random_integers(rng, shape, frm, to))
Tensor.exponential_ = _draw_fill(lambda rng, shape, lambd=1.0: rng.exponential(1.0 / lambd, shape))
Tensor.geometric_ = _draw_fill(lambda rng, shape, p: rng.geometric(p, shape))
Tensor.cauchy_ = _draw_fill(lambda rng, shape, median=0.0, sigma=1.0: median + sigma * rng.standard_cauchy(shape))
Tensor.log_normal_ = _draw_fill(lambda rng, shape, mean=1.0, std=2.0: rng.lognormal(mean, std, shape))


def _bernoulli(self, p=None, generator=None):
    return creation.bernoulli(self, p, generator=generator)


def _bernoulli_(self, p=0.5, generator=None):
    return self.copy_(creation.bernoulli(self, p, generator=generator))


def _multinomial(self, num_samples, replacement=False, *, generator=None):
    return creation.multinomial(self, num_samples, replacement, generator=generator)


def _is_contiguous(self, memory_format=None):
    return True if self._is_traced else bool(self._value.flags.c_contiguous)


Tensor.new_zeros = _new("zeros")
Tensor.new_ones = _new("ones")
Tensor.new_empty = _new("empty")
Tensor.new_full = _new("full")
Tensor.new_tensor = _new_tensor
Tensor.view_as = lambda self, other: F.view(self, tuple(other.shape))
Tensor.is_contiguous = _is_contiguous
Tensor.bernoulli = _bernoulli
Tensor.bernoulli_ = _bernoulli_
Tensor.multinomial = _multinomial
Tensor.uniform_ = _random_fill("uniform_")
Tensor.normal_ = _random_fill("normal_")


# ----------------------------------------------------------------------------- more of torch.Tensor
# in-place forms of functions bound above (a comparison's result is stored as 1/0 in the
# tensor's own dtype, as PyTorch's ``x.eq_(y)``)
for _name in ["eq", "ne", "lt", "le", "gt", "ge", "tan", "erf", "erfc", "log2", "log10", "logical_and",
              "logical_or", "logical_not", "logical_xor", "clamp_min", "clamp_max", "cumsum", "cumprod",
              "index_copy", "index_fill", "index_put", "masked_scatter", "lgamma", "digamma",
              "mvlgamma", "copysign", "ldexp", "polygamma", "erfinv", "igamma", "igammac",
              "floor_divide", "logit", "sinc", "xlogy", "heaviside", "float_power", "sgn"]:
    setattr(Tensor, _name + "_", _inplace(getattr(Tensor, _name)))
for _alias, _name in [("divide_", "div_"), ("true_divide_", "div_"), ("multiply_", "mul_"),
                      ("subtract_", "sub_"), ("negative_", "neg_"), ("absolute_", "abs_"),
                      ("arcsin_", "asin_"), ("arccos_", "acos_"), ("arctan_", "atan_"),
                      ("arcsinh_", "asinh_"), ("arccosh_", "acosh_"), ("arctanh_", "atanh_"),
                      ("arctan2_", "atan2_"), ("fix_", "trunc_"), ("swapdims", "transpose"),
                      ("ger", "outer"), ("ndimension", "dim")]:
    setattr(Tensor, _alias, getattr(Tensor, _name))
Tensor.__ifloordiv__, Tensor.__imod__, Tensor.__ipow__ = Tensor.floor_divide_, Tensor.remainder_, Tensor.pow_
Tensor.msort = lambda self: F.sort(self, dim=0).values
Tensor.is_complex = lambda self: False  # (no complex dtypes)
Tensor.is_signed = lambda self: self._dtype.category != 0
Tensor.is_same_size = lambda self, other: tuple(self.shape) == tuple(other.shape)
Tensor.get_device = lambda self: -1 if self.device.type == "cpu" else 0  # (the CPU is -1, as PyTorch says it)
Tensor.is_cpu = property(lambda self: self.device.type == "cpu")
Tensor.is_cuda = property(lambda self: self.device.type == "cuda")
Tensor.itemsize = property(lambda self: self._dtype.itemsize)
Tensor.nbytes = property(lambda self: self._dtype.itemsize * self.numel())
Tensor.reshape_as = lambda self, other: F.reshape(self, tuple(other.shape))


def _is_nonzero(self):
    if self.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with {'no values' if not self.numel() else 'more than one value'} "
                           "is ambiguous")
    return bool(self)


Tensor.is_nonzero = _is_nonzero

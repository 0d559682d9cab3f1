"""Tensor's in-place methods (``add_``, ``mul_``, ``zero_``, ``copy_``, ``t_``, the random fills
``uniform_``...) and in-place operators (``+=``...). An in-place method computes the out-of-place
result from ``core.views._inplace_source(self, ...)`` (a private copy when autograd records the op, so
that the node saves the value before the update) and writes it into ``self`` with
``core.views.assign`` (which bumps the version and moves the autograd history).

>>> import tracegrad as tg
>>> x = tg.ones(3)
>>> x.mul_(2).add_(1)
tensor([3., 3., 3.])
>>> x += 1
>>> x
tensor([4., 4., 4.])
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import arithmetic as MX
from . import composites as C
from . import functional as F
from . import numerics as NU
from . import selection as SE
from ..autograd import forward_ad
from ..core import creation
from ..core import tracing as trace
from ..core.tensor import TensorBase
from ..core.views import _inplace_source, assign, check_inplace_target
from ..ops import index as I
from ..ops import scatter as SC
from ..ops.index import check_index

if TYPE_CHECKING:
    from ..core.random import Generator
    from .tensor import Tensor


# ----------------------------------------------------------------------------- what in-place methods share
def _view_in_place(self, view, name, *args):
    """``x.t_()`` and kin: ``x`` itself becomes ``view(x, *args)``, a view of the same memory
    with another shape, and takes its autograd history (as PyTorch's in-place view ops; the
    data is not written, so the version stays). A leaf that requires grad is refused, as in
    PyTorch; inside a compiled function they break the graph."""
    if self._is_traced:
        trace.graph_break(f"{name}_() (an in-place view op) inside a compiled function")
    check_inplace_target(self)
    out = view(self, *args)
    self._value = out._value
    if self._base is not None:  # (a view stays one, of the same base, by the new view function)
        self._view_fn, self._view_inv = out._view_fn, out._view_inv
    if out.requires_grad:
        self._grad_fn, self._output_nr, self._requires_grad = out._grad_fn, out._output_nr, True
    return self


def _draw(self, generator, sample, *args):
    """An in-place random fill (``random_``, ``exponential_`` and kin): ``sample(rng, shape,
    *args)`` from the global generator (or ``generator``), written without autograd history."""
    from ..nn.init import _fill, _rng  # (lazy: tracegrad.nn stands above the Tensor it subclasses)

    return _fill(self, sample(_rng(generator), tuple(self.shape), *args))


def _random_integers(rng, shape, low=0, high=None):
    if high is None:  # random_(to): [0, to); random_(): [0, 2^mantissa] for floats, as PyTorch's
        low, high = 0, low if low else 2 ** 24
    return rng.integers(low, high, shape)


def _exponential(rng, shape, lambd):
    return rng.exponential(1.0 / lambd, shape)


def _geometric(rng, shape, p):
    return rng.geometric(p, shape)


def _cauchy(rng, shape, median, sigma):
    return median + sigma * rng.standard_cauchy(shape)


def _log_normal(rng, shape, mean, std):
    return rng.lognormal(mean, std, shape)


def _eager_only(self, what):
    trace.graph_break(f"{what} runs a Python callable on every element")
    if self.requires_grad:
        raise RuntimeError(f"{what}: a leaf Variable that requires grad is being used in an in-place operation.")


class InPlaceMethods:
    """The in-place methods of ``tracegrad.Tensor`` (it lists this mixin)."""

    def fill_diagonal_(self, fill_value, wrap: bool = False) -> Tensor:
        """Fill the main diagonal in place (all dims equal, or 2-dim; ``wrap``: a tall matrix's diagonal
        restarts every ``columns + 1`` rows, as NumPy's ``fill_diagonal``)."""
        return SE.fill_diagonal_(self, fill_value, wrap)

    def index_add_(self, dim, index, source, *, alpha: float = 1) -> Tensor:
        """In place: ``alpha * source`` added to the slices of ``self`` along ``dim`` that ``index`` names."""
        return I.index_add_(self, dim, index, source, alpha=alpha)

    def scatter_add_(self, dim, index, src) -> Tensor:
        """In place: the values of ``src`` added at ``index`` along ``dim``."""
        return I.scatter_add_(self, dim, index, src)

    def scatter_(self, dim, index, src=None, *, value=None, reduce=None) -> Tensor:
        """In place: ``src`` (or ``value``) written at ``index`` along ``dim``."""
        return SC.scatter_(self, dim, index, src, value=value, reduce=reduce)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self: bool = True) -> Tensor:
        """In place: ``src`` reduced (``sum``, ``prod``, ``mean``, ``amax``, ``amin``) into ``self`` at
        ``index`` along ``dim``."""
        return SC.scatter_reduce_(self, dim, index, src, reduce, include_self=include_self)

    def add_(self, b, alpha: float = 1) -> Tensor:
        """In place: ``self + alpha * b`` written into ``self`` (an SGD step is
        ``p.add_(p.grad, alpha=-lr)``).

        >>> import tracegrad as tg
        >>> tg.ones(2).add_(tg.tensor([1.0, 2.0]), alpha=-0.5)
        tensor([0.5000, 0.0000])
        """
        return assign(self, F.add(_inplace_source(self, b, alpha), b, alpha))

    def sub_(self, b, alpha: float = 1) -> Tensor:
        """In place: ``self.sub(...)`` written into ``self``."""
        return assign(self, F.sub(_inplace_source(self, b, alpha), b, alpha))

    def mul_(self, b) -> Tensor:
        """In place: ``self.mul(...)`` written into ``self``."""
        return assign(self, F.mul(_inplace_source(self, b), b))

    def div_(self, b, rounding_mode=None) -> Tensor:
        """In place: ``self.div(...)`` written into ``self``."""
        return assign(self, F.div(_inplace_source(self, b, rounding_mode), b, rounding_mode))

    def pow_(self, b) -> Tensor:
        """In place: ``self.pow(...)`` written into ``self``."""
        return assign(self, F.pow(_inplace_source(self, b), b))

    def clamp_(self, min=None, max=None) -> Tensor:
        """In place: ``self.clamp(...)`` written into ``self``."""
        return assign(self, F.clamp(_inplace_source(self, min, max), min, max))

    def clip_(self, min=None, max=None) -> Tensor:
        """In place: ``self.clip(...)`` written into ``self``."""
        return assign(self, F.clip(_inplace_source(self, min, max), min, max))

    def exp_(self) -> Tensor:
        """In place: ``self.exp(...)`` written into ``self``."""
        return assign(self, F.exp(_inplace_source(self)))

    def log_(self) -> Tensor:
        """In place: ``self.log(...)`` written into ``self``."""
        return assign(self, F.log(_inplace_source(self)))

    def sqrt_(self) -> Tensor:
        """In place: ``self.sqrt(...)`` written into ``self``."""
        return assign(self, F.sqrt(_inplace_source(self)))

    def tanh_(self) -> Tensor:
        """In place: ``self.tanh(...)`` written into ``self``."""
        return assign(self, F.tanh(_inplace_source(self)))

    def sigmoid_(self) -> Tensor:
        """In place: ``self.sigmoid(...)`` written into ``self``."""
        return assign(self, F.sigmoid(_inplace_source(self)))

    def relu_(self) -> Tensor:
        """In place: ``self.relu(...)`` written into ``self``."""
        return assign(self, F.relu(_inplace_source(self)))

    def neg_(self) -> Tensor:
        """In place: ``self.neg(...)`` written into ``self``."""
        return assign(self, F.neg(_inplace_source(self)))

    def abs_(self) -> Tensor:
        """In place: ``self.abs(...)`` written into ``self``."""
        return assign(self, F.abs(_inplace_source(self)))

    def sin_(self) -> Tensor:
        """In place: ``self.sin(...)`` written into ``self``."""
        return assign(self, F.sin(_inplace_source(self)))

    def cos_(self) -> Tensor:
        """In place: ``self.cos(...)`` written into ``self``."""
        return assign(self, F.cos(_inplace_source(self)))

    def floor_(self) -> Tensor:
        """In place: ``self.floor(...)`` written into ``self``."""
        return assign(self, F.floor(_inplace_source(self)))

    def maximum_(self, b) -> Tensor:
        """In place: ``self.maximum(...)`` written into ``self``."""
        return assign(self, F.maximum(_inplace_source(self, b), b))

    def minimum_(self, b) -> Tensor:
        """In place: ``self.minimum(...)`` written into ``self``."""
        return assign(self, F.minimum(_inplace_source(self, b), b))

    def square_(self) -> Tensor:
        """In place: ``self.square(...)`` written into ``self``."""
        return assign(self, F.square(_inplace_source(self)))

    def reciprocal_(self) -> Tensor:
        """In place: ``self.reciprocal(...)`` written into ``self``."""
        return assign(self, F.reciprocal(_inplace_source(self)))

    def sign_(self) -> Tensor:
        """In place: ``self.sign(...)`` written into ``self``."""
        return assign(self, F.sign(_inplace_source(self)))

    def log1p_(self) -> Tensor:
        """In place: ``self.log1p(...)`` written into ``self``."""
        return assign(self, F.log1p(_inplace_source(self)))

    def expm1_(self) -> Tensor:
        """In place: ``self.expm1(...)`` written into ``self``."""
        return assign(self, F.expm1(_inplace_source(self)))

    def rsqrt_(self) -> Tensor:
        """In place: ``self.rsqrt(...)`` written into ``self``."""
        return assign(self, F.rsqrt(_inplace_source(self)))

    def t_(self) -> Tensor:
        """In place: ``self`` becomes ``self.t()``, a view of the same memory (``_view_in_place``)."""
        return _view_in_place(self, F.t, "t")

    def squeeze_(self, dim=None) -> Tensor:
        """In place: ``self`` becomes ``self.squeeze(dim)``, a view of the same memory."""
        return _view_in_place(self, F.squeeze, "squeeze", dim)

    def unsqueeze_(self, dim) -> Tensor:
        """In place: ``self`` becomes ``self.unsqueeze(dim)``, a view of the same memory."""
        return _view_in_place(self, F.unsqueeze, "unsqueeze", dim)

    def transpose_(self, dim0: int, dim1: int) -> Tensor:
        """In place: ``self`` becomes ``self.transpose(dim0, dim1)``, a view of the same memory.

        >>> import tracegrad as tg
        >>> x = tg.zeros(2, 3)
        >>> x.transpose_(0, 1).shape
        tracegrad.Size([3, 2])
        """
        return _view_in_place(self, F.transpose, "transpose", dim0, dim1)

    def swapaxes_(self, dim0: int, dim1: int) -> Tensor:
        """In place: ``self`` becomes ``self.swapaxes(dim0, dim1)`` (``transpose_``)."""
        return _view_in_place(self, F.transpose, "swapaxes", dim0, dim1)

    swapdims_ = transpose_

    def asin_(self) -> Tensor:
        """In place: ``self.asin(...)`` written into ``self``."""
        return assign(self, F.asin(_inplace_source(self)))

    def acos_(self) -> Tensor:
        """In place: ``self.acos(...)`` written into ``self``."""
        return assign(self, F.acos(_inplace_source(self)))

    def atan_(self) -> Tensor:
        """In place: ``self.atan(...)`` written into ``self``."""
        return assign(self, F.atan(_inplace_source(self)))

    def sinh_(self) -> Tensor:
        """In place: ``self.sinh(...)`` written into ``self``."""
        return assign(self, F.sinh(_inplace_source(self)))

    def cosh_(self) -> Tensor:
        """In place: ``self.cosh(...)`` written into ``self``."""
        return assign(self, F.cosh(_inplace_source(self)))

    def asinh_(self) -> Tensor:
        """In place: ``self.asinh(...)`` written into ``self``."""
        return assign(self, F.asinh(_inplace_source(self)))

    def acosh_(self) -> Tensor:
        """In place: ``self.acosh(...)`` written into ``self``."""
        return assign(self, F.acosh(_inplace_source(self)))

    def atanh_(self) -> Tensor:
        """In place: ``self.atanh(...)`` written into ``self``."""
        return assign(self, F.atanh(_inplace_source(self)))

    def exp2_(self) -> Tensor:
        """In place: ``self.exp2(...)`` written into ``self``."""
        return assign(self, F.exp2(_inplace_source(self)))

    def ceil_(self) -> Tensor:
        """In place: ``self.ceil(...)`` written into ``self``."""
        return assign(self, F.ceil(_inplace_source(self)))

    def trunc_(self) -> Tensor:
        """In place: ``self.trunc(...)`` written into ``self``."""
        return assign(self, F.trunc(_inplace_source(self)))

    def round_(self, *, decimals: int = 0) -> Tensor:
        """In place: ``self.round(...)`` written into ``self``."""
        return assign(self, F.round(_inplace_source(self, decimals), decimals=decimals))

    def atan2_(self, other) -> Tensor:
        """In place: ``self.atan2(...)`` written into ``self``."""
        return assign(self, F.atan2(_inplace_source(self, other), other))

    def hypot_(self, other) -> Tensor:
        """In place: ``self.hypot(...)`` written into ``self``."""
        return assign(self, F.hypot(_inplace_source(self, other), other))

    def fmod_(self, other) -> Tensor:
        """In place: ``self.fmod(...)`` written into ``self``."""
        return assign(self, F.fmod(_inplace_source(self, other), other))

    def remainder_(self, other) -> Tensor:
        """In place: ``self.remainder(...)`` written into ``self``."""
        return assign(self, F.remainder(_inplace_source(self, other), other))

    def masked_fill_(self, mask, value) -> Tensor:
        """In place: ``self.masked_fill(...)`` written into ``self``."""
        return assign(self, C.masked_fill(_inplace_source(self, mask, value), mask, value))

    def nan_to_num_(self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
        """In place: ``self.nan_to_num(...)`` written into ``self``."""
        return assign(self, C.nan_to_num(_inplace_source(self, nan, posinf, neginf), nan, posinf, neginf))

    def lerp_(self, end, weight) -> Tensor:
        """In place: ``self.lerp(...)`` written into ``self``."""
        return assign(self, C.lerp(_inplace_source(self, end, weight), end, weight))

    def addcmul_(self, tensor1, tensor2, *, value=1) -> Tensor:
        """In place: ``self.addcmul(...)`` written into ``self``."""
        return assign(self, C.addcmul(_inplace_source(self, tensor1, tensor2, value), tensor1, tensor2, value=value))

    def addcdiv_(self, tensor1, tensor2, *, value=1) -> Tensor:
        """In place: ``self.addcdiv(...)`` written into ``self``."""
        return assign(self, C.addcdiv(_inplace_source(self, tensor1, tensor2, value), tensor1, tensor2, value=value))

    def tril_(self, diagonal: int = 0) -> Tensor:
        """In place: ``self.tril(...)`` written into ``self``."""
        return assign(self, C.tril(_inplace_source(self, diagonal), diagonal))

    def triu_(self, diagonal: int = 0) -> Tensor:
        """In place: ``self.triu(...)`` written into ``self``."""
        return assign(self, C.triu(_inplace_source(self, diagonal), diagonal))

    def frac_(self) -> Tensor:
        """In place: ``self.frac(...)`` written into ``self``."""
        return assign(self, C.frac(_inplace_source(self)))

    def deg2rad_(self) -> Tensor:
        """In place: ``self.deg2rad(...)`` written into ``self``."""
        return assign(self, C.deg2rad(_inplace_source(self)))

    def rad2deg_(self) -> Tensor:
        """In place: ``self.rad2deg(...)`` written into ``self``."""
        return assign(self, C.rad2deg(_inplace_source(self)))

    def logaddexp_(self, other) -> Tensor:
        """In place: ``self.logaddexp(...)`` written into ``self``."""
        return assign(self, C.logaddexp(_inplace_source(self, other), other))

    def bitwise_and_(self, b) -> Tensor:
        """In place: ``self.bitwise_and(...)`` written into ``self``."""
        return assign(self, F.bitwise_and(_inplace_source(self, b), b))

    def bitwise_or_(self, b) -> Tensor:
        """In place: ``self.bitwise_or(...)`` written into ``self``."""
        return assign(self, F.bitwise_or(_inplace_source(self, b), b))

    def bitwise_xor_(self, b) -> Tensor:
        """In place: ``self.bitwise_xor(...)`` written into ``self``."""
        return assign(self, F.bitwise_xor(_inplace_source(self, b), b))

    def bitwise_not_(self) -> Tensor:
        """In place: ``self.bitwise_not(...)`` written into ``self``."""
        return assign(self, F.bitwise_not(_inplace_source(self)))

    def bitwise_left_shift_(self, b) -> Tensor:
        """In place: ``self.bitwise_left_shift(...)`` written into ``self``."""
        return assign(self, F.bitwise_left_shift(_inplace_source(self, b), b))

    def bitwise_right_shift_(self, b) -> Tensor:
        """In place: ``self.bitwise_right_shift(...)`` written into ``self``."""
        return assign(self, F.bitwise_right_shift(_inplace_source(self, b), b))

    __iand__ = bitwise_and_

    __ior__ = bitwise_or_

    __ixor__ = bitwise_xor_

    __ilshift__ = bitwise_left_shift_

    __irshift__ = bitwise_right_shift_

    __iadd__ = add_

    __isub__ = sub_

    __imul__ = mul_

    __itruediv__ = div_

    def zero_(self) -> Tensor:
        """In place: every element set to zero.

        >>> import tracegrad as tg
        >>> tg.ones(3).zero_()
        tensor([0., 0., 0.])
        """
        src = _inplace_source(self)
        return assign(self, src * 0 if src.requires_grad else creation.zeros_like(src))

    def fill_(self, value) -> Tensor:
        """In place: every element set to ``value`` (a number or a 0-d tensor).

        >>> import tracegrad as tg
        >>> tg.empty(2, dtype=tg.int64).fill_(7)
        tensor([7, 7])
        """
        src = _inplace_source(self, value)
        if src.requires_grad or (isinstance(value, TensorBase) and value.requires_grad):
            return assign(self, src * 0 + value)
        return assign(self, F.expand(F.to_tensor(value, self.dtype), tuple(self.shape)))

    def copy_(self, src_tensor, non_blocking: bool = False) -> Tensor:
        """In place: the values of ``src_tensor`` (broadcast to this shape, cast to this dtype),
        with its autograd history.

        >>> import tracegrad as tg
        >>> x = tg.zeros(2, 2)
        >>> x.copy_(tg.tensor([1.0, 2.0]))
        tensor([[1., 2.],
                [1., 2.]])
        """
        value = F.to_tensor(src_tensor)
        if tuple(value.shape) != tuple(self.shape):
            value = F.expand(value, tuple(self.shape))
        if value.dtype is not self.dtype:
            value = F.cast(value, self.dtype)
        src = value if value.requires_grad else value.detach()
        if forward_ad._active_level is not None:  # copying a dual copies its tangent
            forward_ad.copy_tangent(value, src)
        return assign(self, src)

    def random_(self, frm=0, to=None, *, generator: Generator | None = None) -> Tensor:
        """In place: integers drawn uniformly from ``[frm, to)``; ``random_(to)`` draws from
        ``[0, to)`` and ``random_()`` from ``[0, 2**24]`` (PyTorch's range for floats)."""
        return _draw(self, generator, _random_integers, frm, to)

    def exponential_(self, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
        """In place: draws from the exponential distribution of rate ``lambd``."""
        return _draw(self, generator, _exponential, lambd)

    def geometric_(self, p, *, generator: Generator | None = None) -> Tensor:
        """In place: draws from the geometric distribution of success probability ``p``."""
        return _draw(self, generator, _geometric, p)

    def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator: Generator | None = None) -> Tensor:
        """In place: draws from the Cauchy distribution at ``median`` of scale ``sigma``."""
        return _draw(self, generator, _cauchy, median, sigma)

    def log_normal_(self, mean=1.0, std=2.0, *, generator: Generator | None = None) -> Tensor:
        """In place: draws whose logarithm is normal of ``mean`` and ``std``."""
        return _draw(self, generator, _log_normal, mean, std)

    def bernoulli_(self, p=0.5, generator: Generator | None = None) -> Tensor:
        """In place: 1 with probability ``p``, else 0."""
        return self.copy_(creation.bernoulli(self, p, generator=generator))

    def uniform_(self, a=0.0, b=1.0, generator: Generator | None = None) -> Tensor:
        """In place: draws from U(a, b), as ``tg.nn.init.uniform_(self, a, b)``.

        >>> import tracegrad as tg
        >>> bool(((tg.empty(100).uniform_(2.0, 3.0) - 2.5).abs() <= 0.5).all())
        True
        """
        from ..nn import init  # (lazy: tracegrad.nn stands above the Tensor it subclasses)

        return init.uniform_(self, a, b, generator)

    def normal_(self, mean=0.0, std=1.0, generator: Generator | None = None) -> Tensor:
        """In place: draws from N(mean, std**2), as ``tg.nn.init.normal_(self, mean, std)``."""
        from ..nn import init  # (lazy: tracegrad.nn stands above the Tensor it subclasses)

        return init.normal_(self, mean, std, generator)

    def eq_(self, b) -> Tensor:
        """In place: ``self.eq(...)`` written into ``self``."""
        return assign(self, F.eq(_inplace_source(self, b), b))

    def ne_(self, b) -> Tensor:
        """In place: ``self.ne(...)`` written into ``self``."""
        return assign(self, F.ne(_inplace_source(self, b), b))

    def lt_(self, b) -> Tensor:
        """In place: ``self.lt(...)`` written into ``self``."""
        return assign(self, F.lt(_inplace_source(self, b), b))

    def le_(self, b) -> Tensor:
        """In place: ``self.le(...)`` written into ``self``."""
        return assign(self, F.le(_inplace_source(self, b), b))

    def gt_(self, b) -> Tensor:
        """In place: ``self.gt(...)`` written into ``self``."""
        return assign(self, F.gt(_inplace_source(self, b), b))

    def ge_(self, b) -> Tensor:
        """In place: ``self.ge(...)`` written into ``self``."""
        return assign(self, F.ge(_inplace_source(self, b), b))

    def tan_(self) -> Tensor:
        """In place: ``self.tan(...)`` written into ``self``."""
        return assign(self, F.tan(_inplace_source(self)))

    def erf_(self) -> Tensor:
        """In place: ``self.erf(...)`` written into ``self``."""
        return assign(self, F.erf(_inplace_source(self)))

    def erfc_(self) -> Tensor:
        """In place: ``self.erfc(...)`` written into ``self``."""
        return assign(self, F.erfc(_inplace_source(self)))

    def log2_(self) -> Tensor:
        """In place: ``self.log2(...)`` written into ``self``."""
        return assign(self, F.log2(_inplace_source(self)))

    def log10_(self) -> Tensor:
        """In place: ``self.log10(...)`` written into ``self``."""
        return assign(self, F.log10(_inplace_source(self)))

    def logical_and_(self, b) -> Tensor:
        """In place: ``self.logical_and(...)`` written into ``self``."""
        return assign(self, F.logical_and(_inplace_source(self, b), b))

    def logical_or_(self, b) -> Tensor:
        """In place: ``self.logical_or(...)`` written into ``self``."""
        return assign(self, F.logical_or(_inplace_source(self, b), b))

    def logical_not_(self) -> Tensor:
        """In place: ``self.logical_not(...)`` written into ``self``."""
        return assign(self, F.logical_not(_inplace_source(self)))

    def logical_xor_(self, other) -> Tensor:
        """In place: ``self.logical_xor(...)`` written into ``self``."""
        return assign(self, MX.logical_xor(_inplace_source(self, other), other))

    def clamp_min_(self, min) -> Tensor:
        """In place: ``self.clamp_min(...)`` written into ``self``."""
        return assign(self, MX.clamp_min(_inplace_source(self, min), min))

    def clamp_max_(self, max) -> Tensor:
        """In place: ``self.clamp_max(...)`` written into ``self``."""
        return assign(self, MX.clamp_max(_inplace_source(self, max), max))

    def cumsum_(self, dim, *, dtype=None) -> Tensor:
        """In place: ``self.cumsum(...)`` written into ``self``."""
        return assign(self, F.cumsum(_inplace_source(self, dim, dtype), dim, dtype=dtype))

    def cumprod_(self, dim, *, dtype=None) -> Tensor:
        """In place: ``self.cumprod(...)`` written into ``self``."""
        return assign(self, F.cumprod(_inplace_source(self, dim, dtype), dim, dtype=dtype))

    def index_copy_(self, dim, index, source) -> Tensor:
        """In place: ``self.index_copy(...)`` written into ``self``."""
        return assign(self, SE.index_copy(_inplace_source(self, dim, index, source), dim, index, source))

    def index_fill_(self, dim, index, value) -> Tensor:
        """In place: ``self.index_fill(...)`` written into ``self``."""
        return assign(self, SE.index_fill(_inplace_source(self, dim, index, value), dim, index, value))

    def index_put_(self, indices, values, accumulate: bool = False) -> Tensor:
        """In place: ``self.index_put(...)`` written into ``self``."""
        return assign(self, SE.index_put(_inplace_source(self, indices, values, accumulate), indices, values,
                      accumulate))

    def masked_scatter_(self, mask, source) -> Tensor:
        """In place: ``self.masked_scatter(...)`` written into ``self``."""
        return assign(self, SE.masked_scatter(_inplace_source(self, mask, source), mask, source))

    def lgamma_(self) -> Tensor:
        """In place: ``self.lgamma(...)`` written into ``self``."""
        return assign(self, MX.lgamma(_inplace_source(self)))

    def digamma_(self) -> Tensor:
        """In place: ``self.digamma(...)`` written into ``self``."""
        return assign(self, MX.digamma(_inplace_source(self)))

    def mvlgamma_(self, p) -> Tensor:
        """In place: ``self.mvlgamma(...)`` written into ``self``."""
        return assign(self, MX.mvlgamma(_inplace_source(self, p), p))

    def copysign_(self, other) -> Tensor:
        """In place: ``self.copysign(...)`` written into ``self``."""
        return assign(self, MX.copysign(_inplace_source(self, other), other))

    def ldexp_(self, other) -> Tensor:
        """In place: ``self.ldexp(...)`` written into ``self``."""
        return assign(self, MX.ldexp(_inplace_source(self, other), other))

    def polygamma_(self, n: int) -> Tensor:
        """In place: ``self.polygamma(n)`` written into ``self``."""
        return assign(self, MX.polygamma(n, _inplace_source(self, n)))

    def erfinv_(self) -> Tensor:
        """In place: ``self.erfinv(...)`` written into ``self``."""
        return assign(self, MX.erfinv(_inplace_source(self)))

    def igamma_(self, other) -> Tensor:
        """In place: ``self.igamma(...)`` written into ``self``."""
        return assign(self, MX.igamma(_inplace_source(self, other), other))

    def igammac_(self, other) -> Tensor:
        """In place: ``self.igammac(...)`` written into ``self``."""
        return assign(self, MX.igammac(_inplace_source(self, other), other))

    def floor_divide_(self, other) -> Tensor:
        """In place: ``self.floor_divide(...)`` written into ``self``."""
        return assign(self, MX.floor_divide(_inplace_source(self, other), other))

    def logit_(self, eps: float | None = None) -> Tensor:
        """In place: ``self.logit(...)`` written into ``self``."""
        return assign(self, MX.logit(_inplace_source(self, eps), eps))

    def sinc_(self) -> Tensor:
        """In place: ``self.sinc(...)`` written into ``self``."""
        return assign(self, MX.sinc(_inplace_source(self)))

    def xlogy_(self, other) -> Tensor:
        """In place: ``self.xlogy(...)`` written into ``self``."""
        return assign(self, MX.xlogy(_inplace_source(self, other), other))

    def heaviside_(self, values) -> Tensor:
        """In place: ``self.heaviside(...)`` written into ``self``."""
        return assign(self, MX.heaviside(_inplace_source(self, values), values))

    def float_power_(self, exponent) -> Tensor:
        """In place: ``self.float_power(...)`` written into ``self``."""
        return assign(self, MX.float_power(_inplace_source(self, exponent), exponent))

    def sgn_(self) -> Tensor:
        """In place: ``self.sgn(...)`` written into ``self``."""
        return assign(self, C.sgn(_inplace_source(self)))

    divide_ = div_

    true_divide_ = div_

    multiply_ = mul_

    subtract_ = sub_

    negative_ = neg_

    absolute_ = abs_

    arcsin_ = asin_

    arccos_ = acos_

    arctan_ = atan_

    arcsinh_ = asinh_

    arccosh_ = acosh_

    arctanh_ = atanh_

    arctan2_ = atan2_

    fix_ = trunc_

    __ifloordiv__ = floor_divide_

    __imod__ = remainder_

    __ipow__ = pow_

    def i0_(self) -> Tensor:
        """In place: ``self.i0()`` written into ``self``."""
        return assign(self, _inplace_source(self).i0())

    def renorm_(self, p, dim, maxnorm) -> Tensor:
        """In place: ``self.renorm(...)`` written into ``self``."""
        return assign(self, NU.renorm(_inplace_source(self, p, dim, maxnorm), p, dim, maxnorm))

    def gcd_(self, other) -> Tensor:
        """In place: ``self.gcd(...)`` written into ``self``."""
        return assign(self, NU.gcd(_inplace_source(self, other), other))

    def lcm_(self, other) -> Tensor:
        """In place: ``self.lcm(...)`` written into ``self``."""
        return assign(self, NU.lcm(_inplace_source(self, other), other))

    def nextafter_(self, other) -> Tensor:
        """In place: ``self.nextafter(...)`` written into ``self``."""
        return assign(self, NU.nextafter(_inplace_source(self, other), other))

    greater_ = gt_

    greater_equal_ = ge_

    less_ = lt_

    less_equal_ = le_

    not_equal_ = ne_

    def addmm_(self, mat1, mat2, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """In place: ``self.addmm(...)`` written into ``self``."""
        return assign(self, MX.addmm(_inplace_source(self, mat1, mat2, beta, alpha), mat1, mat2, beta=beta,
                      alpha=alpha))

    def addbmm_(self, batch1, batch2, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """In place: ``self.addbmm(...)`` written into ``self``."""
        return assign(self, MX.addbmm(_inplace_source(self, batch1, batch2, beta, alpha), batch1, batch2,
                      beta=beta, alpha=alpha))

    def addmv_(self, mat, vec, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """In place: ``self.addmv(...)`` written into ``self``."""
        return assign(self, MX.addmv(_inplace_source(self, mat, vec, beta, alpha), mat, vec, beta=beta, alpha=alpha))

    def addr_(self, vec1, vec2, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """In place: ``self.addr(...)`` written into ``self``."""
        return assign(self, MX.addr(_inplace_source(self, vec1, vec2, beta, alpha), vec1, vec2, beta=beta,
                      alpha=alpha))

    def baddbmm_(self, batch1, batch2, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """In place: ``self.baddbmm(...)`` written into ``self``."""
        return assign(self, MX.baddbmm(_inplace_source(self, batch1, batch2, beta, alpha), batch1, batch2,
                      beta=beta, alpha=alpha))

    def put_(self, index, source, accumulate: bool = False) -> Tensor:
        """In place: ``source`` written at the flat (row-major) positions ``index``.

        >>> import tracegrad as tg
        >>> x = tg.zeros(2, 3)
        >>> x.put_(tg.tensor([0, 5]), tg.tensor([1.0, 2.0]))
        tensor([[1., 0., 0.],
                [0., 0., 2.]])
        """
        if index.numel() != source.numel():
            raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, but got "
                               f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
        n = self.numel()
        flat = F.reshape(self, (n,))
        idx = check_index(index.reshape(-1), n, 0, "take", negative=True)  # (PyTorch's message, as take)
        idx = F.where(idx < 0, idx + n, idx)
        updated = flat.index_put((idx,), source.reshape(-1).to(self.dtype), accumulate)
        return assign(self, F.reshape(updated, tuple(self.shape)))

    def index_reduce_(self, dim, index, source, reduce, *, include_self: bool = True) -> Tensor:
        """In place: ``self.index_reduce(...)`` written into ``self``."""
        src = _inplace_source(self, dim, index, source, reduce, include_self)
        return assign(self, src.index_reduce(dim, index, source, reduce, include_self=include_self))

    def apply_(self, callable) -> Tensor:
        """In place: every element ``x`` replaced by ``callable(x)`` (a Python call per element: slow)."""
        _eager_only(self, "apply_")
        values = np.vectorize(callable, otypes=[self._value.dtype])(self._value) if self.numel() else self._value
        return assign(self, TensorBase._make(np.asarray(values, dtype=self._value.dtype), self.dtype))

    def map_(self, tensor, callable) -> Tensor:
        """In place: every element ``x`` replaced by ``callable(x, y)``, ``y`` the matching element
        of ``tensor`` (broadcast to this tensor's shape)."""
        _eager_only(self, "map_")
        other = np.broadcast_to(tensor._value, self._value.shape)
        values = np.vectorize(callable, otypes=[self._value.dtype])(self._value, other) if self.numel() else self._value
        return assign(self, TensorBase._make(np.asarray(values, dtype=self._value.dtype), self.dtype))

    def resize_(self, *sizes, memory_format=None) -> Tensor:
        """In place: a new shape, the elements kept in row-major order, new ones zero (PyTorch
        leaves them uninitialized)."""
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

    def resize_as_(self, other, memory_format=None) -> Tensor:
        """In place: ``resize_(other.shape)``."""
        return self.resize_(tuple(other.shape))

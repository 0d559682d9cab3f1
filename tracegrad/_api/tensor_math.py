"""Tensor's elementwise methods: arithmetic, the functions of one value (``exp``, ``sin``,
``lgamma``...), comparisons, logical and bitwise ops, and the Python operators (``+``, ``==``,
``&``...). Each forwards to the ``tg.*`` function that holds the rule (``_api/functional.py``,
``composites.py``, ``arithmetic.py``, ``numerics.py``).

>>> import tracegrad as tg
>>> x = tg.tensor([1.0, 4.0])
>>> x.sqrt() + 1, x > 2
(tensor([2., 3.]), tensor([False,  True]))
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import arithmetic as MX
from . import composites as C
from . import functional as F
from . import numerics as NU
from ..core.tensor import TensorBase

if TYPE_CHECKING:
    from .tensor import Tensor


# (lazy, both: tracegrad.nn stands above the Tensor, which its Parameter subclasses, and
# tracegrad.special imports tracegrad.nn)
def _nn_functional():
    from ..nn import functional

    return functional


def _special():
    from .. import special

    return special


class MathMethods:
    """The elementwise methods of ``tracegrad.Tensor`` (it lists this mixin)."""

    # (a class that defines __eq__ gets __hash__ = None from Python: tensors hash by identity)
    __hash__ = TensorBase.__hash__

    def add(self, b, alpha: float = 1) -> Tensor:
        """``self + alpha * other``, elementwise with broadcasting and type promotion: ``tg.add``.

        >>> import tracegrad as tg
        >>> tg.tensor([1.0, 2.0]).add(tg.tensor([10.0, 20.0]), alpha=2)
        tensor([21., 42.])
        """
        return F.add(self, b, alpha)

    def sub(self, b, alpha: float = 1) -> Tensor:
        """``self - alpha * b``, elementwise with broadcasting: ``tg.sub``.

        >>> import tracegrad as tg
        >>> tg.tensor([5.0, 3.0]).sub(tg.tensor([1.0, 1.0]), alpha=2)
        tensor([3., 1.])
        """
        return F.sub(self, b, alpha)

    def mul(self, b) -> Tensor:
        """``self * other``, elementwise with broadcasting: ``tg.mul``.

        >>> import tracegrad as tg
        >>> tg.tensor([1.0, 2.0]).mul(3)
        tensor([3., 6.])
        """
        return F.mul(self, b)

    def div(self, b, rounding_mode=None) -> Tensor:
        """``self / b``, elementwise (``rounding_mode``: None, ``"trunc"`` or ``"floor"``): ``tg.div``.

        >>> import tracegrad as tg
        >>> tg.tensor([7.0, -7.0]).div(2), tg.tensor([7.0, -7.0]).div(2, rounding_mode="floor")
        (tensor([ 3.5000, -3.5000]), tensor([ 3., -4.]))
        """
        return F.div(self, b, rounding_mode)

    def pow(self, b) -> Tensor:
        """``self ** b``, elementwise (``b`` a number or a tensor): ``tg.pow``.

        >>> import tracegrad as tg
        >>> tg.tensor([1.0, 2.0, 3.0]).pow(2)
        tensor([1., 4., 9.])
        """
        return F.pow(self, b)

    def neg(self) -> Tensor:
        """``tg.neg(self, ...)`` as a method."""
        return F.neg(self)

    def maximum(self, b) -> Tensor:
        """``tg.maximum(self, ...)`` as a method."""
        return F.maximum(self, b)

    def minimum(self, b) -> Tensor:
        """``tg.minimum(self, ...)`` as a method."""
        return F.minimum(self, b)

    def eq(self, b) -> Tensor:
        """``tg.eq(self, ...)`` as a method."""
        return F.eq(self, b)

    def ne(self, b) -> Tensor:
        """``tg.ne(self, ...)`` as a method."""
        return F.ne(self, b)

    def lt(self, b) -> Tensor:
        """``tg.lt(self, ...)`` as a method."""
        return F.lt(self, b)

    def le(self, b) -> Tensor:
        """``tg.le(self, ...)`` as a method."""
        return F.le(self, b)

    def gt(self, b) -> Tensor:
        """``tg.gt(self, ...)`` as a method."""
        return F.gt(self, b)

    def ge(self, b) -> Tensor:
        """``tg.ge(self, ...)`` as a method."""
        return F.ge(self, b)

    def logical_and(self, b) -> Tensor:
        """``tg.logical_and(self, ...)`` as a method."""
        return F.logical_and(self, b)

    def logical_or(self, b) -> Tensor:
        """``tg.logical_or(self, ...)`` as a method."""
        return F.logical_or(self, b)

    def logical_not(self) -> Tensor:
        """``tg.logical_not(self, ...)`` as a method."""
        return F.logical_not(self)

    def where(self, condition, other) -> Tensor:
        """``x.where(cond, y)`` is ``tg.where(cond, x, y)`` (PyTorch's method order)."""
        return F.where(condition, self, other)

    def clamp(self, min=None, max=None) -> Tensor:
        """Each element limited to ``[min, max]`` (either may be None): ``tg.clamp``.

        >>> import tracegrad as tg
        >>> tg.tensor([-2.0, 0.5, 3.0]).clamp(min=0.0, max=1.0)
        tensor([0.0000, 0.5000, 1.0000])
        """
        return F.clamp(self, min, max)

    def clip(self, min=None, max=None) -> Tensor:
        """``tg.clip(self, ...)`` as a method."""
        return F.clip(self, min, max)

    def exp(self) -> Tensor:
        """Elementwise exp: ``tg.exp``.

        >>> import tracegrad as tg
        >>> tg.tensor([0.0, 1.0]).exp()
        tensor([1.0000, 2.7183])
        """
        return F.exp(self)

    def log(self) -> Tensor:
        """Elementwise log."""
        return F.log(self)

    def log1p(self) -> Tensor:
        """Elementwise log1p."""
        return F.log1p(self)

    def expm1(self) -> Tensor:
        """Elementwise expm1."""
        return F.expm1(self)

    def sqrt(self) -> Tensor:
        """Elementwise sqrt."""
        return F.sqrt(self)

    def rsqrt(self) -> Tensor:
        """Elementwise rsqrt."""
        return F.rsqrt(self)

    def sin(self) -> Tensor:
        """Elementwise sin."""
        return F.sin(self)

    def cos(self) -> Tensor:
        """Elementwise cos."""
        return F.cos(self)

    def tan(self) -> Tensor:
        """Elementwise tan."""
        return F.tan(self)

    def tanh(self) -> Tensor:
        """Elementwise tanh."""
        return F.tanh(self)

    def sigmoid(self) -> Tensor:
        """Elementwise sigmoid."""
        return F.sigmoid(self)

    def relu(self) -> Tensor:
        """Elementwise relu."""
        return F.relu(self)

    def erf(self) -> Tensor:
        """Elementwise erf."""
        return F.erf(self)

    def floor(self) -> Tensor:
        """Elementwise floor."""
        return F.floor(self)

    def abs(self) -> Tensor:
        """Elementwise abs."""
        return F.abs(self)

    def sign(self) -> Tensor:
        """Elementwise sign."""
        return F.sign(self)

    def square(self) -> Tensor:
        """``tg.square(self, ...)`` as a method."""
        return F.square(self)

    def reciprocal(self) -> Tensor:
        """``tg.reciprocal(self, ...)`` as a method."""
        return F.reciprocal(self)

    def log2(self) -> Tensor:
        """``tg.log2(self, ...)`` as a method."""
        return F.log2(self)

    def log10(self) -> Tensor:
        """``tg.log10(self, ...)`` as a method."""
        return F.log10(self)

    def true_divide(self, b, rounding_mode=None) -> Tensor:
        """``tg.true_divide(self, ...)`` as a method."""
        return F.true_divide(self, b, rounding_mode)

    def divide(self, b, rounding_mode=None) -> Tensor:
        """``tg.divide(self, ...)`` as a method."""
        return F.divide(self, b, rounding_mode)

    def greater(self, b) -> Tensor:
        """``tg.greater(self, ...)`` as a method."""
        return F.greater(self, b)

    def less(self, b) -> Tensor:
        """``tg.less(self, ...)`` as a method."""
        return F.less(self, b)

    def greater_equal(self, b) -> Tensor:
        """``tg.greater_equal(self, ...)`` as a method."""
        return F.greater_equal(self, b)

    def less_equal(self, b) -> Tensor:
        """``tg.less_equal(self, ...)`` as a method."""
        return F.less_equal(self, b)

    def not_equal(self, b) -> Tensor:
        """``tg.not_equal(self, ...)`` as a method."""
        return F.not_equal(self, b)

    def asin(self) -> Tensor:
        """Elementwise asin."""
        return F.asin(self)

    def acos(self) -> Tensor:
        """Elementwise acos."""
        return F.acos(self)

    def atan(self) -> Tensor:
        """Elementwise atan."""
        return F.atan(self)

    def sinh(self) -> Tensor:
        """Elementwise sinh."""
        return F.sinh(self)

    def cosh(self) -> Tensor:
        """Elementwise cosh."""
        return F.cosh(self)

    def asinh(self) -> Tensor:
        """Elementwise asinh."""
        return F.asinh(self)

    def acosh(self) -> Tensor:
        """Elementwise acosh."""
        return F.acosh(self)

    def atanh(self) -> Tensor:
        """Elementwise atanh."""
        return F.atanh(self)

    def arcsin(self) -> Tensor:
        """Elementwise asin."""
        return F.arcsin(self)

    def arccos(self) -> Tensor:
        """Elementwise acos."""
        return F.arccos(self)

    def arctan(self) -> Tensor:
        """Elementwise atan."""
        return F.arctan(self)

    def arcsinh(self) -> Tensor:
        """Elementwise asinh."""
        return F.arcsinh(self)

    def arccosh(self) -> Tensor:
        """Elementwise acosh."""
        return F.arccosh(self)

    def arctanh(self) -> Tensor:
        """Elementwise atanh."""
        return F.arctanh(self)

    def exp2(self) -> Tensor:
        """Elementwise exp2."""
        return F.exp2(self)

    def ceil(self) -> Tensor:
        """Elementwise ceil."""
        return F.ceil(self)

    def trunc(self) -> Tensor:
        """Elementwise trunc."""
        return F.trunc(self)

    def fix(self) -> Tensor:
        """Elementwise trunc."""
        return F.fix(self)

    def round(self, *, decimals: int = 0) -> Tensor:
        """Half to even, as ``torch.round``; ``decimals`` scales by 10**decimals around it, as PyTorch does (so
        ``round(x, decimals=2)`` is ``round(x * 100) / 100``)."""
        return F.round(self, decimals=decimals)

    def atan2(self, other) -> Tensor:
        """``tg.atan2(self, ...)`` as a method."""
        return F.atan2(self, other)

    def arctan2(self, other) -> Tensor:
        """``tg.arctan2(self, ...)`` as a method."""
        return F.arctan2(self, other)

    def hypot(self, other) -> Tensor:
        """``tg.hypot(self, ...)`` as a method."""
        return F.hypot(self, other)

    def fmod(self, other) -> Tensor:
        """The remainder of ``input / other`` with the sign of ``input`` (C's fmod)."""
        return F.fmod(self, other)

    def remainder(self, other) -> Tensor:
        """The remainder of ``input / other`` with the sign of ``other`` (Python's ``%``)."""
        return F.remainder(self, other)

    def erfc(self) -> Tensor:
        """Elementwise erfc."""
        return F.erfc(self)

    def isnan(self) -> Tensor:
        """``tg.isnan(self, ...)`` as a method."""
        return C.isnan(self)

    def isinf(self) -> Tensor:
        """``tg.isinf(self, ...)`` as a method."""
        return C.isinf(self)

    def isposinf(self) -> Tensor:
        """``tg.isposinf(self, ...)`` as a method."""
        return C.isposinf(self)

    def isneginf(self) -> Tensor:
        """``tg.isneginf(self, ...)`` as a method."""
        return C.isneginf(self)

    def isfinite(self) -> Tensor:
        """``tg.isfinite(self, ...)`` as a method."""
        return C.isfinite(self)

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
        """NaN to ``nan``, +-inf to ``posinf``/``neginf`` (default: the dtype's largest and smallest finite
        values). The gradient flows only where ``x`` is finite, as in PyTorch."""
        return C.nan_to_num(self, nan, posinf, neginf)

    def lerp(self, end, weight) -> Tensor:
        """``input + weight * (end - input)``, in PyTorch's two-sided form (exact at weight 1)."""
        return C.lerp(self, end, weight)

    def addcmul(self, tensor1, tensor2, *, value=1) -> Tensor:
        """``tg.addcmul(self, ...)`` as a method."""
        return C.addcmul(self, tensor1, tensor2, value=value)

    def addcdiv(self, tensor1, tensor2, *, value=1) -> Tensor:
        """``tg.addcdiv(self, ...)`` as a method."""
        return C.addcdiv(self, tensor1, tensor2, value=value)

    def logaddexp(self, other) -> Tensor:
        """``log(exp(input) + exp(other))`` without overflow; equal infinities give themselves."""
        return C.logaddexp(self, other)

    def frac(self) -> Tensor:
        """``tg.frac(self, ...)`` as a method."""
        return C.frac(self)

    def deg2rad(self) -> Tensor:
        """``tg.deg2rad(self, ...)`` as a method."""
        return C.deg2rad(self)

    def rad2deg(self) -> Tensor:
        """``tg.rad2deg(self, ...)`` as a method."""
        return C.rad2deg(self)

    def sgn(self) -> Tensor:
        """Elementwise sign."""
        return C.sgn(self)

    def isclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
        """``|input - other| <= atol + rtol * |other|`` elementwise (equal infinities are close; NaNs are close
        to each other only with ``equal_nan``)."""
        return MX.isclose(self, other, rtol, atol, equal_nan)

    def equal(self, other) -> bool:
        """True when both have the same shape and elements (a Python bool)."""
        return MX.equal(self, other)

    def logical_xor(self, other) -> Tensor:
        """``tg.logical_xor(self, ...)`` as a method."""
        return MX.logical_xor(self, other)

    def floor_divide(self, other) -> Tensor:
        """``input / other`` rounded down (PyTorch's floor_divide since 1.13)."""
        return MX.floor_divide(self, other)

    def fmax(self, other) -> Tensor:
        """Elementwise maximum that ignores a NaN (NaN only where both are); ties go to ``input`` (and so does
        the gradient, as PyTorch's)."""
        return MX.fmax(self, other)

    def fmin(self, other) -> Tensor:
        """Elementwise minimum that ignores a NaN (NaN only where both are)."""
        return MX.fmin(self, other)

    def xlogy(self, other) -> Tensor:
        """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
        return MX.xlogy(self, other)

    def logit(self, eps: float | None = None) -> Tensor:
        """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
        return MX.logit(self, eps)

    def sinc(self) -> Tensor:
        """``sin(pi x) / (pi x)``, 1 at 0 (with gradient 0 there, as PyTorch's)."""
        return MX.sinc(self)

    def heaviside(self, values) -> Tensor:
        """0 where ``input`` < 0, 1 where > 0, ``values`` where it is 0."""
        return MX.heaviside(self, values)

    def float_power(self, exponent) -> Tensor:
        """``input ** exponent`` computed in float64."""
        return MX.float_power(self, exponent)

    def positive(self) -> Tensor:
        """``tg.positive(self, ...)`` as a method."""
        return MX.positive(self)

    def clamp_min(self, min) -> Tensor:
        """``tg.clamp_min(self, ...)`` as a method."""
        return MX.clamp_min(self, min)

    def clamp_max(self, max) -> Tensor:
        """``tg.clamp_max(self, ...)`` as a method."""
        return MX.clamp_max(self, max)

    def lgamma(self) -> Tensor:
        """``log |Gamma(x)|``; its derivative is ``digamma`` (ops/special.py)."""
        return MX.lgamma(self)

    def digamma(self) -> Tensor:
        """``d/dx log Gamma(x)``; ``-inf`` at 0, NaN at negative integers, as PyTorch's."""
        return MX.digamma(self)

    def polygamma(self, n: int) -> Tensor:
        """The ``n``-th derivative of the digamma function, elementwise: ``tg.polygamma(n, self)``."""
        return MX.polygamma(n, self)

    def mvlgamma(self, p) -> Tensor:
        """The multivariate log-gamma of dimension ``p``: ``p (p - 1) / 4 log(pi) + sum over j < p of lgamma(x
        - j / 2)``; every element must exceed ``(p - 1) / 2``."""
        return MX.mvlgamma(self, p)

    def erfinv(self) -> Tensor:
        """The inverse of ``erf`` on [-1, 1] (+-inf at +-1, NaN outside)."""
        return MX.erfinv(self)

    def igamma(self, other) -> Tensor:
        """The regularized lower incomplete gamma function ``P(a, x)`` of ``a = input`` and ``x = other`` (the
        Gamma(a, 1) distribution function at x). Differentiable in ``x`` only: as in PyTorch, a backward
        that needs the gradient in ``a`` raises NotImplementedError."""
        return MX.igamma(self, other)

    def igammac(self, other) -> Tensor:
        """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
        return MX.igammac(self, other)

    def signbit(self) -> Tensor:
        """True where the sign bit is set (negative numbers, -0.0)."""
        return MX.signbit(self)

    def copysign(self, other) -> Tensor:
        """``|input|`` with ``other``'s sign (-0.0 counts as negative)."""
        return MX.copysign(self, other)

    def logaddexp2(self, other) -> Tensor:
        """``log2(2^input + 2^other)`` without overflow."""
        return MX.logaddexp2(self, other)

    def ldexp(self, other) -> Tensor:
        """``input * 2 ** other`` (in floating point also for integer exponents: PyTorch's gives 0 for a
        negative integer tensor exponent)."""
        return MX.ldexp(self, other)

    def allclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        """``|input - other| <= atol + rtol * |other|`` everywhere (a Python bool, like PyTorch)."""
        return F.allclose(self, other, rtol, atol, equal_nan)

    multiply = mul

    subtract = sub

    negative = neg

    absolute = abs

    def __add__(self, other) -> Tensor:
        """``self + other``: ``tg.add(self, other)``."""
        return F.add(self, other)

    def __radd__(self, other) -> Tensor:
        """``other + self``: ``tg.add(other, self)``."""
        return F.add(other, self)

    def __sub__(self, other) -> Tensor:
        """``self - other``: ``tg.sub(self, other)``."""
        return F.sub(self, other)

    def __rsub__(self, other) -> Tensor:
        """``other - self``: ``tg.sub(other, self)``."""
        return F.sub(other, self)

    def __mul__(self, other) -> Tensor:
        """``self * other``: ``tg.mul(self, other)``."""
        return F.mul(self, other)

    def __rmul__(self, other) -> Tensor:
        """``other * self``: ``tg.mul(other, self)``."""
        return F.mul(other, self)

    def __truediv__(self, other) -> Tensor:
        """``self / other``: ``tg.div(self, other)``."""
        return F.div(self, other)

    def __rtruediv__(self, other) -> Tensor:
        """``other / self``: ``tg.div(other, self)``."""
        return F.div(other, self)

    def __pow__(self, other) -> Tensor:
        """``self ** other``: ``tg.pow(self, other)``."""
        return F.pow(self, other)

    def __rpow__(self, other) -> Tensor:
        """``other ** self``: ``tg.pow(other, self)``."""
        return F.pow(other, self)

    def __eq__(self, other) -> Tensor:  # type: ignore[override]
        """``self == other``, elementwise: a bool tensor."""
        return F.eq(self, other)

    def __ne__(self, other) -> Tensor:  # type: ignore[override]
        """``self != other``, elementwise: a bool tensor."""
        return F.ne(self, other)

    def __lt__(self, other) -> Tensor:  # type: ignore[override]
        """``self < other``, elementwise: a bool tensor."""
        return F.lt(self, other)

    def __le__(self, other) -> Tensor:  # type: ignore[override]
        """``self <= other``, elementwise: a bool tensor."""
        return F.le(self, other)

    def __gt__(self, other) -> Tensor:  # type: ignore[override]
        """``self > other``, elementwise: a bool tensor."""
        return F.gt(self, other)

    def __ge__(self, other) -> Tensor:  # type: ignore[override]
        """``self >= other``, elementwise: a bool tensor."""
        return F.ge(self, other)

    def __and__(self, other) -> Tensor:
        """``self & other``: ``tg.bitwise_and(self, other)``."""
        return F.bitwise_and(self, other)

    def __rand__(self, other) -> Tensor:
        """``other & self``: ``tg.bitwise_and(other, self)``."""
        return F.bitwise_and(other, self)

    def __or__(self, other) -> Tensor:
        """``self | other``: ``tg.bitwise_or(self, other)``."""
        return F.bitwise_or(self, other)

    def __ror__(self, other) -> Tensor:
        """``other | self``: ``tg.bitwise_or(other, self)``."""
        return F.bitwise_or(other, self)

    def __xor__(self, other) -> Tensor:
        """``self ^ other``: ``tg.bitwise_xor(self, other)``."""
        return F.bitwise_xor(self, other)

    def __rxor__(self, other) -> Tensor:
        """``other ^ self``: ``tg.bitwise_xor(other, self)``."""
        return F.bitwise_xor(other, self)

    def __lshift__(self, other) -> Tensor:
        """``self << other``: ``tg.bitwise_left_shift(self, other)``."""
        return F.bitwise_left_shift(self, other)

    def __rlshift__(self, other) -> Tensor:
        """``other << self``: ``tg.bitwise_left_shift(other, self)``."""
        return F.bitwise_left_shift(other, self)

    def __rshift__(self, other) -> Tensor:
        """``self >> other``: ``tg.bitwise_right_shift(self, other)``."""
        return F.bitwise_right_shift(self, other)

    def __rrshift__(self, other) -> Tensor:
        """``other >> self``: ``tg.bitwise_right_shift(other, self)``."""
        return F.bitwise_right_shift(other, self)

    def __invert__(self) -> Tensor:
        """``~self``: ``tg.bitwise_not(self)`` (logical not for bool tensors)."""
        return F.bitwise_not(self)

    def __neg__(self) -> Tensor:
        """``-self``: ``tg.neg(self)``."""
        return F.neg(self)

    def __pos__(self) -> Tensor:
        """``+self``: this tensor itself."""
        return self

    def __abs__(self) -> Tensor:
        """``abs(self)``: ``tg.abs(self)``."""
        return F.abs(self)

    def __floordiv__(self, other) -> Tensor:
        """``self // other``: ``tg.div(self, other, rounding_mode="floor")``."""
        return F.div(self, other, rounding_mode="floor")

    def __rfloordiv__(self, other) -> Tensor:
        """``other // self``: ``tg.div(other, self, rounding_mode="floor")``."""
        return F.div(other, self, rounding_mode="floor")

    def __mod__(self, other) -> Tensor:
        """``self % other``: ``tg.remainder(self, other)`` (the sign of the divisor, as Python's)."""
        return F.remainder(self, other)

    def __rmod__(self, other) -> Tensor:
        """``other % self``: ``tg.remainder(other, self)``."""
        return F.remainder(other, self)

    def bitwise_and(self, b) -> Tensor:
        """Elementwise bitwise_and of integer or bool tensors (ops/bitwise.py)."""
        return F.bitwise_and(self, b)

    def bitwise_or(self, b) -> Tensor:
        """Elementwise bitwise_or of integer or bool tensors (ops/bitwise.py)."""
        return F.bitwise_or(self, b)

    def bitwise_xor(self, b) -> Tensor:
        """Elementwise bitwise_xor of integer or bool tensors (ops/bitwise.py)."""
        return F.bitwise_xor(self, b)

    def bitwise_not(self) -> Tensor:
        """``~x``: every bit flipped (``x ^ -1``); for bools, ``logical_not``."""
        return F.bitwise_not(self)

    def bitwise_left_shift(self, b) -> Tensor:
        """Elementwise bitwise_left_shift of integer or bool tensors (ops/bitwise.py)."""
        return F.bitwise_left_shift(self, b)

    def bitwise_right_shift(self, b) -> Tensor:
        """Elementwise bitwise_right_shift of integer or bool tensors (ops/bitwise.py)."""
        return F.bitwise_right_shift(self, b)

    def softmax(self, dim, dtype=None) -> Tensor:
        """``tg.nn.functional.softmax(self, dim)``, as ``torch.Tensor.softmax``.

        >>> import tracegrad as tg
        >>> tg.tensor([1.0, 2.0, 3.0]).softmax(dim=0)
        tensor([0.0900, 0.2447, 0.6652])
        """
        return _nn_functional().softmax(self, dim, dtype=dtype)

    def log_softmax(self, dim, dtype=None) -> Tensor:
        """``tg.nn.functional.log_softmax(self, dim)``, as ``torch.Tensor.log_softmax``."""
        return _nn_functional().log_softmax(self, dim, dtype=dtype)

    def i0(self) -> Tensor:
        """``tg.special.i0(self, ...)`` as a method."""
        return _special().i0(self)

    def renorm(self, p, dim, maxnorm) -> Tensor:
        """``tg.renorm(self, ...)`` as a method."""
        return NU.renorm(self, p, dim, maxnorm)

    def frexp(self) -> tuple[Tensor, Tensor]:
        """``tg.frexp(self, ...)`` as a method."""
        return NU.frexp(self)

    def hardshrink(self, lambd: float = 0.5) -> Tensor:
        """``tg.hardshrink(self, ...)`` as a method."""
        return NU.hardshrink(self, lambd)

    def prelu(self, weight) -> Tensor:
        """``tg.nn.functional.prelu(self, weight)``: ``max(0, x) + weight * min(0, x)``."""
        return _nn_functional().prelu(self, weight)

    def angle(self) -> Tensor:
        """``tg.angle(self, ...)`` as a method."""
        return NU.angle(self)

    def gcd(self, other) -> Tensor:
        """The greatest common divisor, elementwise (integer tensors): ``tg.gcd(self, other)``."""
        return NU.gcd(self, other)

    def lcm(self, other) -> Tensor:
        """The least common multiple, elementwise (integer tensors): ``tg.lcm(self, other)``."""
        return NU.lcm(self, other)

    def nextafter(self, other) -> Tensor:
        """The next floating-point value after ``self`` towards ``other``: ``tg.nextafter``."""
        return NU.nextafter(self, other)

"""Elementwise transforms (PyTorch's): ``ExpTransform``, ``PowerTransform``,
``SigmoidTransform``, ``SoftplusTransform``, ``TanhTransform``, ``AbsTransform``,
``AffineTransform`` and ``CumulativeDistributionTransform``. The public module is
transforms.py."""
from __future__ import annotations

import math

from ..core import creation
from .._api import functional as F
from ..core.dtypes import finfo
from ..nn import functional as NF
from ..core.tensor import Tensor
from . import constraints
from .distribution import broadcast_all
from .transform_base import Transform, broadcast_param_shapes

__all__ = ["ExpTransform", "PowerTransform", "SigmoidTransform", "SoftplusTransform", "TanhTransform",
           "AbsTransform", "AffineTransform", "CumulativeDistributionTransform"]


class _Parameterless(Transform):
    """A transform without parameters: all instances are equal."""

    def __eq__(self, other):
        return isinstance(other, type(self))

    __hash__ = Transform.__hash__


class ExpTransform(_Parameterless):
    """``y = exp(x)``."""

    domain, codomain = constraints.real, constraints.positive
    bijective, sign = True, +1

    def _call(self, x):
        return F.exp(x)

    def _inverse(self, y):
        return F.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""

    domain, codomain = constraints.positive, constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size=cache_size)

    sign = property(lambda self: F.sign(self.exponent))

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = Transform.__hash__

    def _call(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        return y ** (1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return F.log(F.abs(self.exponent * y / x))

    def forward_shape(self, shape):
        return broadcast_param_shapes(shape, self.exponent)

    inverse_shape = forward_shape


def _inside_unit_interval(y):
    """``y`` clamped to [tiny, 1 - eps] of its dtype, so that ``log(y)`` and ``log1p(-y)`` stay
    finite."""
    info = finfo(y.dtype)
    return F.clamp(y, info.tiny, 1.0 - info.eps)


def clipped_sigmoid(x):
    """``sigmoid(x)`` kept inside (0, 1) (PyTorch's: its inverse and log stay finite)."""
    return _inside_unit_interval(F.sigmoid(x))


class SigmoidTransform(_Parameterless):
    """``y = sigmoid(x)``, clipped inside (0, 1)."""

    domain, codomain = constraints.real, constraints.unit_interval
    bijective, sign = True, +1

    def _call(self, x):
        return clipped_sigmoid(x)

    def _inverse(self, y):
        y = _inside_unit_interval(y)
        return F.log(y) - F.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        return -NF.softplus(-x) - NF.softplus(x)


class SoftplusTransform(_Parameterless):
    """``y = log(1 + exp(x))``."""

    domain, codomain = constraints.real, constraints.positive
    bijective, sign = True, +1

    def _call(self, x):
        return NF.softplus(x)

    def _inverse(self, y):
        return F.log(-F.expm1(-y)) + y

    def log_abs_det_jacobian(self, x, y):
        return -NF.softplus(-x)


class TanhTransform(_Parameterless):
    """``y = tanh(x)`` (its inverse is not clamped: use ``cache_size=1`` near +-1)."""

    domain, codomain = constraints.real, constraints.interval(-1.0, 1.0)
    bijective, sign = True, +1

    def _call(self, x):
        return F.tanh(x)

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) in a form that stays finite for large |x|
        return 2.0 * (math.log(2.0) - x - NF.softplus(-2.0 * x))


class AbsTransform(_Parameterless):
    """``y = |x|`` (not bijective: its "inverse" is the identity)."""

    domain, codomain = constraints.real, constraints.positive

    def _call(self, x):
        return F.abs(x)

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``; ``event_dim`` dims form one event (its log determinant sums
    over them)."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    event_dim = property(lambda self: self._event_dim)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.real if self.event_dim == 0 else constraints.independent(constraints.real, self.event_dim)

    codomain = domain

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else \
            AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        return isinstance(other, AffineTransform) and _equal(self.loc, other.loc) and _equal(self.scale, other.scale)

    __hash__ = Transform.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, Tensor):
            return F.sign(self.scale)
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        if isinstance(self.scale, Tensor):
            result = F.log(F.abs(self.scale))
        else:
            result = creation.full_like(x, math.log(abs(self.scale)))
        if self.event_dim:
            result = F.sum(F.reshape(result, tuple(result.shape[:result.ndim - self.event_dim]) + (-1,)), -1)
            shape = shape[:len(shape) - self.event_dim]
        return F.expand(result, shape)

    def forward_shape(self, shape):
        return broadcast_param_shapes(shape, self.loc, self.scale)

    inverse_shape = forward_shape


def _equal(a, b):
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return bool((a == b).all())
    return a == b


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)`` (its inverse ``icdf``; a copula's building block)."""

    bijective, sign = True, +1
    codomain = constraints.unit_interval

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    domain = property(lambda self: self.distribution.support)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else \
            CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

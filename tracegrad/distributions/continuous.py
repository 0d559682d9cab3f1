"""Continuous distributions: ``Normal``, ``Uniform``, ``Laplace``, ``Cauchy``, ``Exponential``
(PyTorch's formulas; ``rsample`` reparametrized, so gradients flow through samples)."""
from __future__ import annotations

import math

from ..core import creation
from .._api import functional as F
from ..core.dtypes import finfo
from . import constraints
from .distribution import Distribution, broadcast_all
from .exp_family import ExponentialFamily
from .noise import noise


class _LocationScale(Distribution):
    """A family with a location and a positive scale (Normal, Laplace, Cauchy)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)


class Normal(_LocationScale, ExponentialFamily):
    """``Normal(loc, scale)``: mean ``loc``, standard deviation ``scale`` > 0.

    >>> import tracegrad as tg
    >>> tg.distributions.Normal(0.0, 2.0).log_prob(tg.tensor(1.0))
    tensor(-1.7371)
    """

    mean = mode = property(lambda self: self.loc)
    stddev = property(lambda self: self.scale)
    variance = property(lambda self: self.scale ** 2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.loc + noise("normal", shape, self.loc) * self.scale

    def log_prob(self, value):
        self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - F.log(self.scale) - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        self._validate_sample(value)
        return 0.5 * (1 + F.erf((value - self.loc) * (1 / self.scale) / math.sqrt(2)))

    def icdf(self, value):
        from .._api.arithmetic import erfinv

        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + F.log(self.scale)

    # the exponential family's terms: theta = (loc / scale^2, -1 / (2 scale^2))
    _mean_carrier_measure = 0
    _natural_params = property(lambda self: (self.loc / self.scale ** 2, -0.5 * (self.scale ** 2) ** -1))

    def _log_normalizer(self, x, y):
        return -0.25 * x ** 2 / y + 0.5 * F.log(-math.pi / y)


class Uniform(Distribution):
    """``Uniform(low, high)`` on ``[low, high)``."""

    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    mean = property(lambda self: (self.high + self.low) / 2)
    variance = property(lambda self: (self.high - self.low) ** 2 / 12)
    stddev = property(lambda self: (self.high - self.low) / 12 ** 0.5)

    @property
    def mode(self):
        return creation.full_like(self.low, float("nan"))

    def rsample(self, sample_shape=()):
        u = noise("uniform", self._extended_shape(sample_shape), self.low)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        self._validate_sample(value)
        inside = F.cast(self.low <= value, self.low.dtype) * F.cast(value < self.high, self.low.dtype)
        return F.log(inside) - F.log(self.high - self.low)

    def cdf(self, value):
        self._validate_sample(value)
        return F.clamp((value - self.low) / (self.high - self.low), 0, 1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return F.log(self.high - self.low)


class Laplace(_LocationScale):
    """``Laplace(loc, scale)``: density ``exp(-|x - loc| / scale) / (2 scale)``."""

    mean = mode = property(lambda self: self.loc)
    variance = property(lambda self: 2 * self.scale ** 2)
    stddev = property(lambda self: math.sqrt(2) * self.scale)

    def rsample(self, sample_shape=()):
        eps = finfo(self.loc.dtype).eps
        u = noise("uniform", self._extended_shape(sample_shape), self.loc) * 2 - 1
        u = F.clamp(u, -1 + eps, 1)  # (PyTorch draws from [eps - 1, 1))
        return self.loc - self.scale * F.sign(u) * F.log1p(-F.abs(u))

    def log_prob(self, value):
        self._validate_sample(value)
        return -F.log(2 * self.scale) - F.abs(value - self.loc) / self.scale

    def cdf(self, value):
        self._validate_sample(value)
        return 0.5 - 0.5 * F.sign(value - self.loc) * F.expm1(-F.abs(value - self.loc) / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * F.sign(term) * F.log1p(-2 * F.abs(term))

    def entropy(self):
        return 1 + F.log(2 * self.scale)


class Cauchy(_LocationScale):
    """``Cauchy(loc, scale)``: density ``1 / (pi scale (1 + ((x - loc) / scale)^2))``; no mean."""

    mode = property(lambda self: self.loc)
    mean = property(lambda self: creation.full(tuple(self._extended_shape()), float("nan"), dtype=self.loc.dtype))
    variance = property(lambda self: creation.full(tuple(self._extended_shape()), float("inf"), dtype=self.loc.dtype))

    def rsample(self, sample_shape=()):
        u = noise("uniform", self._extended_shape(sample_shape), self.loc)
        return self.loc + F.tan(math.pi * (u - 0.5)) * self.scale  # (the standard Cauchy's icdf)

    def log_prob(self, value):
        self._validate_sample(value)
        return -math.log(math.pi) - F.log(self.scale) - F.log1p(((value - self.loc) / self.scale) ** 2)

    def cdf(self, value):
        self._validate_sample(value)
        return F.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return F.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + F.log(self.scale)


class Exponential(ExponentialFamily):
    """``Exponential(rate)``: density ``rate * exp(-rate * x)`` for ``x >= 0``."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: 1 / self.rate)
    mode = property(lambda self: self.rate * 0)
    variance = property(lambda self: self.rate ** -2)
    stddev = property(lambda self: 1 / self.rate)

    def rsample(self, sample_shape=()):
        u = noise("uniform", self._extended_shape(sample_shape), self.rate)
        return -F.log1p(-u) / self.rate

    def log_prob(self, value):
        self._validate_sample(value)
        return F.log(self.rate) - self.rate * value

    def cdf(self, value):
        self._validate_sample(value)
        return 1 - F.exp(-self.rate * value)

    def icdf(self, value):
        return -F.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - F.log(self.rate)

    _mean_carrier_measure = 0
    _natural_params = property(lambda self: (-self.rate,))

    def _log_normalizer(self, x):
        return -F.log(-x)


__all__ = ["Normal", "Uniform", "Laplace", "Cauchy", "Exponential"]

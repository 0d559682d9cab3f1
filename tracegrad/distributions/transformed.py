"""``TransformedDistribution`` (a base distribution pushed through transforms) and the families
PyTorch defines that way: ``LogNormal``, ``HalfNormal``, ``HalfCauchy``, ``Gumbel``,
``Weibull``, ``Pareto``. Sampling is the base's pushed forward (reparametrized when the base's
is); ``log_prob`` pulls the value back, subtracting each transform's log determinant.

>>> import tracegrad as tg
>>> d = tg.distributions.LogNormal(0.0, 1.0)
>>> d.log_prob(tg.tensor(1.0))
tensor(-0.9189)
>>> d.cdf(tg.tensor(1.0))
tensor(0.5000)
"""
from __future__ import annotations

import math

from ..core import creation
from .._api import functional as F
from .._api import arithmetic as MX
from ..autograd.grad_mode import no_grad
from ..core.dtypes import finfo
from ..core.tensor import Size, Tensor
from . import constraints
from .continuous import Cauchy, Exponential, Normal, Uniform
from .distribution import Distribution, broadcast_all
from .multivariate import Independent
from .transform_base import ComposeTransform, Transform, sum_rightmost
from .transform_pointwise import AbsTransform, AffineTransform, ExpTransform, PowerTransform

__all__ = ["TransformedDistribution", "LogNormal", "HalfNormal", "HalfCauchy", "Gumbel", "Weibull", "Pareto"]

EULER = 0.57721566490153286060


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (a Transform or a list, applied in
    order). The base is expanded where the transforms broadcast it and reinterpreted as
    ``Independent`` where they couple dims into events."""

    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list) and all(isinstance(t, Transform) for t in transforms):
            self.transforms = transforms
        elif isinstance(transforms, list):
            raise ValueError("transforms must be a Transform or a list of Transforms")
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {Size(base_shape)}.")
        forward_shape = tuple(transform.forward_shape(base_shape))
        expanded = tuple(transform.inverse_shape(forward_shape))
        if base_shape != expanded:
            base_distribution = base_distribution.expand(expanded[:len(expanded) - base_event_dim])
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        # the event dims: those the transforms couple, or the base's carried through them
        event_dim = max(transform.codomain.event_dim,
                        base_event_dim + transform.codomain.event_dim - transform.domain.event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        shape = tuple(batch_shape) + tuple(self._event_shape)
        for t in reversed(self.transforms):
            shape = tuple(t.inverse_shape(shape))
        new.base_dist = self.base_dist.expand(shape[:len(shape) - len(self.base_dist.event_shape)])
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        extra = len(self._event_shape) - support.event_dim
        return constraints.independent(support, extra) if extra > 0 else support

    has_rsample = property(lambda self: self.base_dist.has_rsample)

    def _forward(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def sample(self, sample_shape=()):
        with no_grad():
            return self._forward(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape=()):
        return self._forward(self.base_dist.rsample(sample_shape))

    def log_prob(self, value):
        self._validate_sample(value)
        event_dim = len(self._event_shape)
        log_prob, y = 0.0, value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """``value`` or ``1 - value``: the cdf of a decreasing transform runs backwards."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        return self._forward(self.base_dist.icdf(self._monotonize_cdf(value)))


class LogNormal(TransformedDistribution):
    """``exp`` of a ``Normal(loc, scale)``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    loc = property(lambda self: self.base_dist.loc)
    scale = property(lambda self: self.base_dist.scale)
    mean = property(lambda self: F.exp(self.loc + self.scale ** 2 / 2))
    mode = property(lambda self: F.exp(self.loc - self.scale ** 2))

    @property
    def variance(self):
        scale_sq = self.scale ** 2
        return F.expm1(scale_sq) * F.exp(2 * self.loc + scale_sq)

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class _Folded(TransformedDistribution):
    """``|X|`` for X symmetric about 0 (HalfNormal, HalfCauchy): twice the density on [0, inf)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    scale = property(lambda self: self.base_dist.scale)
    mode = property(lambda self: creation.zeros_like(self.scale))

    def log_prob(self, value):
        self._validate_sample(value)
        return F.where(value >= 0, self.base_dist.log_prob(value) + math.log(2), float("-inf"))

    def cdf(self, value):
        self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """``|Normal(0, scale)|``."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi))
    variance = property(lambda self: self.scale ** 2 * (1 - 2 / math.pi))


class HalfCauchy(_Folded):
    """``|Cauchy(0, scale)|``."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    mean = property(lambda self: creation.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype))
    variance = property(lambda self: self.base_dist.variance)

    def log_prob(self, value):
        return super().log_prob(value if isinstance(value, Tensor) else F.to_tensor(value, self.scale.dtype))


class Gumbel(TransformedDistribution):
    """``Gumbel(loc, scale)``: ``loc - scale * log(-log U)`` for U uniform on (0, 1)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        info = finfo(self.loc.dtype)
        base = Uniform(creation.full_like(self.loc, info.tiny), creation.full_like(self.loc, 1 - info.eps),
                       validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(0, -creation.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(self.loc, -self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def log_prob(self, value):
        # (directly: the chain of transforms loses precision in the tails)
        self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - F.exp(y)) - F.log(self.scale)

    mean = property(lambda self: self.loc + self.scale * EULER)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: (math.pi / math.sqrt(6)) * self.scale)
    variance = property(lambda self: self.stddev ** 2)

    def entropy(self):
        return F.log(self.scale) + (1 + EULER)


class Weibull(TransformedDistribution):
    """``Weibull(scale, concentration)``: ``scale * E ** (1 / concentration)``, E ~ Exponential(1)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    _expand_attrs = ("concentration_reciprocal",)

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = 1 / self.concentration
        transforms = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(0, self.scale)]
        super().__init__(Exponential(creation.ones_like(self.scale), validate_args=validate_args), transforms,
                         validate_args=validate_args)

    mean = property(lambda self: self.scale * F.exp(MX.lgamma(1 + self.concentration_reciprocal)))
    mode = property(lambda self: self.scale * ((self.concentration - 1) / self.concentration)
                    ** (1 / self.concentration))

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale ** 2 * (F.exp(MX.lgamma(1 + 2 * r)) - F.exp(2 * MX.lgamma(1 + r)))

    def entropy(self):
        r = self.concentration_reciprocal
        return EULER * (1 - r) + F.log(self.scale * r) + 1


class Pareto(TransformedDistribution):
    """``Pareto(scale, alpha)``: ``scale * exp(E)``, E ~ Exponential(alpha); support [scale, inf)."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(0, self.scale)], validate_args=validate_args)

    @property
    def mean(self):
        a = F.clamp(self.alpha, min=1)  # (inf for alpha <= 1)
        return a * self.scale / (a - 1)

    mode = property(lambda self: self.scale)

    @property
    def variance(self):
        a = F.clamp(self.alpha, min=2)  # (inf for alpha <= 2)
        return self.scale ** 2 * a / ((a - 1) ** 2 * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return F.log(self.scale / self.alpha) + (1 + 1 / self.alpha)

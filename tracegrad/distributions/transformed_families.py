"""More families PyTorch builds by transforms: ``InverseGamma`` (1 / Gamma), ``Kumaraswamy``
(powers of a uniform) and ``LogisticNormal`` (a normal through stick breaking, on the
simplex).

>>> import tracegrad as tg
>>> tg.distributions.InverseGamma(tg.tensor(3.0), tg.tensor(2.0)).mean
tensor(1.)
>>> tg.distributions.Kumaraswamy(tg.tensor(2.0), tg.tensor(3.0)).log_prob(tg.tensor(0.5))
tensor(0.5232)
"""
from __future__ import annotations

from ..core import creation
from .._api import functional as F
from .._api import arithmetic as MX
from . import constraints
from .continuous import Normal, Uniform
from .distribution import broadcast_all
from .gamma_family import Gamma
from .transform_pointwise import AffineTransform, PowerTransform
from .transform_vector import StickBreakingTransform
from .transformed import EULER, TransformedDistribution

__all__ = ["InverseGamma", "Kumaraswamy", "LogisticNormal"]


class InverseGamma(TransformedDistribution):
    """``1 / X`` for ``X ~ Gamma(concentration, rate)``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-base.rate.new_ones(())), validate_args=validate_args)

    concentration = property(lambda self: self.base_dist.concentration)
    rate = property(lambda self: self.base_dist.rate)
    mode = property(lambda self: self.rate / (self.concentration + 1))

    @property
    def mean(self):
        return F.where(self.concentration > 1, self.rate / (self.concentration - 1), float("inf"))

    @property
    def variance(self):
        a = self.concentration
        return F.where(a > 2, self.rate ** 2 / ((a - 1) ** 2 * (a - 2)), float("inf"))

    def entropy(self):
        a = self.concentration
        return a + F.log(self.rate) + MX.lgamma(a) - (1 + a) * MX.digamma(a)


def _kumaraswamy_moment(a, b, n):
    """``E[X^n] = b B(1 + n / a, b)``."""
    arg1 = 1 + n / a
    return b * F.exp(MX.lgamma(arg1) + MX.lgamma(b) - MX.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """``Kumaraswamy(concentration1, concentration0)`` on (0, 1): ``(1 - U^(1/b))^(1/a)``."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(creation.zeros_like(self.concentration0), creation.ones_like(self.concentration0),
                       validate_args=validate_args)
        transforms = [PowerTransform(exponent=1 / self.concentration0), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=1 / self.concentration1)]
        super().__init__(base, transforms, validate_args=validate_args)

    mean = property(lambda self: _kumaraswamy_moment(self.concentration1, self.concentration0, 1))
    variance = property(lambda self: _kumaraswamy_moment(self.concentration1, self.concentration0, 2)
                        - self.mean ** 2)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = F.log1p(-b) / b - F.log1p(-b * a)  # (PyTorch's expression)
        return F.exp(F.where((b < 1) | (a < 1), float("nan"), log_mode))

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        h0 = MX.digamma(b + 1) + EULER
        return (1 - 1 / b) + (1 - 1 / a) * h0 - F.log(a) - F.log(b)


class LogisticNormal(TransformedDistribution):
    """``LogisticNormal(loc, scale)``: ``Normal(loc, scale)`` (its last dim the event) through
    stick breaking, on the simplex of one more dim."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    loc = property(lambda self: self.base_dist.base_dist.loc)
    scale = property(lambda self: self.base_dist.base_dist.scale)

"""``GeneralizedPareto(loc, scale, concentration)`` (PyTorch's, after TensorFlow Probability's):
the tails of other distributions. Concentration 0 is the shifted Exponential, and each formula
takes that limit on its own branch (a concentration within ``isclose`` of 0, as PyTorch's); the
other branch reads a safe concentration of 1 there so that its gradient stays finite."""
from __future__ import annotations

from ..core import creation
from .._api import functional as F
from .._api import arithmetic as MX
from . import constraints
from .distribution import Distribution, broadcast_all
from .noise import noise

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """``GeneralizedPareto(loc, scale, concentration)``: survival function
    ``(1 + concentration z)^(-1 / concentration)`` of ``z = (x - loc) / scale`` (``exp(-z)``
    at concentration 0), on ``[loc, loc - scale / concentration]`` for a negative one and
    ``[loc, inf)`` otherwise. ``rsample`` is the icdf of uniform noise.

    >>> import tracegrad as tg
    >>> d = tg.distributions.GeneralizedPareto(0.0, 2.0, 0.5)
    >>> d.log_prob(tg.tensor(1.0)), d.cdf(tg.tensor(1.0)), d.mean
    (tensor(-1.3626), tensor(0.3600), tensor(4.))
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = F.where(self.concentration < 0, self.loc - self.scale / self.concentration, float("inf"))
        return constraints.interval(self.loc, upper)

    def _safe_concentration(self):
        """(concentration is 0, concentration with 1 there): the branch and its safe input."""
        eq_zero = MX.isclose(self.concentration, creation.zeros_like(self.concentration))
        return eq_zero, F.where(eq_zero, 1.0, self.concentration)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def rsample(self, sample_shape=()):
        return self.icdf(noise("uniform", self._extended_shape(sample_shape), self.loc))

    def log_prob(self, value):
        self._validate_sample(value)
        z = self._z(value)
        eq_zero, conc = self._safe_concentration()
        y = 1 / conc + creation.ones_like(z)
        nonzero = F.where(y == 0, y, y * F.log1p(conc * z))  # (concentration -1: the uniform)
        return -F.log(self.scale) - F.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        self._validate_sample(value)
        z = self._z(value)
        eq_zero, conc = self._safe_concentration()
        return F.where(eq_zero, -z, -F.log1p(conc * z) / conc)

    def log_cdf(self, value):
        return F.log1p(-F.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return F.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, conc = self._safe_concentration()
        logu = F.log1p(-value)
        nonzero = self.loc + self.scale / conc * F.expm1(-conc * logu)
        return F.where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        conc = F.where(valid, self.concentration, 0.5)
        return F.where(valid, self.loc + self.scale / (1 - conc), float("nan"))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        conc = F.where(valid, self.concentration, 0.25)
        return F.where(valid, self.scale ** 2 / ((1 - conc) ** 2 * (1 - 2 * conc)), float("nan"))

    mode = property(lambda self: self.loc)

    def entropy(self):
        return F.broadcast_to(F.log(self.scale) + self.concentration + 1, tuple(self._batch_shape))

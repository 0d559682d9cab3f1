"""``ContinuousBernoulli`` (PyTorch's): the density on [0, 1] proportional to
``p^x (1 - p)^(1 - x)``, with its normalising constant, mean and variance given by Taylor
expansions near p = 1/2 (inside ``lims``), where the closed forms cancel. ``rsample`` inverts
the distribution function at uniform noise (the seeded op: it compiles).

>>> import tracegrad as tg
>>> d = tg.distributions.ContinuousBernoulli(tg.tensor(0.8))
>>> d.log_prob(tg.tensor(0.9))
tensor(0.4757)
>>> d.mean
tensor(0.6120)
"""
from __future__ import annotations

import math

from .._api import functional as F
from ..autograd.grad_mode import no_grad
from ..nn import functional as NF
from . import constraints
from .discrete import BinaryParametrised, _clamp_probs
from .distribution import broadcast_all
from .exp_family import ExponentialFamily
from .noise import noise

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(BinaryParametrised, ExponentialFamily):
    """``ContinuousBernoulli(probs=p)`` (or ``logits=``) on [0, 1]; ``lims`` bound the region
    around p = 1/2 where Taylor expansions replace the closed forms."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        self._probs_or_logits(probs, logits)
        if probs is not None:
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = _clamp_probs(self.probs)
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    def __getattr__(self, name):
        if name == "probs" and "logits" in self.__dict__:  # (clamped, unlike Bernoulli's)
            self.probs = _clamp_probs(F.sigmoid(self.__dict__["logits"]))
            return self.probs
        return super().__getattr__(name)

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """probs, moved out of the unstable region (where the Taylor branch is used instead)."""
        return F.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self):
        """The log normalising constant, ``log(|log(1 - p) - log p| / |1 - 2p|)``."""
        cut = self._cut_probs()
        below = F.where(cut <= 0.5, cut, 0.0)
        above = F.where(cut >= 0.5, cut, 1.0)
        log_norm = F.log(F.abs(F.log1p(-cut) - F.log(cut))) - F.where(cut <= 0.5, F.log1p(-2.0 * below),
                                                                     F.log(2.0 * above - 1.0))
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return F.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (F.log1p(-cut) - F.log(cut))
        x = self.probs - 0.5
        return F.where(self._outside_unstable_region(), mus, 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x)

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2 + 1.0 / (F.log1p(-cut) - F.log(cut)) ** 2
        x = (self.probs - 0.5) ** 2
        return F.where(self._outside_unstable_region(), variances, 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x)

    def rsample(self, sample_shape=()):
        return self.icdf(noise("uniform", self._extended_shape(sample_shape), self.probs))

    def sample(self, sample_shape=()):
        with no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value):
        self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -NF.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut ** value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = F.where(self._outside_unstable_region(), cdfs, value)
        return F.where(value <= 0.0, 0.0, F.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        inverse = (F.log1p(-cut + value * (2.0 * cut - 1.0)) - F.log1p(-cut)) / (F.log(cut) - F.log1p(-cut))
        return F.where(self._outside_unstable_region(), inverse, value)

    def entropy(self):
        log_probs0, log_probs1 = F.log1p(-self.probs), F.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    # the exponential family's terms: theta = logits, F(theta) = log((e^theta - 1) / theta),
    # its Taylor series near theta = 0 (the region of lims, shifted as PyTorch's)
    _mean_carrier_measure = 0
    _natural_params = property(lambda self: (self.logits,))

    def _log_normalizer(self, x):
        stable = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = F.where(stable, x, self._lims[0] - 0.5)
        log_norm = F.log(F.abs(F.expm1(cut))) - F.log(F.abs(cut))
        taylor = 0.5 * x + x ** 2 / 24.0 - x ** 4 / 2880.0
        return F.where(stable, log_norm, taylor)

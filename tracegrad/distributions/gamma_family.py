"""Distributions whose densities need the gamma function: ``Gamma``, ``Chi2``, ``Beta``,
``Dirichlet``, ``Poisson``, ``StudentT``, ``FisherSnedecor`` (PyTorch's formulas, on tracegrad's ``lgamma`` and
``digamma``). All but Poisson have ``rsample`` with PyTorch's implicit reparametrization
gradients (gamma_sampling.py); the draws themselves are NumPy's, eagerly.

>>> import tracegrad as tg
>>> tg.distributions.Gamma(2.0, 1.0).cdf(tg.tensor(1.0))
tensor(0.2642)
"""
from __future__ import annotations

import math

from ..core import creation
from .._api import functional as F
from .._api import arithmetic as MX
from ..autograd.grad_mode import no_grad
from ..core.dtypes import finfo
from ..nn import functional as NF
from . import constraints
from .distribution import Distribution, broadcast_all
from .exp_family import ExponentialFamily
from .gamma_sampling import dirichlet, standard_gamma
from .noise import draw, noise

__all__ = ["Gamma", "Chi2", "Beta", "Dirichlet", "Poisson", "StudentT", "FisherSnedecor"]


class Gamma(ExponentialFamily):
    """``Gamma(concentration, rate)``: density ``rate^a x^(a-1) e^(-rate x) / Gamma(a)``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: F.clamp((self.concentration - 1) / self.rate, min=0))
    variance = property(lambda self: self.concentration / self.rate ** 2)

    has_rsample = True

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        value = standard_gamma(F.expand(self.concentration, shape)) / F.expand(self.rate, shape)
        # (PyTorch clamps the value in place, under its gradient: draws that underflow to 0 for
        # small concentrations become the smallest normal number, their gradient unchanged)
        floor = finfo(value.dtype).tiny
        return value + (F.clamp(value.detach(), min=floor) - value.detach())

    def log_prob(self, value):
        self._validate_sample(value)
        a, b = self.concentration, self.rate
        return MX.xlogy(a, b) + MX.xlogy(a - 1, value) - b * value - MX.lgamma(a)

    def cdf(self, value):
        self._validate_sample(value)
        return MX.igamma(self.concentration, value * self.rate)

    def entropy(self):
        a = self.concentration
        return a - F.log(self.rate) + MX.lgamma(a) + (1.0 - a) * MX.digamma(a)

    _mean_carrier_measure = 0
    _natural_params = property(lambda self: (self.concentration - 1, -self.rate))

    def _log_normalizer(self, x, y):
        return MX.lgamma(x + 1) + (x + 1) * F.log(-(y ** -1))


class Chi2(Gamma):
    """``Chi2(df)``: ``Gamma(df / 2, 1 / 2)``."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, creation.full_like(df, 0.5), validate_args)

    df = property(lambda self: self.concentration * 2)


class Dirichlet(ExponentialFamily):
    """``Dirichlet(concentration)`` over the probability simplex of the last dim."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex

    def __init__(self, concentration, validate_args=None):
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args)

    @property
    def mean(self):
        return self.concentration / F.sum(self.concentration, -1, keepdim=True)

    @property
    def mode(self):
        # (where every concentration is below 1 the density peaks at the largest one's corner)
        c = F.clamp(self.concentration - 1, min=0)
        mode = c / F.sum(c, -1, keepdim=True)
        corner = NF.one_hot(F.argmax(self.concentration, -1), self.concentration.shape[-1]).to(c.dtype)
        return F.where(F.unsqueeze((self.concentration < 1).all(-1), -1), corner, mode)

    @property
    def variance(self):
        total = F.sum(self.concentration, -1, keepdim=True)
        return self.concentration * (total - self.concentration) / (total ** 2 * (total + 1))

    has_rsample = True

    def rsample(self, sample_shape=()):
        return dirichlet(F.expand(self.concentration, tuple(self._extended_shape(sample_shape))))

    def log_prob(self, value):
        self._validate_sample(value)
        c = self.concentration
        return (F.sum(MX.xlogy(c - 1, value), -1) + MX.lgamma(F.sum(c, -1))
                - F.sum(MX.lgamma(c), -1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        total = F.sum(c, -1)
        log_beta = F.sum(MX.lgamma(c), -1) - MX.lgamma(total)
        return log_beta + (total - k) * MX.digamma(total) - F.sum((c - 1) * MX.digamma(c), -1)

    # (no _mean_carrier_measure, as PyTorch's: the closed-form entropy above is the one used)
    _natural_params = property(lambda self: (self.concentration,))

    def _log_normalizer(self, x):
        return F.sum(MX.lgamma(x), -1) - MX.lgamma(F.sum(x, -1))


class Beta(ExponentialFamily):
    """``Beta(concentration1, concentration0)`` on ``[0, 1]``: a two-category Dirichlet."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(F.stack([self.concentration1, self.concentration0], -1), validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    mean = property(lambda self: self.concentration1 / (self.concentration1 + self.concentration0))
    mode = property(lambda self: self._dirichlet.mode[..., 0])

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total ** 2 * (total + 1))

    has_rsample = True

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value):
        self._validate_sample(value)
        return self._dirichlet.log_prob(F.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    _natural_params = property(lambda self: (self.concentration1, self.concentration0))

    def _log_normalizer(self, x, y):
        return MX.lgamma(x) + MX.lgamma(y) - MX.lgamma(x + y)


class Poisson(ExponentialFamily):
    """``Poisson(rate)``: counts with ``P(k) = rate^k e^-rate / k!``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = variance = property(lambda self: self.rate)
    mode = property(lambda self: F.floor(self.rate))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            lam = F.expand(self.rate, tuple(shape))
            return draw(self.rate, shape, lambda rng, s: rng.poisson(lam.numpy(), s))

    def log_prob(self, value):
        self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return MX.xlogy(value, rate) - rate - MX.lgamma(value + 1)

    # (no entropy nor _mean_carrier_measure, as PyTorch's: entropy raises NotImplementedError)
    _natural_params = property(lambda self: (F.log(self.rate),))

    def _log_normalizer(self, x):
        return F.exp(x)


class StudentT(Distribution):
    """``StudentT(df, loc=0, scale=1)``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.shape, validate_args=validate_args)

    mean = property(lambda self: F.where(self.df > 1, self.loc, float("nan")))
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        df = self.df
        finite = self.scale ** 2 * df / (df - 2)
        return F.where(df > 2, finite, F.where(df > 1, float("inf"), float("nan")))

    has_rsample = True

    def rsample(self, sample_shape=()):
        # X / sqrt(Z / df) with X ~ Normal(0, 1), Z ~ Chi2(df), as PyTorch
        x = noise("normal", self._extended_shape(sample_shape), self.df)
        z = Chi2(self.df).rsample(sample_shape)
        return self.loc + self.scale * x * F.rsqrt(z / self.df)

    def log_prob(self, value):
        self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (F.log(self.scale) + 0.5 * F.log(self.df) + 0.5 * math.log(math.pi)
             + MX.lgamma(0.5 * self.df) - MX.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * F.log1p(y ** 2 / self.df) - z

    def entropy(self):
        df = self.df
        log_beta = MX.lgamma(0.5 * df) + math.lgamma(0.5) - MX.lgamma(0.5 * (df + 1))
        return (F.log(self.scale) + 0.5 * (df + 1) * (MX.digamma(0.5 * (df + 1)) - MX.digamma(0.5 * df))
                + 0.5 * F.log(df) + log_beta)


class FisherSnedecor(Distribution):
    """``FisherSnedecor(df1, df2)``: the ratio of two chi-squares over their degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1, self._gamma2 = Gamma(self.df1 * 0.5, self.df1), Gamma(self.df2 * 0.5, self.df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    mean = property(lambda self: F.where(self.df2 > 2, self.df2 / (self.df2 - 2), float("nan")))

    @property
    def mode(self):
        return F.where(self.df1 > 2, (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2), float("nan"))

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        finite = 2 * df2 ** 2 * (df1 + df2 - 2) / (df1 * (df2 - 2) ** 2 * (df2 - 4))
        return F.where(df2 > 4, finite, float("nan"))

    def rsample(self, sample_shape=()):
        tiny = finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape)
        x2 = F.clamp(self._gamma2.rsample(sample_shape), min=tiny)
        return F.clamp(x1 / x2, min=tiny)

    def log_prob(self, value):
        self._validate_sample(value)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = MX.lgamma(ct1 + ct2) - MX.lgamma(ct1) - MX.lgamma(ct2)
        return t1 + ct1 * F.log(ct3) + (ct1 - 1) * F.log(value) - (ct1 + ct2) * F.log1p(ct3 * value)

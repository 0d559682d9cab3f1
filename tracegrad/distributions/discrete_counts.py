"""Count distributions: ``Binomial``, ``Geometric``, ``NegativeBinomial`` (each given by
``probs`` or ``logits``, as Bernoulli) and ``Multinomial`` (counts over K categories).
PyTorch's formulas and argument checks; samples are drawn eagerly with NumPy (a compiled
function breaks its graph there), except Geometric's, which invert uniform noise and compile.

>>> import tracegrad as tg
>>> tg.distributions.Binomial(4, probs=tg.tensor(0.5)).log_prob(tg.tensor(2.0)).exp()
tensor(0.3750)
>>> tg.distributions.Multinomial(3, probs=tg.tensor([0.2, 0.8])).log_prob(tg.tensor([1.0, 2.0])).exp()
tensor(0.3840)
"""
from __future__ import annotations

import numpy as np

from ..core import creation
from .._api import functional as F
from .._api import arithmetic as MX
from ..autograd.grad_mode import no_grad
from ..core.dtypes import finfo
from ..nn import functional as NF
from . import constraints
from .discrete import BinaryParametrised, Categorical
from .distribution import Distribution, broadcast_all
from .gamma_family import Gamma
from .noise import draw, noise

__all__ = ["Binomial", "Geometric", "NegativeBinomial", "Multinomial"]


def _clamp_by_zero(x):
    # max(x, 0) with a gradient of 1/2 at 0 (PyTorch's)
    return (F.clamp(x, min=0) + x - F.clamp(x, max=0)) / 2


def _homogeneous_count(total_count, what):
    n = int(total_count.max())
    if not int(total_count.min()) == n:
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return n


class Binomial(BinaryParametrised):
    """``Binomial(total_count, probs=p)`` (or ``logits=``): successes in ``total_count`` trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        (self.total_count,) = self._probs_or_logits(probs, logits, total_count)
        super().__init__(self._param.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    mean = property(lambda self: self.total_count * self.probs)
    mode = property(lambda self: F.clamp(F.floor((self.total_count + 1) * self.probs), max=self.total_count))
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            n, p = F.expand(self.total_count, shape), F.expand(self.probs, shape)
            return draw(p, shape, lambda rng, s: rng.binomial(n.numpy().astype(np.int64), p.numpy(), s))

    def log_prob(self, value):
        self._validate_sample(value)
        n, logits = self.total_count, self.logits
        normalize = (n * _clamp_by_zero(logits) + n * F.log1p(F.exp(-F.abs(logits))) - MX.lgamma(n + 1))
        return value * logits - MX.lgamma(value + 1) - MX.lgamma(n - value + 1) - normalize

    def entropy(self):
        log_prob = self.log_prob(self.enumerate_support(False))
        return -F.sum(F.exp(log_prob) * log_prob, 0)

    def enumerate_support(self, expand=True):
        n = _homogeneous_count(self.total_count, "enumerate_support")
        values = F.reshape(creation.arange(1 + n, dtype=self._param.dtype), (-1,) + (1,) * len(self._batch_shape))
        return F.expand(values, (-1,) + tuple(self._batch_shape)) if expand else values


class Geometric(BinaryParametrised):
    """``Geometric(probs=p)`` (or ``logits=``): failures before the first success."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._probs_or_logits(probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)
        given = self.__dict__.get("probs")
        if self._validate_args and given is not None and not given._is_traced and not bool((given > 0).all()):
            raise ValueError(f"Expected parameter probs (Tensor of shape {tuple(given.shape)}) of distribution "
                             f"{self!r} to be positive but found invalid values:\n{given[~(given > 0)]}")

    mean = property(lambda self: 1.0 / self.probs - 1.0)
    mode = property(lambda self: creation.zeros_like(self.probs))
    variance = property(lambda self: (1.0 / self.probs - 1.0) / self.probs)

    def sample(self, sample_shape=()):
        # floor(log U / log(1 - p)), U uniform on [tiny, 1): the inverse of the distribution
        # function, from the seeded noise op (so a compiled function samples without a break)
        with no_grad():
            u = F.clamp(noise("uniform", self._extended_shape(sample_shape), self.probs),
                        min=finfo(self.probs.dtype).tiny)
            return F.floor(F.log(u) / F.log1p(-self.probs))

    def log_prob(self, value):
        self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # (0 failures at p = 1: probability 1, not 0 * log(0))
        safe = F.where((probs == 1) & (value == 0), 0.0, probs)
        return value * F.log1p(-safe) + F.log(self.probs)

    def entropy(self):
        return NF.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


class NegativeBinomial(BinaryParametrised):
    """``NegativeBinomial(total_count, probs=p)`` (or ``logits=``): successes (each of
    probability p) before ``total_count`` failures."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        (self.total_count,) = self._probs_or_logits(probs, logits, total_count)
        super().__init__(self._param.shape, validate_args=validate_args)

    mean = property(lambda self: self.total_count * F.exp(self.logits))
    mode = property(lambda self: F.clamp(F.floor((self.total_count - 1) * F.exp(self.logits)), min=0.0))
    variance = property(lambda self: self.mean / F.sigmoid(-self.logits))

    def sample(self, sample_shape=()):
        # a Poisson of a Gamma(total_count, exp(-logits)) rate
        with no_grad():
            rate = Gamma(self.total_count, F.exp(-self.logits), validate_args=False).sample(sample_shape)
            return draw(rate, rate.shape, lambda rng, s: rng.poisson(rate.numpy(), s))

    def log_prob(self, value):
        self._validate_sample(value)
        n = self.total_count
        unnormalized = n * NF.logsigmoid(-self.logits) + value * NF.logsigmoid(self.logits)
        normalization = -MX.lgamma(n + value) + MX.lgamma(1.0 + value) + MX.lgamma(n)
        return unnormalized - F.where(n + value == 0.0, 0.0, normalization)


class Multinomial(Distribution):
    """``Multinomial(total_count, probs=)`` (or ``logits=``): counts of ``total_count`` draws
    over the categories of the last dim (``probs`` normalised as Categorical's)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    logits = property(lambda self: self._categorical.logits)
    probs = property(lambda self: self._categorical.probs)
    param_shape = property(lambda self: self._categorical.param_shape)
    mean = property(lambda self: self.probs * self.total_count)
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    def sample(self, sample_shape=()):
        shape = tuple(sample_shape) + tuple(self._batch_shape)
        with no_grad():
            probs = F.expand(self.probs, shape + tuple(self._event_shape))

            def counts(rng, _):
                p = probs.numpy().astype(np.float64)
                return rng.multinomial(self.total_count, p / p.sum(-1, keepdims=True), shape)

            return draw(self.probs, shape + tuple(self._event_shape), counts)

    def log_prob(self, value):
        self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = F.where((value == 0) & (logits == float("-inf")), 0.0, logits)  # (0 * log 0 = 0)
        return MX.lgamma(F.sum(value, -1) + 1) - F.sum(MX.lgamma(value + 1), -1) + F.sum(logits * value, -1)

    def entropy(self):
        n = self.total_count
        term1 = n * self._categorical.entropy() - MX.lgamma(F.to_tensor(float(n), self.probs.dtype) + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = F.exp(self._binomial.log_prob(support))
        return term1 + F.sum(binomial_probs * MX.lgamma(support + 1), (0, -1))

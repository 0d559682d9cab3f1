"""The relaxed (concrete / Gumbel-softmax) distributions: ``RelaxedBernoulli`` on (0, 1) and
``RelaxedOneHotCategorical`` on the simplex, continuous stand-ins for Bernoulli and
OneHotCategorical whose samples are reparametrized (they approach the discrete ones as the
``temperature`` goes to 0). Each is a sigmoid or exp of a base distribution in logit space,
``LogitRelaxedBernoulli`` or ``ExpRelaxedCategorical`` (PyTorch's). Their noise comes from the
seeded noise op, so ``rsample`` compiles.

>>> import tracegrad as tg
>>> d = tg.distributions.RelaxedBernoulli(tg.tensor(0.5), probs=tg.tensor(0.3))
>>> d.log_prob(tg.tensor(0.2))
tensor(-0.2528)
"""
from __future__ import annotations

from ..core import creation
from .._api import functional as F
from .._api import arithmetic as MX
from ..core.tensor import Tensor
from . import constraints
from .discrete import BinaryParametrised, Categorical, _clamp_probs
from .distribution import Distribution, broadcast_all
from .noise import noise
from .transform_pointwise import ExpTransform, SigmoidTransform
from .transformed import TransformedDistribution

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


def _as_tensor(temperature, like):
    return temperature if isinstance(temperature, Tensor) else F.to_tensor(float(temperature), like.dtype)


class LogitRelaxedBernoulli(BinaryParametrised):
    """The logit of a RelaxedBernoulli sample: ``(logit(U) + logits) / temperature``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._probs_or_logits(probs, logits)
        self.temperature = _as_tensor(temperature, self._param)
        super().__init__(self._param.shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = _clamp_probs(F.expand(self.probs, shape))
        u = _clamp_probs(noise("uniform", shape, probs))
        return (F.log(u) - F.log1p(-u) + F.log(probs) - F.log1p(-probs)) / self.temperature

    def log_prob(self, value):
        self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return F.log(self.temperature) + diff - 2 * F.log1p(F.exp(diff))


class RelaxedBernoulli(TransformedDistribution):
    """``RelaxedBernoulli(temperature, probs=)`` (or ``logits=``): the sigmoid of a
    LogitRelaxedBernoulli, on (0, 1)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(LogitRelaxedBernoulli(temperature, probs, logits), SigmoidTransform(),
                         validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical sample: a log-softmax of Gumbel-perturbed logits
    over ``temperature``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # (the true support is a submanifold of it)
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = _as_tensor(temperature, self._categorical.logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    param_shape = property(lambda self: self._categorical.param_shape)
    logits = property(lambda self: self._categorical.logits)
    probs = property(lambda self: self._categorical.probs)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        u = _clamp_probs(noise("uniform", shape, self.logits))
        scores = (self.logits - F.log(-F.log(u))) / self.temperature  # (logits + Gumbel noise)
        return scores - F.logsumexp(scores, -1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = MX.lgamma(creation.full_like(self.temperature, float(k))) + (k - 1) * F.log(self.temperature)
        score = logits - value * self.temperature
        return F.sum(score - F.logsumexp(score, -1, keepdim=True), -1) + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """``RelaxedOneHotCategorical(temperature, probs=)`` (or ``logits=``): the exp of an
    ExpRelaxedCategorical, on the simplex."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args),
                         ExpTransform(), validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)

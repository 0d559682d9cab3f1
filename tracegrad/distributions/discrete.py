"""Discrete distributions: ``Bernoulli``, ``Categorical``, ``OneHotCategorical``, each given
by ``probs`` or ``logits`` (PyTorch's normalisation and clamping)."""
from __future__ import annotations

from ..core import creation
from .._api import functional as F
from ..autograd.grad_mode import no_grad
from ..core.dtypes import finfo
from ..nn import functional as NF
from . import constraints
from .._api import arithmetic as MX
from .distribution import Distribution, broadcast_all
from .exp_family import ExponentialFamily

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough"]


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _clamp_probs(probs):
    eps = finfo(probs.dtype).eps
    return F.clamp(probs, eps, 1 - eps)


class BinaryParametrised(Distribution):
    """A distribution given by a success probability ``probs`` or its ``logits``
    (``log(p / (1 - p))``), one of the two; the other is computed on first use (PyTorch's
    lazy_property: ``probs = sigmoid(logits)``, ``logits`` from probs clamped inside (0, 1))."""

    def _probs_or_logits(self, probs, logits, *others):
        """Store the given parametrisation broadcast with ``others`` (returned, in its dtype)."""
        _one_of(probs, logits)
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        value, *others = broadcast_all(value, *others)
        setattr(self, name, value)
        return [F.cast(o, value.dtype) for o in others]

    _param = property(lambda self: self.__dict__["probs"] if "probs" in self.__dict__ else self.__dict__["logits"])
    param_shape = property(lambda self: self._param.shape)

    def __getattr__(self, name):
        given = self.__dict__
        if name == "probs" and "logits" in given:
            self.probs = F.sigmoid(given["logits"])
            return self.probs
        if name == "logits" and "probs" in given:
            p = _clamp_probs(given["probs"])
            self.logits = F.log(p) - F.log1p(-p)
            return self.logits
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class Bernoulli(BinaryParametrised, ExponentialFamily):
    """``Bernoulli(probs=p)`` or ``Bernoulli(logits=log(p / (1 - p)))``: 1 with probability p.

    >>> import tracegrad as tg
    >>> tg.distributions.Bernoulli(logits=tg.tensor(0.0)).log_prob(tg.tensor(1.0))
    tensor(-0.6931)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._probs_or_logits(probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    @property
    def mode(self):
        mode = F.cast(self.probs >= 0.5, self.probs.dtype)
        return F.where(self.probs == 0.5, float("nan"), mode)

    def sample(self, sample_shape=()):
        with no_grad():
            probs = F.expand(self.probs, tuple(self._extended_shape(sample_shape)))
            return creation.bernoulli(probs)

    def log_prob(self, value):
        self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -NF.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return NF.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    # (theta is logit(probs), unclamped as PyTorch's: +-inf at probs 0 or 1)
    _mean_carrier_measure = 0
    _natural_params = property(lambda self: (MX.logit(self.probs),))

    def _log_normalizer(self, x):
        return F.log1p(F.exp(x))

    def enumerate_support(self, expand=True):
        values = F.reshape(creation.arange(2, dtype=self._param.dtype), (2,) + (1,) * len(self.batch_shape))
        return F.expand(values, (2,) + tuple(self.batch_shape)) if expand else values


class Categorical(Distribution):
    """``Categorical(probs=p)`` (normalised along the last dim) or ``Categorical(logits=l)``
    (``p = softmax(l)``): an index in ``[0, K)``.

    >>> import tracegrad as tg
    >>> tg.distributions.Categorical(probs=tg.tensor([1.0, 3.0])).probs
    tensor([0.2500, 0.7500])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        param = probs if probs is not None else logits
        if param.ndim < 1:
            raise ValueError(f"`{'probs' if probs is not None else 'logits'}` parameter must be at least "
                             "one-dimensional.")
        if probs is not None:
            self.probs = probs / F.sum(probs, -1, keepdim=True)
        else:
            self.logits = logits - F.logsumexp(logits, -1, keepdim=True)
        self._num_events = param.shape[-1]
        Distribution.__init__(self, param.shape[:-1], validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    def __getattr__(self, name):
        if name == "probs":
            self.probs = NF.softmax(self.__dict__["logits"], -1)
            return self.probs
        if name == "logits":
            self.logits = F.log(_clamp_probs(self.__dict__["probs"]))
            return self.logits
        raise AttributeError(name)

    _param = BinaryParametrised._param
    param_shape = property(lambda self: self._param.shape)
    mean = property(lambda self: creation.full(tuple(self._extended_shape()), float("nan"), dtype=self.logits.dtype))
    variance = mean
    mode = property(lambda self: F.argmax(self.probs, -1))

    def sample(self, sample_shape=()):
        with no_grad():
            flat = F.reshape(self.probs, (-1, self._num_events))
            n = 1
            for s in sample_shape:
                n *= s
            draws = creation.multinomial(flat, n, replacement=True)  # [batch, n]
            return F.reshape(F.transpose(draws, 0, 1), tuple(sample_shape) + tuple(self.batch_shape))

    def log_prob(self, value):
        self._validate_sample(value)
        index = F.unsqueeze(F.cast(value, F._dt.int64), -1)
        index, log_pmf = _broadcast_index(index, self.logits)
        return F.squeeze(F.gather(log_pmf, -1, index[..., :1]), -1)

    def entropy(self):
        logits = F.clamp(self.logits, min=finfo(self.logits.dtype).min)
        return -F.sum(logits * self.probs, -1)

    def enumerate_support(self, expand=True):
        values = F.reshape(creation.arange(self._num_events), (-1,) + (1,) * len(self.batch_shape))
        return F.expand(values, (-1,) + tuple(self.batch_shape)) if expand else values


def _broadcast_index(index, log_pmf):
    """``index`` (..., 1) and ``log_pmf`` (..., K) broadcast over their leading dims."""
    from .._api.rearrange import broadcast_shapes

    lead = tuple(broadcast_shapes(tuple(index.shape[:-1]), tuple(log_pmf.shape[:-1])))
    return (F.expand(index, lead + (index.shape[-1],)), F.expand(log_pmf, lead + (log_pmf.shape[-1],)))


class OneHotCategorical(Distribution):
    """A ``Categorical`` whose samples are one-hot vectors of length K."""

    arg_constraints = Categorical.arg_constraints
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args)
        super().__init__(self._categorical.batch_shape, (self._categorical._num_events,), validate_args)

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    mean = property(lambda self: self._categorical.probs)
    variance = property(lambda self: self._categorical.probs * (1 - self._categorical.probs))

    @property
    def mode(self):
        return NF.one_hot(self._categorical.mode, self._categorical._num_events).to(self.probs.dtype)

    def sample(self, sample_shape=()):
        index = self._categorical.sample(sample_shape)
        return NF.one_hot(index, self._categorical._num_events).to(self.probs.dtype)

    def log_prob(self, value):
        self._validate_sample(value)
        return self._categorical.log_prob(F.argmax(value, -1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self._event_shape[0]
        values = F.reshape(creation.eye(n, dtype=self._categorical._param.dtype),
                           (n,) + (1,) * len(self._batch_shape) + (n,))
        return F.expand(values, (n,) + tuple(self._batch_shape) + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A OneHotCategorical whose ``rsample`` passes gradients straight through: the one-hot
    sample's value, ``probs``' gradient (the straight-through estimator)."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        probs = self._categorical.probs
        return self.sample(sample_shape) + (probs - probs.detach())

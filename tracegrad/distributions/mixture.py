"""``MixtureSameFamily``: a Categorical choice among the rightmost batch dim of a component
distribution (PyTorch's). ``log_prob`` is the log-sum-exp over components, so it
differentiates and compiles; ``sample`` picks components eagerly (no rsample, as in PyTorch).

>>> import tracegrad as tg
>>> D = tg.distributions
>>> mix = D.MixtureSameFamily(D.Categorical(tg.tensor([0.3, 0.7])),
...                           D.Normal(tg.tensor([-1.0, 1.0]), tg.tensor([0.5, 0.5])))
>>> mix.log_prob(tg.tensor(1.0))
tensor(-0.5823)
"""
from __future__ import annotations

from .._api import functional as F
from ..autograd.grad_mode import no_grad
from ..nn import functional as NF
from ..core.tensor import Size
from . import constraints
from .discrete import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """``mixture_distribution`` (a Categorical over K) weighs the K components that make the
    last batch dim of ``component_distribution``."""

    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of torch.distributions.Distribution")
        self._mixture_distribution, self._component_distribution = mixture_distribution, component_distribution
        mdbs, cdbs = tuple(mixture_distribution.batch_shape), tuple(component_distribution.batch_shape[:-1])
        for a, b in zip(reversed(mdbs), reversed(cdbs)):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"`mixture_distribution.batch_shape` ({Size(mdbs)}) is not compatible with "
                                 f"`component_distribution.batch_shape`({Size(cdbs)})")
        km, kc = mixture_distribution.logits.shape[-1], component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._component_distribution = self._component_distribution.expand(tuple(batch_shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        return new

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    mixture_distribution = property(lambda self: self._mixture_distribution)
    component_distribution = property(lambda self: self._component_distribution)

    def _pad(self, x):
        """``x`` with a component dim before its event dims."""
        return F.unsqueeze(x, -1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        """Mixture probabilities ``(..., K)`` shaped to broadcast against the components'."""
        pad = 0 if len(self._mixture_distribution.batch_shape) == 1 else \
            len(self._batch_shape) - len(self._mixture_distribution.batch_shape)
        shape = tuple(x.shape)
        return F.reshape(x, shape[:-1] + (1,) * pad + shape[-1:] + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        return F.sum(probs * self._component_distribution.mean, -1 - self._event_ndims)

    @property
    def variance(self):
        # the law of total variance: E[Var | k] + Var[E | k]
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        component = self._component_distribution
        mean_cond_var = F.sum(probs * component.variance, -1 - self._event_ndims)
        var_cond_mean = F.sum(probs * (component.mean - self._pad(self.mean)) ** 2, -1 - self._event_ndims)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        return F.sum(self._component_distribution.cdf(self._pad(x)) * self._mixture_distribution.probs, -1)

    def log_prob(self, x):
        self._validate_sample(x)
        log_prob_x = self._component_distribution.log_prob(self._pad(x))  # [S, B, K]
        log_mix_prob = NF.log_softmax(self._mixture_distribution.logits, -1)  # [B, K]
        return F.logsumexp(log_prob_x + log_mix_prob, -1)

    def sample(self, sample_shape=()):
        with no_grad():
            gather_dim = len(sample_shape) + len(self._batch_shape)
            es = tuple(self._event_shape)
            # (the mixture's batch may broadcast against the components': expand it first)
            index = self._mixture_distribution.sample(sample_shape)
            missing = len(self._batch_shape) - len(self._mixture_distribution.batch_shape)
            index = F.reshape(index, tuple(sample_shape) + (1,) * missing + tuple(index.shape[len(sample_shape):]))
            index = F.expand(index, tuple(sample_shape) + tuple(self._batch_shape))
            samples = self._component_distribution.sample(sample_shape)
            index = F.reshape(index, tuple(index.shape) + (1,) * (len(es) + 1))
            index = F.expand(index, tuple(index.shape[:gather_dim + 1]) + es)
            return F.squeeze(F.gather(samples, gather_dim, index), gather_dim)

    def __repr__(self):
        return f"MixtureSameFamily(\n  {self._mixture_distribution},\n  {self._component_distribution})"

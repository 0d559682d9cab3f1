"""``ExponentialFamily`` (PyTorch's): the base of the families whose density is
``exp(<t(x), theta> - F(theta) + k(x))``, with a generic ``entropy`` and the Bregman-divergence
KL between two members of one family, both computed by autograd of the log normalizer ``F``
(Nielsen and Nock, "Entropies and cross-entropies of exponential families").

A family states its natural parameters ``theta`` (``_natural_params``), ``F``
(``_log_normalizer``) and ``E[k(x)]`` (``_mean_carrier_measure``); the closed-form
``entropy`` a subclass defines still wins, as in PyTorch.

>>> import tracegrad as tg
>>> D = tg.distributions
>>> D.ExponentialFamily.entropy(D.Normal(0.0, 1.0))
tensor(1.4189, grad_fn=<SubBackward0>)
"""
from __future__ import annotations

from .._api import functional as F
from ..autograd.engine import grad
from ..autograd.grad_mode import enable_grad
from .distribution import Distribution
from .transform_base import sum_rightmost

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """An exponential family: ``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))``.
    Subclasses give ``_natural_params`` (a tuple of tensors), ``_log_normalizer(*theta)``
    and ``_mean_carrier_measure``; ``entropy`` is then ``F(theta) - <theta, grad F(theta)>
    - E[k(x)]``."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def _log_normalizer_and_gradients(self):
        """``theta`` (detached leaves), ``F(theta)`` and ``grad F(theta) = E[t(x)]``, the
        gradients kept differentiable so that entropy and KL differentiate in the parameters."""
        with enable_grad():  # (the gradient is the value here, so it is taken under no_grad too)
            thetas = [t.detach().requires_grad_() for t in self._natural_params]
            log_normalizer = self._log_normalizer(*thetas)
            gradients = grad(F.sum(log_normalizer), thetas, create_graph=True)
        return thetas, log_normalizer, gradients

    def entropy(self):
        """The entropy from the log normalizer's gradient (PyTorch's generic formula)."""
        result = -self._mean_carrier_measure
        thetas, log_normalizer, gradients = self._log_normalizer_and_gradients()
        result = result + log_normalizer
        for theta, g in zip(thetas, gradients):
            result = result - F.sum(F.reshape(theta * g, tuple(self._batch_shape) + (-1,)), -1)
        return result


def kl_expfamily_expfamily(p, q):
    """The Bregman divergence of ``F`` between the natural parameters of ``q`` and ``p``:
    ``F(theta_q) - F(theta_p) - <theta_q - theta_p, grad F(theta_p)>`` (one family only).
    Each inner product sums the dims of its own parameter past the batch dims: PyTorch sums
    ``len(event_shape)`` dims of each, which for Wishart's batched ``df`` (no event dims of
    its own) adds up the whole batch; the two agree everywhere else."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot \
                            be computed using Bregman divergences")
    p_thetas, p_log_normalizer, gradients = p._log_normalizer_and_gradients()
    result = q._log_normalizer(*q._natural_params) - p_log_normalizer
    for pt, qt, g in zip(p_thetas, q._natural_params, gradients):
        result = result - sum_rightmost((qt - pt) * g, pt.ndim - len(p.batch_shape))
    return result

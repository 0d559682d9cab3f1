"""``kl_divergence(p, q)`` and ``register_kl``: the closed forms, looked up by the two types
(the most specific registered pair, as PyTorch's; a RuntimeWarning where two pairs are
equally specific, e.g. ``(Base, Derived)`` and ``(Derived, Base)``)."""
from __future__ import annotations

import warnings
from functools import total_ordering

from .._api import functional as F
from .. import linalg as LA
from .._api import arithmetic as MX
from ..nn import functional as NF
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .exp_family import ExponentialFamily, kl_expfamily_expfamily
from .gamma_family import Beta, Dirichlet, Gamma, Poisson
from .multivariate import Independent, MultivariateNormal, _mahalanobis

__all__ = ["kl_divergence", "register_kl"]

_KL = {}
_KL_MEMO = {}  # (type(p), type(q)) -> the function dispatched to (cleared by each registration)


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as the KL divergence of ``type_p`` from ``type_q``
    (a tie between two equally specific registrations is broken by registering the pair of
    the more derived types)."""
    def decorate(fn):
        _KL[type_p, type_q] = fn
        _KL_MEMO.clear()  # (the most specific match may have changed)
        return fn

    return decorate


@total_ordering
class _Match:
    """A registered pair, ordered lexicographically by subclassing (PyTorch's order: a pair is
    below another when its first type is a proper subclass, or equal and the second is one)."""

    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    """The most specific registered function for the pair, or None; the left-first and the
    right-first orders must agree, else PyTorch's RuntimeWarning (and the left-first one)."""
    matches = [(tp, tq) for tp, tq in _KL if issubclass(type_p, tp) and issubclass(type_q, tq)]
    if not matches:
        return None
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun, right_fun = _KL[left_p, left_q], _KL[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=3)
    return left_fun


def kl_divergence(p, q):
    """``KL(p || q)``, batched; NotImplementedError for a pair with no closed form registered."""
    key = type(p), type(q)
    if key not in _KL_MEMO:
        _KL_MEMO[key] = _dispatch_kl(*key)
    fn = _KL_MEMO[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and "
                                  f"q type {type(q).__name__}")
    return fn(p, q)


def _inf_where(mask, t):
    return F.where(mask, float("inf"), t)


register_kl(ExponentialFamily, ExponentialFamily)(kl_expfamily_expfamily)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - F.log(var_ratio))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (NF.softplus(-q.logits) - NF.softplus(-p.logits))
    t1 = F.where(p.probs == 0, 0.0, _inf_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (NF.softplus(q.logits) - NF.softplus(p.logits))
    t2 = F.where(p.probs == 1, 0.0, _inf_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = F.where(F.expand(p.probs == 0, tuple(t.shape)), 0.0, _inf_where(F.expand(q.probs == 0, tuple(t.shape)), t))
    return F.sum(t, -1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = F.log((q.high - q.low) / (p.high - p.low))
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = F.abs(p.loc - q.loc)
    t1 = -F.log(scale_ratio)
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * F.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - F.log(rate_ratio)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes "
                         "cannot be computed")
    n = p.event_shape[0]
    half_term1 = q._half_log_det() - p._half_log_det()
    # tr(Sigma_q^-1 Sigma_p) = |L_q^-1 L_p|_F^2
    q_tril = F.expand(q.scale_tril, tuple(p.scale_tril.shape))
    term2 = F.sum(LA.solve_triangular(q_tril, p.scale_tril, upper=False) ** 2, (-2, -1))
    term3 = _mahalanobis(q.scale_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different reinterpreted_batch_ndims")
    return p._summed(kl_divergence(p.base_dist, q.base_dist))



@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * F.log(p.rate / q.rate)
    t2 = MX.lgamma(q.concentration) - MX.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * MX.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p, sum_q = F.sum(p.concentration, -1), F.sum(q.concentration, -1)
    t1 = MX.lgamma(sum_p) - MX.lgamma(sum_q)
    t2 = F.sum(MX.lgamma(p.concentration) - MX.lgamma(q.concentration), -1)
    t3 = p.concentration - q.concentration
    t4 = MX.digamma(p.concentration) - F.unsqueeze(MX.digamma(sum_p), -1)
    return t1 - t2 + F.sum(t3 * t4, -1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (F.log(p.rate) - F.log(q.rate)) - (p.rate - q.rate)

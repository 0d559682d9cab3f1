"""The KL divergences PyTorch registers between the newer families of the same kind:
Binomial, Cauchy, Geometric, Gumbel, HalfNormal, Pareto, TransformedDistribution and the low
rank multivariate normal (with itself and with MultivariateNormal both ways). Registered on
import (distributions/__init__.py); the older pairs are in kl.py, the cross-family ones in
kl_cross.py.

>>> import tracegrad as tg
>>> D = tg.distributions
>>> D.kl_divergence(D.Cauchy(0.0, 1.0), D.Cauchy(1.0, 2.0))
tensor(0.2231)
"""
from __future__ import annotations

from .._api import functional as F
from .. import linalg as LA
from .._api import arithmetic as MX
from .._api.rearrange import broadcast_shapes
from .continuous import Cauchy
from .discrete_counts import Binomial, Geometric
from .kl import _kl_normal_normal, _inf_where, kl_divergence, register_kl
from .low_rank import LowRankMultivariateNormal, _lowrank_logdet, _lowrank_mahalanobis
from .multivariate import MultivariateNormal, _mahalanobis
from .transformed import EULER, Gumbel, HalfNormal, Pareto, TransformedDistribution


def _trace_xxt(x):
    """``trace(x x^T)`` over the last two dims (batched)."""
    return F.sum(x ** 2, (-2, -1))


def _same_event_shapes(p, q, what):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes cannot be computed")


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if not p.total_count._is_traced and bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + F.log1p(-p.probs) - F.log1p(-q.probs))
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    return F.log((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2) - F.log(4 * p.scale * q.scale)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - F.log1p(-q.probs) / p.probs - q.logits


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -F.log(ct1) - ct2 + ct3
    t3 = F.exp(ct2 + MX.lgamma(1 + ct1) - ct3)
    return t1 + ct1 * EULER + t3 - (1 + EULER)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio, alpha_ratio = p.scale / q.scale, q.alpha / p.alpha
    result = q.alpha * F.log(scale_ratio) - F.log(alpha_ratio) + alpha_ratio - 1
    return _inf_where(p.support.lower_bound < q.support.lower_bound, result)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError("KL between TransformedDistributions is only implemented for equal transforms "
                                  "and event shapes")
    return kl_divergence(p.base_dist, q.base_dist)


def _woodbury_factor(q):
    """``A = C^-1 W^T D^-1`` of the low rank q (C its capacitance Cholesky factor), so that
    ``cov_q^-1 = D^-1 - A^T A``."""
    wt_dinv = q._unbroadcasted_cov_factor.mT / F.unsqueeze(q._unbroadcasted_cov_diag, -2)
    tril = q._capacitance_tril
    lead = tuple(broadcast_shapes(tuple(tril.shape[:-2]), tuple(wt_dinv.shape[:-2])))
    return LA.solve_triangular(F.expand(tril, lead + tuple(tril.shape[-2:])),
                               F.expand(wt_dinv, lead + tuple(wt_dinv.shape[-2:])), upper=False)


def _lowrank_q_terms(p, q):
    """log det cov_q and the Mahalanobis term of p's mean under q (low rank q)."""
    log_det = _lowrank_logdet(q._unbroadcasted_cov_diag, q._capacitance_tril)
    mahalanobis = _lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q.loc - p.loc,
                                       q._capacitance_tril)
    return log_det, mahalanobis


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    _same_event_shapes(p, q, "Low Rank Multivariate Normals")
    q_log_det, term3 = _lowrank_q_terms(p, q)
    term1 = q_log_det - _lowrank_logdet(p._unbroadcasted_cov_diag, p._capacitance_tril)
    # tr(cov_q^-1 cov_p) with cov_q^-1 = D_q^-1 - A^T A and cov_p = D_p + W_p W_p^T
    A = _woodbury_factor(q)
    p_w, p_d, q_d = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, q._unbroadcasted_cov_diag
    term2 = (F.sum(p_d / q_d, -1) + _trace_xxt(p_w * F.unsqueeze(F.rsqrt(q_d), -1))
             - _trace_xxt(A * F.unsqueeze(F.sqrt(p_d), -2)) - _trace_xxt(F.matmul(A, p_w)))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    _same_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    q_log_det, term3 = _lowrank_q_terms(p, q)
    term1 = q_log_det - 2 * F.sum(F.log(p.scale_tril.diagonal(0, -2, -1)), -1)
    A = _woodbury_factor(q)
    term2 = (_trace_xxt(p.scale_tril * F.unsqueeze(F.rsqrt(q._unbroadcasted_cov_diag), -1))
             - _trace_xxt(F.matmul(A, p.scale_tril)))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    _same_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    term1 = 2 * F.sum(F.log(q.scale_tril.diagonal(0, -2, -1)), -1) - \
        _lowrank_logdet(p._unbroadcasted_cov_diag, p._capacitance_tril)
    term3 = _mahalanobis(q.scale_tril, q.loc - p.loc)
    # tr(cov_q^-1 (W W^T + D)) = |L_q^-1 W|^2 + |L_q^-1 D^1/2|^2
    n = p.event_shape[0]
    w, d_sqrt = p._unbroadcasted_cov_factor, F.sqrt(p._unbroadcasted_cov_diag).diag_embed()
    lead = tuple(broadcast_shapes(tuple(q.scale_tril.shape[:-2]), tuple(w.shape[:-2])))
    q_tril = F.expand(q.scale_tril, lead + (n, n))
    term2 = (_trace_xxt(LA.solve_triangular(q_tril, F.expand(w, lead + tuple(w.shape[-2:])), upper=False))
             + _trace_xxt(LA.solve_triangular(q_tril, F.expand(d_sqrt, lead + (n, n)), upper=False)))
    return 0.5 * (term1 + term2 + term3 - n)

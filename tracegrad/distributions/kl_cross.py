"""The KL divergences PyTorch registers between different families (closed forms, or +inf
where p puts mass outside q's support). Registered on import (distributions/__init__.py).

>>> import tracegrad as tg
>>> D = tg.distributions
>>> D.kl_divergence(D.Exponential(1.0), D.Normal(0.0, 1.0))
tensor(0.9189)
>>> D.kl_divergence(D.Normal(0.0, 1.0), D.Exponential(1.0))
tensor(inf)
"""
from __future__ import annotations

import math

from ..core import creation
from .._api import functional as F
from .._api import arithmetic as MX
from .continuous import Exponential, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .discrete import Bernoulli
from .discrete_counts import Binomial
from .gamma_family import Beta, Gamma, Poisson
from .kl import _inf_where, register_kl
from .transformed import EULER, Gumbel, Pareto


def _infinite_like(t):
    return creation.full_like(t, float("inf"))


def _x_log_x(t):
    return t * F.log(t)


def _register_infinite(p_type, q_types, param):
    """KL(p || q) = +inf for each q type (p has mass where q has none), shaped as ``param``."""
    def kl(p, q):
        return _infinite_like(getattr(p, param))

    for q_type in q_types:
        register_kl(p_type, q_type)(kl)


_register_infinite(Beta, [Pareto], "concentration1")
_register_infinite(ContinuousBernoulli, [Pareto], "probs")
_register_infinite(Exponential, [Beta, ContinuousBernoulli, Pareto, Uniform], "rate")
_register_infinite(Gamma, [Beta, ContinuousBernoulli, Pareto, Uniform], "concentration")
_register_infinite(Gumbel, [Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform], "loc")
_register_infinite(Laplace, [Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform], "loc")
_register_infinite(Normal, [Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform], "loc")
_register_infinite(Pareto, [Beta, ContinuousBernoulli, Uniform], "scale")
_register_infinite(Poisson, [Bernoulli, Binomial], "rate")


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * F.log(q.rate) - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - F.log(q.rate) + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    total = p.concentration1 + p.concentration0
    t2 = MX.lgamma(q.concentration) - q.concentration * F.log(q.rate)
    t3 = (q.concentration - 1) * (MX.digamma(p.concentration1) - MX.digamma(total))
    return -p.entropy() + t2 - t3 + q.rate * p.concentration1 / total


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    total = p.concentration1 + p.concentration0
    e_beta = p.concentration1 / total
    var_normal = q.scale ** 2
    t2 = 0.5 * F.log(var_normal * 2 * math.pi)
    t3 = (e_beta * (1 - e_beta) / (total + 1) + e_beta ** 2) * 0.5
    return -p.entropy() + t2 + (t3 - q.loc * e_beta + q.loc ** 2 * 0.5) / var_normal


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + F.log(q.high - q.low)
    return _inf_where((q.low > p.support.lower_bound) | (q.high < p.support.upper_bound), result)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    return (-q.concentration * F.log(ratio) + ratio + MX.lgamma(q.concentration) + q.concentration * EULER
            - (1 + EULER))


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    scale_rate, loc_scale = p.rate * q.scale, q.loc / q.scale
    return F.log(scale_rate) - 1 - loc_scale + F.exp(loc_scale) * scale_rate / (scale_rate + 1) + 1 / scale_rate


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var_normal, rate_sqr = q.scale ** 2, p.rate ** 2
    t1 = 0.5 * F.log(rate_sqr * var_normal * 2 * math.pi)
    return t1 - 1 + (1 / rate_sqr - q.loc / p.rate + q.loc ** 2 * 0.5) / var_normal


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - F.log(q.rate) + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    a = p.concentration
    beta_scale, loc_scale = p.rate * q.scale, q.loc / q.scale
    t1 = (a - 1) * MX.digamma(a) - MX.lgamma(a) - a
    t2 = F.log(beta_scale) + a / beta_scale
    t3 = F.exp(loc_scale) * (1 + 1 / beta_scale) ** -a - loc_scale
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    a = p.concentration
    var_normal, beta_sqr = q.scale ** 2, p.rate ** 2
    t1 = 0.5 * F.log(beta_sqr * var_normal * 2 * math.pi) - a - MX.lgamma(a)
    t2 = 0.5 * (a ** 2 + a) / beta_sqr
    return t1 + (a - 1) * MX.digamma(a) + (t2 - q.loc * a / p.rate + 0.5 * q.loc ** 2) / var_normal


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    ratio = p.scale / q.scale
    t1 = F.log(ratio / math.sqrt(2 * math.pi))
    t2 = (math.pi * ratio * 0.5) ** 2 / 3
    t3 = ((p.loc + p.scale * EULER - q.loc) / q.scale) ** 2 * 0.5
    return -t1 + t2 + t3 - (EULER + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    var_normal = q.scale ** 2
    ratio = p.scale ** 2 / var_normal
    t1 = 0.5 * F.log(2 * ratio / math.pi)
    return -t1 + ratio + (0.5 * p.loc ** 2 - p.loc * q.loc + 0.5 * q.loc ** 2) / var_normal - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_scale, var_scale_sqr, loc_scale = p.loc / q.scale, (p.scale / q.scale) ** 2, q.loc / q.scale
    t3 = F.exp(-mean_scale + 0.5 * var_scale_sqr + loc_scale)
    return -0.5 * F.log(var_scale_sqr) + mean_scale - loc_scale + t3 - (0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    t2 = math.sqrt(2 / math.pi) * p.scale * F.exp(-0.5 * (loc_diff / p.scale) ** 2)
    t3 = loc_diff * F.erf(math.sqrt(0.5) * loc_diff / p.scale)
    return -F.log(p.scale / q.scale) + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_rate = p.scale * q.rate
    result = F.log(p.alpha / scale_rate) - 1 / p.alpha + p.alpha * scale_rate / (p.alpha - 1) - 1
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common = F.log(p.scale) + 1 / p.alpha
    t2 = MX.lgamma(q.concentration) - q.concentration * F.log(q.rate)
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    result = F.log(p.alpha) - common + t2 + (1 - q.concentration) * common + t4 - 1
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    var_normal = 2 * q.scale ** 2
    common = p.scale / (p.alpha - 1)
    t1 = F.log(math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale)
    t3 = p.alpha * common ** 2 / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc) ** 2
    return _inf_where(p.alpha <= 2, t1 - 1 / p.alpha + (t3 + t4) / var_normal - 1)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = (q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    t4 = MX.lgamma(q.concentration1) + MX.lgamma(q.concentration0) - MX.lgamma(q.concentration1 + q.concentration0)
    result = t3 + t4 - F.log(width) - t2
    return _inf_where((p.high > q.support.upper_bound) | (p.low < q.support.lower_bound), result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - F.log((p.high - p.low) * q.rate)
    return _inf_where(p.low < q.support.lower_bound, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    t2 = MX.lgamma(q.concentration) - q.concentration * F.log(q.rate)
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    result = -F.log(width) + t2 + t3 + q.rate * (p.high + p.low) / 2
    return _inf_where(p.low < q.support.lower_bound, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    common = q.scale / (p.high - p.low)
    high, low = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    return F.log(common) + 0.5 * (high + low) - common * (F.exp(-high) - F.exp(-low))


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    width = p.high - p.low
    t1 = F.log(math.sqrt(math.pi * 2) * q.scale / width)
    return t1 + 0.5 * (width ** 2 / 12 + ((p.high + p.low - 2 * q.loc) / 2) ** 2) / q.scale ** 2


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    t1 = F.log(q.alpha * q.scale ** q.alpha * width)
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _inf_where(p.low < q.support.lower_bound, t2 * (q.alpha + 1) - t1)


# ----------------------------------------------------------------------------- ContinuousBernoulli
@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    return t1 + p._cont_bern_log_norm() + F.log1p(-p.probs) - q._cont_bern_log_norm() - F.log1p(-q.probs)


def _cross_entropy_to_continuous_bernoulli(p, q):
    """-H(p) - E_p[log q] for q continuous Bernoulli: its log density is linear in x."""
    return -p.entropy() - p.mean * q.logits - F.log1p(-q.probs) - q._cont_bern_log_norm()


register_kl(Beta, ContinuousBernoulli)(_cross_entropy_to_continuous_bernoulli)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - F.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale) ** 2) + F.log(q.scale)
    t3 = (p.variance + p.mean ** 2 - 2.0 * q.loc * p.mean) / (2.0 * q.scale ** 2)
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + F.log(q.high - q.low)
    return _inf_where((q.low >= p.support.lower_bound) | (q.high <= p.support.upper_bound), result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    result = _cross_entropy_to_continuous_bernoulli(p, q)
    return _inf_where((p.high >= q.support.upper_bound) | (p.low <= q.support.lower_bound), result)

"""NAdam, RAdam and Adamax (PyTorch's updates). As in Adam, the step-dependent factors are
tensor arithmetic on the step count in float64, so a compiled step reads the count as data
(RAdam's switch between its rectified and plain update is a ``where`` for the same reason).

>>> import tracegrad as tg
>>> w = tg.nn.Parameter(tg.tensor([1.0, -2.0]))
>>> opt = tg.optim.Adamax([w], lr=0.1)
>>> (w * w).sum().backward()
>>> opt.step()
>>> [round(v, 4) for v in w.tolist()]
[0.9, -1.9]
"""
from __future__ import annotations

from ..core import dtypes as _dt
from .._api import functional as TF
from .adam import Adam
from .optimizer import Optimizer


class NAdam(Adam):
    """Adam with Nesterov momentum whose coefficient ``mu_t = b1 (1 - 0.5 * 0.96 **
    (t * momentum_decay))`` warms up; ``mu_product`` is kept per parameter."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        Optimizer.__init__(self, params, dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
            capturable=capturable, differentiable=differentiable))

    def _state_spec(self, group):
        return {"step": "step", "mu_product": "one", "exp_avg": "zeros", "exp_avg_sq": "zeros"}

    def _update_group(self, group):
        lr, eps = self._option(group, "lr"), group["eps"]
        beta1, beta2 = self._option(group, "betas")
        for p, g, st in self._stepped(group, l2=False):
            t = st["step"].to(_dt.float64)
            g = self._decayed_gradient(group, p, g, lr)
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * group["momentum_decay"]))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * group["momentum_decay"]))
            mu_product = st["mu_product"]  # (in the default dtype, multiplied in it: PyTorch's)
            mu_product.mul_(mu.to(mu_product.dtype))
            exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
            exp_avg.add_((g - exp_avg).mul(1 - beta1))
            exp_avg_sq.mul_(beta2).add_(g.mul(1 - beta2).mul(g))
            denom = exp_avg_sq.div(1 - beta2 ** t).sqrt().add(eps)
            prod = mu_product.to(_dt.float64)
            p.add_(g.div(denom).mul(-lr * (1.0 - mu) / (1.0 - prod)))
            p.add_(exp_avg.div(denom).mul(-lr * mu_next / (1.0 - prod * mu_next)))


class RAdam(Adam):
    """Adam with the variance of its adaptive rate rectified; plain momentum SGD while the
    rectification is undefined (``rho_t <= 5``, the first steps)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        Optimizer.__init__(self, params, dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
            decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
            capturable=capturable, differentiable=differentiable))

    def _state_spec(self, group):
        return {"step": "step", "exp_avg": "zeros", "exp_avg_sq": "zeros"}

    def _update_group(self, group):
        lr, eps = self._option(group, "lr"), group["eps"]
        beta1, beta2 = self._option(group, "betas")
        rho_inf = 2 / (1 - beta2) - 1
        for p, g, st in self._stepped(group, l2=False):
            t = st["step"].to(_dt.float64)
            g = self._decayed_gradient(group, p, g, lr)
            exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
            exp_avg.add_((g - exp_avg).mul(1 - beta1))
            exp_avg_sq.mul_(beta2).add_(g.mul(1 - beta2).mul(g))
            correction2 = 1 - beta2 ** t
            corrected_avg = exp_avg.div(1 - beta1 ** t)
            rho_t = rho_inf - 2 * t * beta2 ** t / correction2
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)).clamp(min=0).sqrt()
            adaptive = correction2.sqrt() / exp_avg_sq.sqrt().add(eps)
            update = TF.where(rho_t > 5.0, adaptive.mul(rect), 1.0)
            p.sub_(corrected_avg.mul(lr).mul(update))


class Adamax(Adam):
    """Adam with the infinity norm: ``u = max(b2 * u, |g| + eps)``, ``p -= lr / (1 - b1**t) *
    m / u``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        Optimizer.__init__(self, params, dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, foreach=foreach,
            maximize=maximize, differentiable=differentiable, capturable=capturable))

    def _state_spec(self, group):
        return {"step": "step", "exp_avg": "zeros", "exp_inf": "zeros"}

    def _update_group(self, group):
        lr, eps = self._option(group, "lr"), group["eps"]
        beta1, beta2 = self._option(group, "betas")
        for p, g, st in self._stepped(group):
            exp_avg, exp_inf = st["exp_avg"], st["exp_inf"]
            exp_avg.add_((g - exp_avg).mul(1 - beta1))
            exp_inf.copy_(TF.maximum(exp_inf.mul(beta2), g.abs().add(eps)))
            clr = lr / (1 - beta1 ** st["step"].to(_dt.float64))
            p.add_(exp_avg.div(exp_inf).mul(-clr))

"""Adam and AdamW (PyTorch's update, including amsgrad and maximize).

The bias corrections ``1 - beta ** step`` are tensor arithmetic on the step-count tensor (in
float64, as PyTorch computes them in Python floats), so a compiled step reads the step count
as data and never retraces.

>>> import tracegrad as tg
>>> w = tg.nn.Parameter(tg.tensor([1.0, -2.0]))
>>> opt = tg.optim.Adam([w], lr=0.1)
>>> (w * w).sum().backward()
>>> opt.step()
>>> [round(v, 4) for v in w.tolist()]
[0.9, -1.9]
"""
from __future__ import annotations

from ..core import dtypes as _dt
from .._api import functional as TF
from .optimizer import Optimizer


class Adam(Optimizer):
    """``m = b1*m + (1-b1)*g``, ``v = b2*v + (1-b2)*g*g``,
    ``p -= lr/(1-b1**t) * m / (sqrt(v)/sqrt(1-b2**t) + eps)``. ``weight_decay`` adds
    ``wd * p`` to ``g`` (L2), or with ``decoupled_weight_decay=True`` (AdamW) scales ``p`` by
    ``1 - lr * wd`` first."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False, differentiable=False,
                 fused=None, decoupled_weight_decay=False):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _check_group(self, group):
        lr, eps, betas, wd = group["lr"], group["eps"], group["betas"], group["weight_decay"]
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if len(betas) != 2:
            raise ValueError(f"betas must be a pair of floats, got {betas!r}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= wd:
            raise ValueError(f"Invalid weight_decay value: {wd}")

    def _state_spec(self, group):
        spec = {"step": "step", "exp_avg": "zeros", "exp_avg_sq": "zeros"}
        if group["amsgrad"]:
            spec["max_exp_avg_sq"] = "zeros"
        return spec

    def _update_group(self, group):
        lr, eps = self._option(group, "lr"), group["eps"]
        beta1, beta2 = self._option(group, "betas")
        for p, g, st in self._stepped(group, l2=False):
            step, exp_avg, exp_avg_sq = st["step"], st["exp_avg"], st["exp_avg_sq"]
            g = self._decayed_gradient(group, p, g, lr)
            # the operand order follows PyTorch's kernels (lerp_, addcmul_, addcdiv_) so that
            # float32 results agree to the last bits as far as possible
            exp_avg.add_((g - exp_avg).mul(1 - beta1))
            exp_avg_sq.mul_(beta2).add_(g.mul(1 - beta2).mul(g))
            t = step.to(_dt.float64)
            step_size = lr / (1 - beta1 ** t)
            bias_correction2_sqrt = (1 - beta2 ** t).sqrt()
            second = exp_avg_sq
            if group["amsgrad"]:
                second = st["max_exp_avg_sq"]
                second.copy_(TF.maximum(second, exp_avg_sq))
            denom = (second.sqrt() / bias_correction2_sqrt).add(eps)
            p.add_(exp_avg.mul(-step_size).div(denom))


    @staticmethod
    def _decayed_gradient(group, p, g, lr):
        """``g`` with the group's weight decay: added to it (L2), or with
        ``decoupled_weight_decay`` applied to ``p`` itself (AdamW: ``p *= 1 - lr * wd``)."""
        wd = group["weight_decay"]
        if wd == 0:
            return g
        if group.get("decoupled_weight_decay"):
            p.mul_(1 - lr * wd)
            return g
        return g.add(p, alpha=wd)


class AdamW(Adam):
    """Adam with decoupled weight decay (default ``weight_decay=1e-2``): ``p *= 1 - lr * wd``
    before the Adam update."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False, differentiable=False,
                 fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True

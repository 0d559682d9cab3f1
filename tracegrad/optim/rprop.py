"""Rprop and ASGD (PyTorch's updates, operand order included).

Rprop's sign tests are ``where`` selections instead of PyTorch's masked assignments, and
ASGD's averaging switch (copy while ``mu`` is 1) a ``where`` on the state, so a compiled step
reads all of it as data and never retraces.

>>> import tracegrad as tg
>>> w = tg.nn.Parameter(tg.tensor([1.0, -2.0]))
>>> opt = tg.optim.Rprop([w], lr=0.1)
>>> (w * w).sum().backward()
>>> opt.step()
>>> [round(v, 4) for v in w.tolist()]
[0.9, -1.9]
"""
from __future__ import annotations

from ..core import creation
from ..core import dtypes as _dt
from .._api import functional as TF
from .optimizer import Optimizer


class Rprop(Optimizer):
    """Resilient backpropagation: each element has its own step size, multiplied by
    ``etas[1]`` while its gradient keeps its sign and by ``etas[0]`` when it flips (then that
    gradient is skipped), within ``step_sizes``; ``p -= sign(g) * step_size``."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _state_spec(self, group):
        return {"step": "step", "prev": "zeros", "step_size": "lr_like"}

    def _update_group(self, group):
        etaminus, etaplus = group["etas"]
        low, high = group["step_sizes"]
        for p, g in self._gradients(group):
            st = self.state[p]
            st["step"].add_(1)
            prev, step_size = st["prev"], st["step_size"]
            sign = g.mul(prev).sign()
            # (the 1s in g's dtype: a where of two numbers would be float32)
            factor = TF.where(sign > 0, etaplus, TF.where(sign < 0, etaminus, creation.ones_like(sign)))
            step_size.copy_(step_size.mul(factor).clamp(low, high))
            g = TF.where(factor == etaminus, 0.0, g)  # (PyTorch's test, also when etas coincide)
            p.sub_(g.sign() * step_size)
            prev.copy_(g)


class ASGD(Optimizer):
    """Averaged SGD: ``p = p * (1 - lambd * eta) - eta * g``, and the average ``ax`` of the
    iterates from step ``t0`` on; ``eta = lr / (1 + lambd * lr * t) ** alpha``."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _state_spec(self, group):
        return {"step": "step", "eta": "lr", "mu": "one", "ax": "zeros"}

    def _update_group(self, group):
        lr, lambd = self._option(group, "lr"), group["lambd"]
        for p, g, st in self._stepped(group):
            step, eta, mu, ax = st["step"], st["eta"], st["mu"], st["ax"]
            eta64 = eta.to(_dt.float64)  # (PyTorch reads it as a Python float)
            p.mul_(1 - lambd * eta64)
            p.add_(g * -eta64)
            ax.copy_(TF.where(mu == 1, p, ax + (p - ax) * mu))
            t = step.to(_dt.float64)
            eta.copy_((lr / (1 + lambd * lr * t) ** group["alpha"]).to(eta.dtype))
            mu.copy_((1 / TF.maximum(t - group["t0"], 1.0)).to(mu.dtype))

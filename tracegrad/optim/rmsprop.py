"""RMSprop, Adagrad and Adadelta (PyTorch's updates, operand order included).

>>> import tracegrad as tg
>>> w = tg.nn.Parameter(tg.tensor([1.0, -2.0]))
>>> opt = tg.optim.RMSprop([w], lr=0.01)
>>> (w * w).sum().backward()
>>> opt.step()
>>> [round(v, 4) for v in w.tolist()]
[0.9, -1.9]
"""
from __future__ import annotations

from ..core import dtypes as _dt
from .optimizer import Optimizer


def _nonnegative(group, *names):
    for name in names:
        if not 0.0 <= group[name]:
            raise ValueError(f"Invalid {name.replace('_', ' ')} value: {group[name]}")


class RMSprop(Optimizer):
    """``v = alpha*v + (1-alpha)*g*g``; ``centered`` subtracts the squared mean gradient;
    ``p -= lr * g / (sqrt(v) + eps)`` (through a momentum buffer when ``momentum`` > 0)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False, differentiable=False):
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                        centered=centered, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _check_group(self, group):
        _nonnegative(group, "lr", "eps", "momentum", "weight_decay", "alpha")

    def _state_spec(self, group):
        spec = {"step": "step", "square_avg": "zeros"}
        if group["momentum"] > 0:
            spec["momentum_buffer"] = "zeros"
        if group["centered"]:
            spec["grad_avg"] = "zeros"
        return spec

    def _update_group(self, group):
        lr, alpha, eps = self._option(group, "lr"), group["alpha"], group["eps"]
        for p, g, st in self._stepped(group):
            square_avg = st["square_avg"]
            square_avg.mul_(alpha).add_(g.mul(1 - alpha).mul(g))
            if group["centered"]:
                grad_avg = st["grad_avg"]
                grad_avg.add_((g - grad_avg).mul(1 - alpha))
                avg = (square_avg - grad_avg * grad_avg).sqrt().add(eps)
            else:
                avg = square_avg.sqrt().add(eps)
            if group["momentum"] > 0:
                buf = st["momentum_buffer"]
                buf.mul_(self._option(group, "momentum")).add_(g / avg)
                p.sub_(buf * lr)
            else:
                p.sub_((g / avg) * lr)


class Adagrad(Optimizer):
    """``s += g*g``; ``p -= lr / (1 + (t-1)*lr_decay) * g / (sqrt(s) + eps)``."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        defaults = dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def _check_group(self, group):
        _nonnegative(group, "lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps")

    def _state_spec(self, group):
        return {"step": "step", "sum": "zeros"}

    def _allocate_state(self, group):
        fresh = [p for p in group["params"] if "sum" not in self.state[p]]
        super()._allocate_state(group)
        for p in fresh:  # PyTorch starts the sum at initial_accumulator_value
            if group["initial_accumulator_value"]:
                self.state[p]["sum"].fill_(group["initial_accumulator_value"])

    def _update_group(self, group):
        lr, eps = self._option(group, "lr"), group["eps"]
        for p, g, st in self._stepped(group):
            # in float64, as PyTorch computes it in Python floats
            clr = lr / ((st["step"].to(_dt.float64) - 1) * group["lr_decay"] + 1)
            st["sum"].add_(g * g)
            std = st["sum"].sqrt().add(eps)
            p.sub_((g / std) * clr)


class Adadelta(Optimizer):
    """``v = rho*v + (1-rho)*g*g``; ``d = sqrt(u + eps) / sqrt(v + eps) * g``;
    ``u = rho*u + (1-rho)*d*d``; ``p -= lr * d``."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      capturable=capturable, maximize=maximize, differentiable=differentiable))

    def _check_group(self, group):
        _nonnegative(group, "lr", "eps", "weight_decay")

    def _state_spec(self, group):
        return {"step": "step", "square_avg": "zeros", "acc_delta": "zeros"}

    def _update_group(self, group):
        lr, rho, eps = self._option(group, "lr"), group["rho"], group["eps"]
        for p, g, st in self._stepped(group):
            square_avg, acc_delta = st["square_avg"], st["acc_delta"]
            square_avg.mul_(rho).add_(g.mul(1 - rho).mul(g))
            delta = acc_delta.add(eps).sqrt().div(square_avg.add(eps).sqrt()).mul(g)
            acc_delta.mul_(rho).add_(delta.mul(1 - rho).mul(delta))
            p.add_(delta.mul(-lr))

"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize (PyTorch's rule).

>>> import tracegrad as tg
>>> w = tg.nn.Parameter(tg.tensor([1.0, -2.0]))
>>> opt = tg.optim.SGD([w], lr=0.1, momentum=0.9, nesterov=True)
>>> (w * w).sum().backward()
>>> opt.step()
>>> [round(v, 4) for v in w.tolist()]
[0.62, -1.24]
"""
from __future__ import annotations

from .optimizer import Optimizer


class SGD(Optimizer):
    """``g = grad (+ weight_decay * p)``; with momentum ``buf = momentum * buf + (1 - dampening)
    * g`` (``buf = g`` on the first step), ``g = g + momentum * buf`` (Nesterov) or ``g = buf``;
    then ``p -= lr * g``."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def _check_group(self, group):
        if group["lr"] < 0.0:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        if group["momentum"] < 0.0:
            raise ValueError(f"Invalid momentum value: {group['momentum']}")
        if group["weight_decay"] < 0.0:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def _state_spec(self, group):
        # the step count only matters to tell the first momentum step from the others
        return {"momentum_buffer": "zeros", "step": "step"} if group["momentum"] != 0 else {}

    def _update_group(self, group):
        lr, dampening = self._option(group, "lr"), group["dampening"]
        momentum = self._option(group, "momentum")  # (a tensor in a trace: only its zeroness is guarded)
        weight_decay, nesterov = group["weight_decay"], group["nesterov"]
        for p, g in self._gradients(group):
            if weight_decay != 0:
                g = g.add(p, alpha=weight_decay)
            if group["momentum"] != 0:
                st = self.state[p]
                buf, step = st["momentum_buffer"], st["step"]
                if dampening != 0:
                    # PyTorch starts the buffer as a copy of g; buf is zero then, so weighting g
                    # by 1 on the first step and by (1 - dampening) later gives the same numbers
                    # without branching on the step's value
                    g_weight = 1.0 - dampening * (step > 0).to(g.dtype)
                    buf.mul_(momentum).add_(g * g_weight)
                else:
                    buf.mul_(momentum).add_(g)
                step.add_(1)
                g = g.add(buf, alpha=momentum) if nesterov else buf
            p.sub_(g * lr)  # (p + g * -lr, bit for bit; lr may be a tensor)

    def _after_load(self, p, saved_state):
        # a PyTorch SGD state has a momentum buffer but no step count: it is past step one
        if "momentum_buffer" in saved_state and "step" not in saved_state and "step" in self.state[p]:
            self.state[p]["step"].fill_(1.0)

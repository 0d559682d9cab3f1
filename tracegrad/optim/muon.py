"""Muon (PyTorch's ``torch.optim.Muon``): momentum SGD for 2-D parameters whose update is
orthogonalized by a quintic Newton-Schulz iteration (``G -> ~U V^T`` of G's SVD).

PyTorch runs the iteration in bfloat16, which tracegrad has not: here it runs in the
parameter's dtype, so updates agree with PyTorch's to bfloat16's precision (about 1%) and
are closer to the exact iteration.

>>> import tracegrad as tg
>>> w = tg.nn.Parameter(tg.eye(2))
>>> opt = tg.optim.Muon([w], lr=0.1, weight_decay=0.0)
>>> (w * tg.tensor([[1.0, 0.0], [0.0, 2.0]])).sum().backward()
>>> opt.step()
>>> tuple(opt.state[w])
('momentum_buffer',)
"""
from __future__ import annotations

import math

from .optimizer import Optimizer

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


class Muon(Optimizer):
    """``buf = lerp(buf, g, 1 - momentum)``; the update (``lerp(g, buf, momentum)`` with
    ``nesterov``, else ``buf``) orthogonalized by ``ns_steps`` Newton-Schulz steps with
    ``ns_coefficients``; decoupled weight decay; the learning rate scaled by
    ``adjust_lr_fn`` ("original": ``sqrt(max(1, rows/cols))``, "match_rms_adamw":
    ``0.2 sqrt(max(rows, cols))``)."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        if ns_steps >= 100:
            raise ValueError("Number of steps must be less than 100 for computational efficiency")
        if len(ns_coefficients) != 3:
            raise ValueError("Coefficients must be a tuple of exactly 3 values")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                                      ns_coefficients=tuple(ns_coefficients), eps=eps, ns_steps=ns_steps,
                                      adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with "
                                     f"size: {list(p.shape)}")

    def _state_spec(self, group):
        return {"momentum_buffer": "zeros"}

    def _update_group(self, group):
        lr, momentum = self._option(group, "lr"), group["momentum"]
        for p, g in self._gradients(group):
            buf = self.state[p]["momentum_buffer"]
            buf.lerp_(g, 1 - momentum)
            update = g.lerp(buf, momentum) if group["nesterov"] else buf
            update = orthogonalize(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
            p.mul_(1 - lr * group["weight_decay"])
            p.add_(update * -(lr * _lr_ratio(group["adjust_lr_fn"], p.shape)))


def orthogonalize(g, coefficients, steps, eps):
    """The quintic Newton-Schulz iteration ``X <- aX + (bA + cA²)X``, ``A = XXᵀ``, from ``X =
    g / |g|`` (on the wide orientation of ``g``)."""
    a, b, c = coefficients
    tall = g.shape[0] > g.shape[1]
    x = g.t() if tall else g
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.t()
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.t() if tall else x


def _lr_ratio(adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return 0.2 * math.sqrt(max(rows, cols))
    return 1.0

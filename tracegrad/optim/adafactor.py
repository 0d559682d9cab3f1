"""Adafactor (PyTorch's ``torch.optim.Adafactor``): Adam-like steps whose second moment is
factored for matrices: a row mean and a column mean of ``g²`` instead of a full-size
variance (memory ``m + n`` per ``m x n`` matrix), relative step sizes and update clipping.

PyTorch reads the step count and two norms as Python numbers; here they stay 0-dim tensors
(``minimum``/``maximum`` for its ``min``/``max``), so a compiled step reads them as data.

>>> import tracegrad as tg
>>> w = tg.nn.Parameter(tg.ones(2, 3))
>>> opt = tg.optim.Adafactor([w], lr=0.01)
>>> (w * w).sum().backward()
>>> opt.step()
>>> sorted(opt.state[w])
['col_var', 'row_var', 'step']
"""
from __future__ import annotations

from ..core import creation
from ..core import dtypes as _dt
from .._api import functional as TF
from .optimizer import Optimizer


class Adafactor(Optimizer):
    """``lr`` caps the relative step ``min(lr, 1/sqrt(t))``, scaled by the parameter's RMS
    (at least ``eps[1]``); ``beta2_decay`` makes the moment's decay ``1 - t**beta2_decay``;
    ``eps[0]`` (default: the dtype's epsilon) floors the variance; ``d`` clips the update's RMS;
    ``weight_decay`` is decoupled (``p *= 1 - lr * weight_decay``)."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                                      weight_decay=weight_decay, foreach=foreach, maximize=maximize))

    def _state_spec(self, group):
        return {"step": "step", "row_var": "row_zeros", "col_var": "col_zeros", "variance": "vector_zeros"}

    def _update_group(self, group):
        lr = self._option(group, "lr")
        eps1, eps2 = group["eps"]
        f64 = _dt.float64
        for p, g in self._gradients(group):
            st = self.state[p]
            st["step"].add_(1)
            eps1 = _dt.finfo(p.dtype).eps if group["eps"][0] is None else eps1
            t = st["step"].to(f64)
            decay = t ** group["beta2_decay"]  # 1 - beta2 at this step
            rho = TF.minimum(_as64(lr), t.rsqrt())
            alpha = TF.maximum(_as64(eps2), p.detach().to(f64).norm() / p.numel() ** 0.5) * rho
            if group["weight_decay"] != 0:
                p.mul_(1 - lr * group["weight_decay"])
            if g.ndim > 1:
                row, col = st["row_var"], st["col_var"]
                row.lerp_(g.square().mean(-1, keepdim=True), decay.to(g.dtype))
                col.lerp_(g.square().mean(-2, keepdim=True), decay.to(g.dtype))
                estimate = (row @ col) / row.mean(-2, keepdim=True).clamp(min=eps1)
            else:
                st["variance"].lerp_(g * g, decay.to(g.dtype))
                estimate = st["variance"]
            update = estimate.clamp(min=eps1 * eps1).rsqrt() * g
            denom = TF.maximum(_as64(1.0), update.to(f64).norm() / (update.numel() ** 0.5 * group["d"]))
            p.add_(update * (-alpha / denom).to(p.dtype))


def _as64(v):
    return v.to(_dt.float64) if hasattr(v, "to") else creation.tensor(float(v), dtype=_dt.float64)

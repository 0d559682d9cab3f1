"""``tg.nn.utils``: gradient clipping and flattening parameters, as ``torch.nn.utils``;
``tg.nn.utils.rnn``: padding variable-length sequences.

>>> import tracegrad as tg
>>> w = tg.nn.Parameter(tg.ones(4))
>>> (w * 3).sum().backward()
>>> tg.nn.utils.clip_grad_norm_([w], 1.0)
tensor(6.)
>>> w.grad
tensor([0.5000, 0.5000, 0.5000, 0.5000])
"""
from __future__ import annotations

from ... import composites as C
from ... import functional as T
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from . import rnn  # noqa: F401  (tg.nn.utils.rnn)


def _grads(parameters):
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad for p in params if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients in place so that their joint ``norm_type`` norm is at most
    ``max_norm``; returns that norm (before clipping)."""
    grads = _grads(parameters)
    if not grads:
        return T.to_tensor(0.0)
    with no_grad():
        norms = T.stack([C.norm(g, norm_type) for g in grads])
        total = C.norm(norms, norm_type)
        if error_if_nonfinite and not bool(C.isfinite(total).item()):
            raise RuntimeError(f"The total norm of order {float(norm_type)} for gradients from "
                               "`parameters` is non-finite, so it cannot be clipped.")
        scale = T.clamp(T.div(float(max_norm), T.add(total, 1e-6)), max=1.0)
        for g in grads:
            g.mul_(T.cast(scale, g.dtype))
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-float(clip_value), float(clip_value))


def parameters_to_vector(parameters):
    return T.cat([T.reshape(p, (-1,)) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of ``vec`` into the parameters (in place)."""
    start = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(T.reshape(T.narrow(vec, 0, start, n), tuple(p.shape)))
            start += n

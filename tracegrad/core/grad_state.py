"""The grad-mode state every layer reads: whether ops record autograd nodes, and whether
inference mode is on (thread-local).

It lives in ``core`` because the Tensor and the op registry read it on every op, and both
stand below ``autograd``; the context managers that change it (``no_grad``,
``inference_mode``...) are ``tracegrad.autograd.grad_mode``'s.

>>> from tracegrad.core.grad_state import is_grad_enabled
>>> is_grad_enabled()
True
"""
from __future__ import annotations

import threading


class _State(threading.local):
    """Per-thread modes; the class attributes are the defaults of a thread that set none (read
    on every op and every compiled call: a class attribute is found without the exception a
    missing thread-local attribute costs)."""

    grad = True
    inference = False


_state = _State()


def is_grad_enabled() -> bool:
    """Whether operations are currently recorded for autograd."""
    return _state.grad


def is_inference_mode_enabled() -> bool:
    """Whether inference mode is on (tensors made now are inference tensors)."""
    return _state.inference


def _set_grad(flag) -> None:
    _state.grad = bool(flag)

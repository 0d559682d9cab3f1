"""Names ``torch.autograd`` keeps for old code: ``Variable`` (a Tensor since PyTorch 0.4:
``Variable(t, requires_grad=True)`` is ``t`` made to require grad) and the engine's
multithreading switch (tracegrad's backward runs on the calling thread; the switch is recorded
for code that reads it back).

>>> import tracegrad as tg
>>> v = tg.autograd.Variable(tg.ones(2), requires_grad=True)
>>> isinstance(v, tg.autograd.Variable), v.requires_grad
(True, True)
"""
from __future__ import annotations

import threading

from ..core.tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: ``data`` itself (a Tensor),
    requiring grad when asked; every Tensor is an instance of Variable."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.requires_grad_(requires_grad) if requires_grad else data


class _Multithreading(threading.local):
    enabled = True


_multithreading = _Multithreading()


def is_multithreading_enabled():
    return _multithreading.enabled


class set_multithreading_enabled:
    """Context manager (or plain call) setting the flag ``is_multithreading_enabled`` reads."""

    def __init__(self, mode):
        self.prev = _multithreading.enabled
        _multithreading.enabled = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _multithreading.enabled = self.prev

"""``Parameter``: a leaf Tensor that a Module registers as one of its learnable weights.

>>> import tracegrad as tg
>>> p = tg.nn.Parameter(tg.zeros(2))
>>> p
Parameter containing:
tensor([0., 0.], requires_grad=True)
>>> isinstance(p, tg.Tensor), p.is_leaf
(True, True)
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor


class Parameter(Tensor):
    """A Tensor subclass marking a module weight. It shares storage with ``data`` (like
    PyTorch) and requires grad unless ``requires_grad=False``. Results of operations on a
    Parameter are plain Tensors."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = Tensor._make(np.zeros((0,), np.float32))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a Tensor as data, got {type(data).__name__}")
        if data._is_traced:
            raise RuntimeError("Parameters cannot be created inside a compiled (traced) function")
        p = cls._make(data._value, data.dtype)
        p._vc = data._vc  # same storage, so the same version counter
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happens in __new__ (Tensor.__init__ forbids direct construction)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        p = Parameter(Tensor._make(self._value.copy(), self._dtype), self._requires_grad)
        if self._grad is not None:
            p._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach().numpy().copy(), self._requires_grad))


def _rebuild_parameter(array, requires_grad):
    return Parameter(Tensor._make(array), requires_grad)

"""``Parameter``: a leaf Tensor that a Module registers as one of its learnable weights;
``UninitializedParameter`` and ``UninitializedBuffer``: placeholders of a lazy module (one whose
sizes come from its first input) that hold no data until ``materialize(shape)`` turns them into
a Parameter or a Tensor (PyTorch's ``torch.nn.parameter``).

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

from ..core import dtypes
from .._api.tensor import Tensor  # (the public class: a Parameter has Tensor's methods)
from ..core.tensor import VersionCounter
from ..core.device import CPU as _CPU, check_device as _check_device


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


class UninitializedTensorMixin:
    """A tensor without data yet: reading its shape raises, and so does computing with it;
    it has a dtype (``Module.to`` converts it) and ``materialize(shape)`` gives it data, when
    it becomes its ``cls_to_become``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        pass  # (everything happens in __new__)

    @classmethod
    def _placeholder(cls, requires_grad, dtype):
        t = object.__new__(cls)
        t._dtype = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
        t._inference = False
        if requires_grad:
            t.requires_grad_(True)
        return t

    @property
    def _value(self):  # (what every op reads: using the tensor raises here)
        raise ValueError(
            f"Attempted to use an uninitialized parameter ({type(self).__name__}). This error happens when you "
            "are using a `LazyModule` or explicitly manipulating `tracegrad.nn.parameter."
            f"{type(self).__name__}` objects. When using LazyModules Call `forward` with a dummy batch to "
            "initialize the parameters before calling tracegrad functions")

    @property
    def device(self):
        """The CPU: a lazy tensor has no data yet, and its ``device=`` could only be the CPU
        (an optimizer built before materialization asks, as PyTorch's may)."""
        return _CPU

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes.")

    @property
    def data(self):  # (an empty tensor of its dtype, for Module.to's conversions)
        return Tensor._make(np.empty((0,), self._dtype.np), self._dtype)

    @data.setter
    def data(self, other):
        self._dtype = other.dtype

    def materialize(self, shape, device=None, dtype=None):
        """Give this tensor data of ``shape`` (and ``dtype``, its own by default), uninitialised
        in principle (zeros here); it becomes a ``cls_to_become`` (Parameter or Tensor)."""
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        dtype = self._dtype if dtype is None else dtypes.to_dtype(dtype)
        self.__class__ = self.cls_to_become
        self._value = np.zeros(tuple(shape), dtype.np)
        self._dtype = dtype
        self._vc = VersionCounter()

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self._requires_grad, None, self._dtype)
        return memo[id(self)]

    def __reduce_ex__(self, proto):
        return (type(self), (self._requires_grad, None, self._dtype.name))


def is_lazy(param):
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet (a lazy module's, before its first forward).

    >>> import tracegrad as tg
    >>> p = tg.nn.UninitializedParameter()
    >>> p
    <UninitializedParameter>
    >>> p.materialize((2, 3))
    >>> type(p).__name__, p.shape, p.requires_grad
    ('Parameter', tracegrad.Size([2, 3]), True)
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        return cls._placeholder(requires_grad, dtype)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (a lazy module's running statistics)."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        t = cls._placeholder(requires_grad, dtype)
        t.persistent = persistent
        return t

"""Where a tensor's data lives and where an op runs: copies between the host and the device
(``.to``, ``.cuda()``, ``.cpu()``, factories' ``device=``) and the device hook of dispatch.

Dispatch (ops/registry.py) runs NumPy kernels for CPU tensors exactly as before any cuda
tensor existed: its hook ``registry._on_device`` stays None until the first device buffer is
allocated (``activate``), so the CPU path pays one test of a module global. From then on,
``run`` looks at an op's inputs: all on the CPU, it declines (NumPy runs); any on the device,
the op runs there (compiler/backends/cuda/eager.py); a CPU tensor of more than 0 dims among
cuda ones raises PyTorch's error (a 0-dim CPU tensor is a scalar, which PyTorch allows and
copies over).

>>> import tracegrad as tg
>>> tg.ones(2).to("cpu").device
device(type='cpu')
"""
from __future__ import annotations

import functools
import inspect
import types

import numpy as np

from . import dtypes as _dt, pytree, tracing
from .device import CPU, CUDA0, device as _device, get_default_device, no_device_error, set_default_device
from .storage import NUMPY_MESSAGE, DeviceArray, copy_into

# The imports left inside functions reach up: the dispatch registry, the Tensor class, autograd
# and the CUDA backend all stand above core and import this module (directly or through
# core/tensor.py), so importing them here would be a cycle.

_state = {"active": False}


def activate() -> None:
    """Install the device hook in dispatch (called once, with the first device allocation)."""
    if not _state["active"]:
        from ..ops import registry

        registry._on_device = run
        _state["active"] = True


def cuda_available() -> bool:
    from ..compiler.backends.cuda import runtime

    return runtime.available()


def resolve(dev) -> "_device":
    """A device this build can place tensors on (CPU, or cuda:0 where cuda is available);
    anything else raises PyTorch's CPU-build error. None: the CPU."""
    if dev is None:
        return CPU
    d = dev if isinstance(dev, _device) else _device(dev)
    if d.type == "cpu":
        return CPU
    if d.type == "cuda" and cuda_available():
        if d.index not in (None, 0):
            raise RuntimeError(f"CUDA error: invalid device ordinal (cuda:{d.index}: this machine has 1 device)")
        return CUDA0
    raise no_device_error(d)


def device_of(value) -> "_device":
    """Where ``value`` (a tensor's ``_value``) lives. A value being traced (an IR value) is on
    the device of the trace: cuda when the compiled call's tensors are (the program is then a
    CUDA one, compiler/backends/cuda/device_programs.py), so ``x.device`` inside a compiled
    function reads as it does eagerly and ``tg.zeros(n, device=x.device)`` there is made where
    ``x`` is."""
    if value.__class__ is DeviceArray:
        return CUDA0
    if value.__class__ is np.ndarray:
        return CPU
    tracer = tracing.current_tracer()
    return CPU if tracer is None else tracer.device


def mixed_devices_error(first, second) -> RuntimeError:
    return RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                        f"{first} and {second}!")


# ----------------------------------------------------------------------------- dispatch's hook
def run(op, inputs, attrs, shape, dtype):
    """The value of ``op`` on ``inputs`` when any is a cuda tensor (a DeviceArray), else None."""
    on_device = False
    for t in inputs:
        if t._value.__class__ is DeviceArray:
            on_device = True
            break
    if not on_device:
        return None
    arrays = []
    for t in inputs:
        v = t._value
        if v.__class__ is not DeviceArray:
            if v.ndim:
                first = next(device_of(u._value) for u in inputs if u._value.__class__ is DeviceArray or u.ndim)
                raise mixed_devices_error(first, CPU if first is CUDA0 else CUDA0)
            v = DeviceArray.from_host(v)  # (a 0-dim CPU tensor: a scalar, as PyTorch allows)
        arrays.append(v)
    from ..compiler.backends.cuda import eager

    return eager.run_op(op, arrays, attrs, shape, dtype)


_UFUNC_OPS = {np.add: "add", np.subtract: "sub", np.multiply: "mul"}


def ufunc(uf, method, inputs, kwargs):
    """NumPy ufuncs reaching a DeviceArray (the autograd engine accumulates gradients with
    ``np.add(a, b, out=a)``): the op on the device, written into ``out`` there."""
    from ..ops.registry import REGISTRY
    from .tensor import Tensor

    name = _UFUNC_OPS.get(uf)
    out = kwargs.pop("out", None)
    if name is None or method != "__call__" or kwargs or not all(isinstance(a, DeviceArray) for a in inputs):
        raise TypeError(NUMPY_MESSAGE)
    op = REGISTRY[name]
    ts = [Tensor._make(a, _dt.from_numpy_dtype(a.dtype)) for a in inputs]
    shape, dtype = op.infer(*ts)
    from ..compiler.backends.cuda import eager

    value = eager.run_op(op, list(inputs), {}, shape, dtype)
    if out is None:
        return value
    target = out[0] if isinstance(out, tuple) else out
    copy_into(target, value)
    return target


def on_device_of(t, fn, *args):
    """``fn(*args)`` with the default device ``t``'s when ``t`` is a cuda tensor: the backward
    rules make their helper tensors (zeros to scatter into, masks) with plain factories, which
    then land where the gradients are (autograd/graph.OpNode.apply)."""
    if t._value.__class__ is not DeviceArray:
        return fn(*args)
    return _with_cuda_default(fn, args, {})


def _with_cuda_default(fn, args, kwargs):
    """``fn(*args, **kwargs)`` with cuda as the default device, the previous one restored."""
    previous = get_default_device()
    set_default_device(CUDA0)
    try:
        return fn(*args, **kwargs)
    finally:
        set_default_device(previous)


def _has_device_tensor(args, kwargs) -> bool:
    for a in (*args, *kwargs.values()):
        if getattr(a, "_value", None).__class__ is DeviceArray:
            return True
        if a.__class__ in (list, tuple):
            for b in a:
                if getattr(b, "_value", None).__class__ is DeviceArray:
                    return True
    return False


def _call_on_inputs_device(fn, args, kwargs):
    if not _state["active"]:  # (no cuda tensor exists yet: the CPU path pays this one test)
        return fn(*args, **kwargs)
    if not _has_device_tensor(args, kwargs):
        return fn(*args, **kwargs)
    return _with_cuda_default(fn, args, kwargs)


def on_inputs_device(fn):
    """Decorate a composite that makes helper tensors with plain factories (``arange``,
    ``zeros``, ``tensor(...)``, ``eye``...): called with a cuda tensor among its arguments (or
    in a list or tuple argument), it runs with the default device set to cuda, so its helpers
    land where its inputs are instead of raising the mixed-devices error. The one rule for
    every such composite, as ``on_device_of`` is for backward rules.

    >>> import tracegrad as tg
    >>> on_inputs_device(tg.cummax).__name__
    'cummax'
    """
    return _wrapped(fn, _call_on_inputs_device)


def _call_on_host(fn, args, kwargs):
    if not _state["active"] or not _has_device_tensor(args, kwargs):
        return fn(*args, **kwargs)
    def host(x):
        return move(x, CPU) if getattr(x, "_value", None).__class__ is DeviceArray else x

    leaves, spec = pytree.flatten((args, kwargs))
    args, kwargs = pytree.unflatten(spec, [host(x) for x in leaves])
    leaves, spec = pytree.flatten(fn(*args, **kwargs))
    return pytree.unflatten(spec, [move(x, CUDA0) if getattr(x, "_value", None).__class__ is np.ndarray
                                   and hasattr(x, "_dtype") else x for x in leaves])


def on_host(fn):
    """Decorate a function computed on the host by design (NumPy algorithms, results whose
    shape depends on the values: ``unique``, ``histogram``, ``mode``...): called with cuda
    tensors, it runs on host copies of them and its tensor results are copied to the device,
    as eager ops without a CUDA lowering do (differentiable copies: gradients flow back)."""
    return _wrapped(fn, _call_on_host)


def _wrapped(fn, call):
    """``fn`` behind ``call(fn, args, kwargs)``, built over ``fn``'s own module globals so that
    doctest still finds ``fn``'s examples in its module (doctest skips functions whose globals
    are another module's)."""
    def wrapper(*args, **kwargs):
        return call(fn, args, kwargs)

    out = types.FunctionType(wrapper.__code__, getattr(fn, "__globals__", globals()), fn.__name__, None,
                             wrapper.__closure__)
    return functools.update_wrapper(out, fn)


# ----------------------------------------------------------------------------- copies
def move(t, dev):
    """``t`` on device ``dev`` (itself when already there): a copy between host and device,
    differentiable (the gradient goes back the other way), as ``Tensor.to`` in PyTorch."""
    dev = resolve(dev)
    value = t._value
    if device_of(value) is dev:
        return t
    from .tensor import Tensor

    if tracing.current_tracer() is not None or not isinstance(value, (np.ndarray, DeviceArray)):
        tracing.graph_break(f"moving a tensor to {dev} inside a compiled function")
        raise RuntimeError(f"moving a traced tensor to {dev}")
    moved = DeviceArray.from_host(value) if dev is CUDA0 else value.to_host()
    out = Tensor._make(moved, t._dtype)
    from ..autograd import grad_mode

    if t._requires_grad and grad_mode.is_grad_enabled():
        _CopyBackward.attach(t, out, device_of(value))
    return out


def _copy_backward_node():
    from ..autograd.graph import Node, gradient_edge

    class CopyBackwards(Node):
        """The gradient of a copy between devices: the same copy, back."""

        def __init__(self, source, back_to):
            super().__init__([gradient_edge(source)])
            self.back_to = back_to

        @classmethod
        def attach(cls, source, out, back_to):
            out._requires_grad, out._grad_fn = True, cls(source, back_to)

        def apply(self, grad_outputs):
            g = grad_outputs[0]
            return [None if g is None else move(g, self.back_to)]

    return CopyBackwards


class _LazyNode:
    cls = None

    def attach(self, source, out, back_to):
        if _LazyNode.cls is None:
            _LazyNode.cls = _copy_backward_node()
        _LazyNode.cls.attach(source, out, back_to)


_CopyBackward = _LazyNode()


def place(array, dev):
    """A new tensor's host ``array`` placed on ``dev`` (factories' ``device=``): the array
    itself for the CPU, a device copy for cuda."""
    return array if dev is CPU else DeviceArray.from_host(array)


# ----------------------------------------------------------------------------- nn layers' device=
_layer_depth = [0]  # constructors of layers taking device= running now (check_device reads it)


def building_layer() -> bool:
    """Whether a layer's constructor is running (its ``device=`` is honoured by ``layer_init``)."""
    return _layer_depth[0] > 0


def layer_init(cls) -> None:
    """Make ``cls.__init__`` (an nn layer's, with a ``device`` parameter) honour ``device=``: the
    layer is built on the host as before, then moved there with ``Module.to``, so every layer
    gets the rule from this one place. Called by ``Module.__init_subclass__``."""
    init = cls.__dict__.get("__init__")
    if init is None:
        return
    try:
        sig = inspect.signature(init)
    except (TypeError, ValueError):
        return
    if "device" not in sig.parameters:
        return

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        _layer_depth[0] += 1
        try:
            init(self, *args, **kwargs)
        finally:
            _layer_depth[0] -= 1
        dev = kwargs.get("device") if "device" in kwargs else sig.bind_partial(self, *args).arguments.get("device")
        if dev is not None and resolve(dev) is not CPU:
            self.to(dev)

    cls.__init__ = __init__

"""Tensor: NumPy storage (eager) or a symbolic IR value (while tracing), plus autograd metadata.

>>> import tracegrad as tg
>>> x = tg.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""
from __future__ import annotations

import warnings

import numpy as np

from . import dtypes as _dt
from .device import CPU as _CPU, CUDA0 as _CUDA0
from .storage import NUMPY_MESSAGE as _NUMPY_MESSAGE, DeviceArray as _DeviceArray
from . import grad_state as grad_mode  # (core's: autograd stands above the Tensor)
from . import tracing as trace  # (imports nothing of the package: no cycle)


class Size(tuple):
    """A tensor shape: a tuple that prints like PyTorch's ``torch.Size``."""

    def __repr__(self):
        return f"tracegrad.Size([{', '.join(map(str, self))}])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


class VersionCounter:
    """Shared by a base tensor and all its views; bumped by every in-place write."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class _LazyVersionCounter:
    """``Tensor._vc`` until a tensor's first read of it: most tensors (eager ops' results,
    compiled programs' results) are never modified in place nor viewed, so their counter is
    made on demand. A non-data descriptor: once the instance has its own ``_vc`` (set here or
    shared by a view), the attribute lookup never comes back to this class attribute."""

    def __get__(self, t, owner=None):
        if t is None:
            return self
        vc = t.__dict__["_vc"] = VersionCounter()
        return vc


def _is_symbolic(v):
    return not isinstance(v, (np.ndarray, _DeviceArray))


class TensorBase:
    """The data and autograd machinery of a tensor: storage (an ndarray, or an IR value while
    tracing), dtype, version counter, grad, grad_fn, hooks, views. Its methods of the PyTorch
    surface (``add``, ``sum``, ``reshape``, operators, in-place forms...) are declared by the
    public class, ``tracegrad.Tensor`` (tracegrad/_api/tensor.py), which every tensor is an
    instance of; the layers below it (ops, autograd, creation) name this class, for
    ``isinstance`` and ``_make``, as ``Tensor``.
    """

    __array_priority__ = 1000  # make ``ndarray * Tensor`` defer to Tensor.__rmul__
    _custom_function_view = False  # set on views returned by a custom Function (autograd.function)
    _vc = _LazyVersionCounter()  # shared by a base and its views; bumped by in-place writes
    # Autograd fields at their defaults, read from the class until a tensor sets its own: a new
    # tensor's dict holds only what _make gives it (a compiled step makes a handful per call,
    # an eager op one, and a dict of 3 entries is cheaper to build and free than one of 14).
    _requires_grad = False
    _grad = None
    _grad_fn = None
    _output_nr = 0
    _base = None
    _view_fn = None
    _view_seen = 0
    _retains_grad = False
    _hooks = None
    _post_acc_hooks = None
    _acc_node = None

    # The class that ``_make`` (every op's result) and ``TensorBase(...)`` instantiate: the
    # public class that declares the methods, recorded when it is declared (``class
    # Tensor(..., TensorBase, public=True)``); each subclass of it (nn.Parameter, a user's own)
    # instantiates itself. Recorded rather than imported because it stands above this module:
    # the ops, autograd and creation make tensors through this class, and what they make must
    # have the methods.
    _instance_class = None

    def __init_subclass__(cls, public=False, **kwargs):
        super().__init_subclass__(**kwargs)
        if public:
            if TensorBase._instance_class is not None:
                raise TypeError(f"{cls.__qualname__}: the public tensor class is already "
                                f"{TensorBase._instance_class.__module__}.{TensorBase._instance_class.__qualname__}")
            TensorBase._instance_class = cls
        else:
            cls._instance_class = cls

    def __new__(cls, *args, **kwargs):
        # ``Tensor(...)``, the legacy constructor (``torch.Tensor([1, 2])``) for the public class
        # (or this one); subclasses (Parameter) construct in their own __new__.
        if cls is not TensorBase and cls is not TensorBase._instance_class:
            return object.__new__(cls)
        from .creation import legacy_tensor  # (in the call: creation imports this module)

        return legacy_tensor(*args, **kwargs)

    def __init__(self, *args, **kwargs):
        pass  # (everything happens in __new__: legacy_tensor, or a subclass's own)

    def __format__(self, spec):
        from .printing import tensor_format  # (PyTorch's: a 0-d tensor formats as its number)

        return tensor_format(self, spec)

    # ----------------------------------------------------------------- construction
    @classmethod
    def _make(cls, value, dtype=None, requires_grad=False):
        """Wrap an ndarray (eager) or an IR value (traced) without copying: an instance of
        the public class (of ``cls`` itself for its subclasses)."""
        t = object.__new__(cls._instance_class)
        t._value = value
        t._dtype = dtype if dtype is not None else _dt.from_numpy_dtype(value.dtype)
        if requires_grad:
            t._requires_grad = True
        t._inference = grad_mode.is_inference_mode_enabled()
        return t

    # ----------------------------------------------------------------- basic attributes
    @property
    def shape(self):
        return Size(self._value.shape)

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        return len(self._value.shape)

    def dim(self):
        return self.ndim

    def size(self, dim=None):
        if dim is None:
            return self.shape
        return self.shape[_wrap_dim(dim, self.ndim)]

    def numel(self):
        return self.shape.numel()

    nelement = numel

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def element_size(self):
        return self._dtype.itemsize

    def stride(self, dim=None):
        """Element strides of the storage (eager tensors), like ``torch.Tensor.stride``."""
        if self._is_traced:
            _graph_break(".stride() on a traced tensor")
        strides = tuple(st // self._value.itemsize for st in self._value.strides)
        return strides if dim is None else strides[_wrap_dim(dim, self.ndim)]

    def data_ptr(self):
        """Address of the first element (eager tensors): equal for tensors sharing storage."""
        if self._is_traced:
            _graph_break(".data_ptr() on a traced tensor")
        v = self._value
        return v.ptr if v.__class__ is _DeviceArray else v.__array_interface__["data"][0]

    @property
    def device(self):
        """The CPU, or cuda:0 for a tensor whose data is in device memory (core/storage.py);
        a value being traced is on the device its program runs on (placement.device_of)."""
        v = self._value.__class__
        if v is _DeviceArray:
            return _CUDA0
        if v is np.ndarray:
            return _CPU
        from .placement import device_of  # (at call time: placement's functions import this module)

        return device_of(self._value)

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def _raw(self):
        """The storage: an ndarray, or the current IR value while tracing."""
        tracer = trace.current_tracer()
        if tracer is not None:
            return tracer.value_of(self)
        return self._value

    @property
    def _is_traced(self):
        return _is_symbolic(self._value)

    # ----------------------------------------------------------------- autograd attributes
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        if not self.is_leaf and not requires_grad:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self._inference and requires_grad:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self):
        if self._base is not None and self._view_seen != self._vc.value:
            self._refresh_view_graph()
        return self._grad_fn

    @property
    def output_nr(self):
        """Which output of its ``grad_fn`` this tensor is."""
        return self._output_nr

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def grad(self):
        if self._grad is None and not self.is_leaf and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you indeed "
                "want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() "
                "on the non-leaf Tensor.",
                UserWarning,
                stacklevel=2,
            )
        return self._get_grad()

    def _get_grad(self):
        """``.grad`` without the non-leaf warning (the tracer's view of it while tracing)."""
        tracer = trace.current_tracer()
        if tracer is not None:
            return tracer.get_grad(self)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                    f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor are "
                    "the same size"
                )
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{value.dtype.name}' to a tensor "
                    f"with dtype '{self.dtype.name}'. The gradient must match the tensor's dtype."
                )
        tracer = trace.current_tracer()
        if tracer is not None:
            tracer.set_grad(self, value)
            return
        self._grad = value

    @property
    def data(self):
        """The same storage without autograd: in-place writes through ``.data`` are invisible
        to autograd (a fresh version counter, as in PyTorch)."""
        return Tensor._make(self._value, self._dtype)

    @data.setter
    def data(self, other):
        self._value = other._value
        self._dtype = other._dtype
        self._vc = VersionCounter()

    @property
    def _version(self):
        return self._vc.value

    def _bump_version(self):
        self._vc.value += 1

    def retain_grad(self):
        """Make backward fill ``.grad`` of this non-leaf tensor (a no-op on leaves)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf:
            return
        self._retains_grad = True
        self._register_retain_grad()

    def _register_retain_grad(self):
        # Called again whenever an in-place op gives this tensor a new grad_fn: the retained
        # gradient follows the tensor to its newest history (PyTorch semantics).
        if self._retains_grad and self._grad_fn is not None:
            self._grad_fn._register_retain_grad(self._output_nr, self)

    @property
    def retains_grad(self):
        return self._retains_grad

    def register_hook(self, hook):
        """Run ``hook(grad)`` when the gradient for this tensor is computed; it may return a
        replacement gradient. Returns a handle whose ``remove()`` unregisters the hook.

        On a non-leaf the hook belongs to the tensor's current ``grad_fn``: a hook registered
        before an in-place op sees the gradient of the value before it (like PyTorch).

        >>> import tracegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 10)
        >>> (x * 2).sum().backward()
        >>> x.grad
        tensor([20., 20.])
        >>> h.remove()
        """
        from ..autograd.graph import RemovableHandle, _HookDict  # (in the call: autograd stands above)

        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self.grad_fn
        if fn is not None:
            return fn._register_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = _HookDict()
        handle = RemovableHandle(self._hooks)
        self._hooks[handle.id] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook):
        """Run ``hook(tensor)`` after a leaf's ``.grad`` has been accumulated."""
        from ..autograd.graph import RemovableHandle, _HookDict  # (in the call: autograd stands above)

        if not self.is_leaf:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = _HookDict()
        handle = RemovableHandle(self._post_acc_hooks)
        self._post_acc_hooks[handle.id] = hook
        return handle

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        # (lazy: a true cycle, the engine makes Tensors; about 0.3 µs against a whole backward pass)
        from ..autograd import engine

        engine.backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs=inputs)

    def detach(self):
        """A new tensor sharing storage and version counter, cut from the graph."""
        t = Tensor._make(self._raw_for_alias(), self._dtype)
        t._vc = self._vc
        t._inference = self._inference
        return t

    def detach_(self):
        """Cut this tensor from the graph in place, making it a leaf."""
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                "function in torch/optim/optimizer.py as the solution."
            )
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        return self

    def is_inference(self):
        return self._inference

    def _is_view(self):
        return self._base is not None

    def _raw_for_alias(self):
        return self._raw()

    # ----------------------------------------------------------------- views
    def _refresh_view_graph(self):
        """The base was written in place after this view was taken: re-derive the view from
        the base so that its value and autograd history match the base's (PyTorch does the
        same lazily when a view's grad_fn is read)."""
        base = self._base
        if base.requires_grad and grad_mode.is_grad_enabled() and self._custom_function_view:
            from ..autograd.function import custom_function_view_error  # (autograd stands above)

            raise custom_function_view_error(self, "its base or another view of its base has been "
                                                   "modified inplace")
        self._view_seen = self._vc.value
        if base.requires_grad and grad_mode.is_grad_enabled():
            fresh = self._view_fn(base)
            self._grad_fn = fresh._grad_fn
            self._output_nr = fresh._output_nr
            self._requires_grad = True
            self._register_retain_grad()

    # ----------------------------------------------------------------- conversion
    def numpy(self, *, force=False):
        if self._is_traced:
            _graph_break(".numpy() on a traced tensor")
        _outside_read(self, ".numpy()")
        if self.requires_grad and grad_mode.is_grad_enabled() and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
            )
        if self._value.__class__ is _DeviceArray:
            if not force:
                raise TypeError(_NUMPY_MESSAGE)
            return self._value.to_host()  # (force=True: a host copy, as PyTorch's)
        return self._value

    def __array__(self, dtype=None, copy=None):
        if self._is_traced:
            _graph_break("np.asarray() on a traced tensor")
        _outside_read(self, "np.asarray()")
        a = self._value
        if a.__class__ is _DeviceArray:
            raise TypeError(_NUMPY_MESSAGE)
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def _readable(self, what):
        """The array a Python-level read of this tensor sees: its own, or while tracing, the
        data of a compile-time constant (made in the traced function; the same at every
        trace, so the read needs no guard); anything else traced breaks the graph."""
        if self._is_traced:
            if getattr(self._value, "is_constant", False) and self._value.data is not None:
                return np.asarray(self._value.data)
            _graph_break(f"{what} on a traced tensor"
                         + (" (Python control flow on a tensor value)" if what == "bool()" else ""))
        _outside_read(self, what)
        v = self._value
        return v.to_host() if v.__class__ is _DeviceArray else v  # (a cuda tensor's values: copied back)

    def item(self):
        value = self._readable(".item()")
        if value.size != 1:
            raise RuntimeError(
                f"a Tensor with {value.size} elements cannot be converted to Scalar"
            )
        return value.reshape(()).item()

    def tolist(self):
        return self._readable(".tolist()").tolist()

    def __bool__(self):
        value = self._readable("bool()")
        if value.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {value.size} elements is ambiguous"
            )
        return bool(value.reshape(()))

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._dtype.category != 1 or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __dlpack__(self, stream=None, **kwargs):
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self.numpy().__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._value.__dlpack_device__()

    def __hash__(self):
        return id(self)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        # (in the call: printing imports this module, and at module level would lift the Tensor a floor)
        from .printing import tensor_repr

        return tensor_repr(self)

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user support the deepcopy protocol")
        t = Tensor._make(self._value.copy(), self._dtype, self._requires_grad)
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = t
        return t

    def __reduce_ex__(self, proto):
        if self._value.__class__ is _DeviceArray:  # (pickled from a host copy, unpickled on the device)
            return (_rebuild_on_device, (self._value.to_host(), self._dtype.name, self._requires_grad))
        return (_rebuild, (self.detach().numpy().copy(), self._dtype.name, self._requires_grad))


Tensor = TensorBase  # (what the layers below the public class name: isinstance, _make)


def _rebuild(array, dtype_name, requires_grad):
    return Tensor._make(array, _dt.to_dtype(dtype_name), requires_grad)


def _rebuild_on_device(array, dtype_name, requires_grad):
    return Tensor._make(_DeviceArray.from_host(array), _dt.to_dtype(dtype_name), requires_grad)


def _graph_break(reason):
    trace.graph_break(reason)
    raise RuntimeError(reason)  # not reached while tracing; outside tracing traced tensors don't exist


def _outside_read(t, what):
    """Reading the values of a user tensor while tracing: the tracer guards or breaks."""
    tracer = trace.current_tracer()
    if tracer is not None:
        tracer.read_value(t, what)


def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n if ndim else 0

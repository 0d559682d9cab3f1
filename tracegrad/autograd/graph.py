"""The autograd graph: Nodes (``grad_fn``), saved tensors and hook handles.

>>> import tracegrad as tg
>>> a = tg.tensor([2.0], requires_grad=True)
>>> b = (a * a).exp()
>>> b.grad_fn.name(), b.grad_fn.next_functions[0][0].name()
('ExpBackward0', 'MulBackward0')
"""
from __future__ import annotations

import functools
import itertools
import re
import types
import weakref

import numpy as np

from . import anomaly, forward_ad, grad_mode, graph_task, saved_hooks  # (none imports this module: no cycle)
from ..core import placement as _placement
from ..core import tracing as trace
from ..core.tensor import Tensor
from ..core.tracing import bump

_handle_ids = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` unregisters the hook."""

    def __init__(self, hooks_dict):
        self.id = next(_handle_ids)
        self._hooks = weakref.ref(hooks_dict) if _weakrefable(hooks_dict) else (lambda: hooks_dict)

    def remove(self):
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)
            bump()  # compiled programs that ran a module's hooks recheck them (ir/pystate.py)

    # a copy (deepcopy, pickle) refers to the copy of its dict, not to the original's: a module
    # copied with a handle it keeps (a lazy module's) then removes its own hook
    def __getstate__(self):
        return self._hooks(), self.id

    def __setstate__(self, state):
        hooks, self.id = state
        self._hooks = weakref.ref(hooks) if _weakrefable(hooks) else (lambda: hooks)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _weakrefable(obj):
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


class _HookDict(dict):
    """A dict that can be weakly referenced by handles."""


FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


class SavedTensorsFreed(RuntimeError):
    """PyTorch's RuntimeError for a backward through saved values already freed (its message is
    FREED_MESSAGE); a type of its own so that the compiler can tell it from other errors."""

    def __init__(self):
        super().__init__(FREED_MESSAGE)


class SavedTensor:
    """A tensor saved for backward: remembers its version to detect in-place changes, applies
    the active saved-tensor hooks, and is freed after backward unless retain_graph is set.

    An op's own output is saved without a reference to its grad_fn (that would be a cycle);
    ``unpack`` re-attaches the node so double backward flows through it."""

    __slots__ = ("tensor", "version", "is_output", "node_ref", "output_nr", "packed", "unpack_hook",
                 "freed", "name", "requires_grad")

    def __init__(self, tensor, node=None, is_output=False):
        if getattr(tensor, "_inference", False) and not grad_mode.is_inference_mode_enabled():
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. Please do not use Tensors created "
                "in inference mode in computation tracked by autograd. To work around this, you can "
                "make a clone to get a normal tensor and use it in autograd, or use "
                "`torch.no_grad()` instead of `torch.inference_mode()`."
            )
        self.freed = False
        self.is_output = is_output
        self.version = tensor._vc.value  # (Tensor._version)
        self.output_nr = tensor._output_nr
        # an op's output is saved before attach() marks it as requiring grad; it always does
        self.requires_grad = True if is_output else tensor._requires_grad
        self.node_ref = weakref.ref(node) if (is_output and node is not None) else None
        if is_output:
            tensor = tensor.detach()
        hooks = saved_hooks.current_hooks()
        if hooks is not None:
            pack, self.unpack_hook = hooks
            # pack hooks see an output with its grad_fn, as in PyTorch
            self.packed = pack(saved_hooks.output_for_pack(tensor, node, self.output_nr)
                               if is_output and node is not None else tensor)
            self.tensor = None
        else:
            self.packed, self.unpack_hook = None, None
            self.tensor = tensor

    def unpack(self, for_node=None):
        if self.freed:
            raise SavedTensorsFreed()
        if self.unpack_hook is not None:
            t = self.unpack_hook(self.packed)
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                    f"{type(t).__name__}"
                )
        else:
            t = self.tensor
            if t._version != self.version:
                creator = self.node_ref() if self.is_output else t._grad_fn
                raise RuntimeError(_modified_message(t, creator and creator.name(), self.output_nr,
                                                     self.version))
        if self.is_output and self.requires_grad:
            node = self.node_ref() if self.node_ref is not None else None
            alias = t.detach()
            alias._requires_grad = True
            alias._grad_fn = node
            alias._output_nr = self.output_nr
            alias._vc = t._vc
            if forward_ad._active_level is not None:  # forward-over-reverse keeps the tangent
                forward_ad.copy_tangent(t, alias)
            return alias
        return t

    def free(self):
        self.freed = True
        self.tensor = None
        self.packed = None


def _modified_message(t, creator, output_nr, expected):
    """PyTorch's message for a saved tensor that was modified in place after being saved."""
    desc = f"[tracegrad.{t.dtype.torch_name}Tensor {list(t.shape)}]"
    if creator is not None:
        desc += f", which is output {output_nr} of {re.sub(r'Backward[0-9]*$', '', creator)},"
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {desc} is at version {t._version}; expected version {expected} instead. "
        "Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with tracegrad.autograd.set_detect_anomaly(True)."
    )


_NONE_REGISTERED = types.MappingProxyType({})  # a node's hook tables until the first is added


class Node:
    """A backward function in the autograd graph (``tensor.grad_fn``).

    Every op recorded eagerly makes one, and few ever get a hook or metadata: their tables
    start as the shared, read-only ``_NONE_REGISTERED`` (class attributes) and are made at the
    first registration: making a node costs ~0.12 us instead of ~0.49 us."""

    _seq = itertools.count()
    _hooks = _prehooks = _NONE_REGISTERED  # handle id -> fn (register_hook / register_prehook)
    # hooks registered with Tensor.register_hook on this node's outputs, by output_nr: they
    # stay with the node even if the tensor is later modified in place (PyTorch semantics)
    _tensor_hooks = _NONE_REGISTERED
    _retain_grad_tensors = _NONE_REGISTERED  # output_nr -> weakref to a tensor that retains grad
    _released = False
    _anomaly_trace = None

    def __init__(self, next_functions=()):
        self._next_functions = tuple(next_functions)
        self._seq_nr = next(Node._seq)

    # -- PyTorch's Node interface
    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        return self._next_functions

    @property
    def metadata(self):
        """A dict of the user's own, kept with the node (made at the first read)."""
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self._metadata = {}
        return d

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        if self._hooks is _NONE_REGISTERED:
            self._hooks = _HookDict()
        h = RemovableHandle(self._hooks)
        self._hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        if self._prehooks is _NONE_REGISTERED:
            self._prehooks = _HookDict()
        h = RemovableHandle(self._prehooks)
        self._prehooks[h.id] = fn
        return h

    def _register_tensor_hook(self, output_nr, hook):
        if self._tensor_hooks is _NONE_REGISTERED:
            self._tensor_hooks = {}
        hooks = self._tensor_hooks.get(output_nr)
        if hooks is None:
            hooks = self._tensor_hooks[output_nr] = _HookDict()
        h = RemovableHandle(hooks)
        hooks[h.id] = hook
        return h

    def _register_retain_grad(self, output_nr, tensor):
        if self._retain_grad_tensors is _NONE_REGISTERED:
            self._retain_grad_tensors = {}
        self._retain_grad_tensors[output_nr] = weakref.ref(tensor)

    def __call__(self, *grads):
        return self.apply(list(grads))

    # -- to implement
    @property
    def num_outputs(self):
        return 1

    def apply(self, grad_outputs):
        """grad_outputs: one gradient (or None) per forward output; returns one per input."""
        raise NotImplementedError

    def release(self):
        """Free saved tensors (after backward without retain_graph)."""
        self._released = True

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"


class GradientEdge(tuple):
    """Where a gradient enters the graph: ``node`` (a grad_fn or a leaf's AccumulateGrad) and
    which of its outputs, ``output_nr`` (PyTorch's ``torch.autograd.graph.GradientEdge``).
    ``autograd.grad`` and ``backward`` take one wherever they take a tensor, as ``inputs``
    (the gradient arriving there) or as an output (with its ``grad_outputs`` given)."""

    __slots__ = ()

    def __new__(cls, node, output_nr, ownership_token=None):
        return tuple.__new__(cls, (node, output_nr, ownership_token))

    node = property(lambda self: self[0])
    output_nr = property(lambda self: self[1])
    ownership_token = property(lambda self: self[2])

    def __repr__(self):
        return f"GradientEdge(node={self.node!r}, output_nr={self.output_nr}, ownership_token=None)"


def get_gradient_edge(tensor):
    """The ``GradientEdge`` of ``tensor``: usable after the tensor itself is gone.

    >>> import tracegrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> y = x.exp()
    >>> edge = get_gradient_edge(y)
    >>> tg.autograd.grad((y * 2).sum(), edge)
    (tensor([2., 2.]),)
    """
    edge = gradient_edge(tensor)
    if edge is None:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    return GradientEdge(*edge)


def increment_version(tensor):
    """Bump the version counter of ``tensor`` (as an in-place write does), so that saved uses
    of it are refused by backward; for writes made behind autograd's back."""
    for t in ([tensor] if not isinstance(tensor, (list, tuple)) else tensor):
        t._vc.value += 1


def gradient_edge(tensor):
    """The (node, input_nr) a gradient for ``tensor`` flows into: its grad_fn or its
    AccumulateGrad node (leaves that require grad), or None. A ``GradientEdge`` is its own."""
    if isinstance(tensor, GradientEdge):
        return (tensor.node, tensor.output_nr)
    if not tensor.requires_grad:
        return None
    fn = tensor.grad_fn
    if fn is not None:
        return (fn, tensor._output_nr)
    return (AccumulateGrad.of(tensor), 0)


class AccumulateGrad(Node):
    """Accumulates into a leaf's ``.grad`` following PyTorch's layout rules."""

    def __init__(self, variable):
        super().__init__(())
        self.variable = variable

    @classmethod
    def of(cls, tensor):
        node = tensor._acc_node() if tensor._acc_node is not None else None
        if node is None:
            node = cls(tensor)
            tensor._acc_node = weakref.ref(node)
        return node

    def apply(self, grad_outputs):
        accumulate_into_leaf(self.variable, grad_outputs[0])
        return []


class OpNode(Node):
    """The backward of one registry primitive: calls its VJP rule on the saved values."""

    def __init__(self, op, inputs, attrs, out):
        # One pass over the inputs, fields read directly: a node is made for every recorded op
        # (the properties, comprehensions and Node.__init__ call were a quarter of its cost).
        skip = op.nondiff_inputs
        nexts, needs, meta = [], [], []
        for i, t in enumerate(inputs):
            meta.append((tuple(t._value.shape), t._dtype))
            wanted = t._requires_grad and i not in skip
            nexts.append(gradient_edge(t) if wanted else (None, 0))
            needs.append(wanted)
        self._next_functions = tuple(nexts)  # (Node.__init__, inline)
        self._seq_nr = next(Node._seq)
        self.op = op
        self.attrs = attrs
        self.input_meta = meta
        self.needs_input_grad = tuple(needs)
        self.saved = saved = {}
        for key in op.save:
            saved[key] = SavedTensor(out, self, is_output=True) if key == "out" else SavedTensor(inputs[key])

    @classmethod
    def attach(cls, op, inputs, attrs, out):
        node = cls(op, inputs, attrs, out)
        out._grad_fn = node
        out._requires_grad = True
        out._output_nr = 0
        anomaly.record_forward_trace(node)
        return node

    torch_name = None  # set by ``named_backward`` on the last node of a composite

    def name(self):
        if self.torch_name is not None:
            return self.torch_name
        return "".join(p.capitalize() for p in self.op.name.split("_")) + "Backward0"

    # PyTorch names the saved values of its nodes after the ATen arguments: our primitives'
    # input 0 is ``self``, input 1 ``other`` (further inputs keep their position), the output
    # is ``result``; attributes (dim, keepdim, ...) keep their own names.
    _SAVED_NAMES = {"self": 0, "other": 1, "result": "out", "out": "out"}

    def __getattr__(self, item):
        if item.startswith("_saved_"):
            key = item[len("_saved_"):]
            key = self._SAVED_NAMES.get(key, int(key) if key.isdigit() else key)
            saved = self.__dict__.get("saved", {})
            if key in saved:
                return saved[key].unpack(self)
            attrs = self.__dict__.get("attrs", {})
            if key in attrs:
                return attrs[key]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{item}'")

    def __dir__(self):
        names = {v: k for k, v in self._SAVED_NAMES.items() if k != "out"}
        extra = ["_saved_" + (names.get(k) or str(k)) for k in self.saved]
        extra += ["_saved_" + k for k in self.attrs]
        return sorted(set(super().__dir__()) | set(extra))

    def release(self):
        super().release()
        for s in self.saved.values():
            s.free()

    def _check_no_derivative(self):
        # as PyTorch: raise only when this backward needs the gradient (an input that requires
        # grad but lies off the path to the requested inputs is fine)
        for i in self.op.no_derivative:
            nxt = self._next_functions[i][0]
            raise_no_derivative(self.op.no_derivative_label, nxt is not None and (
                graph_task.current_graph_task_id() < 0 or graph_task.will_engine_execute_node(nxt)))

    def apply(self, grad_outputs, check_no_derivative=True):
        g = grad_outputs[0]
        if g is None:  # nothing flows back (PyTorch's undefined gradient)
            return [None] * len(self.input_meta)
        if self.op.no_derivative and check_no_derivative:  # (engine._deferred_grads: without)
            self._check_no_derivative()
        ctx = VJPContext(self)
        if g._value.__class__ is np.ndarray:  # (host tensors: the rule as it is; one test)
            grads = self.op.vjp(ctx, g)
        else:  # cuda (or traced): the rule's helper tensors made on the gradient's device
            grads = _placement.on_device_of(g, self.op.vjp, ctx, g)
        if len(grads) != len(self.input_meta):
            raise AssertionError(f"vjp of {self.op.name} returned {len(grads)} grads for "
                                 f"{len(self.input_meta)} inputs")
        return [fix_grad(gr, shape, dtype) if need else None
                for gr, (shape, dtype), need in zip(grads, self.input_meta, self.needs_input_grad)]


def raise_no_derivative(label, requested=True):
    """PyTorch's error for a derivative it does not define (``OpDef.no_derivative``), raised
    when ``requested`` (a gradient or tangent for such an input is asked for)."""
    if requested:
        raise NotImplementedError(f"the derivative for '{label}' is not implemented.")


def accumulate_into_leaf(var, g, create_graph=None, run_hooks=True):
    """PyTorch's AccumulateGrad: the first gradient is copied into a fresh ``.grad`` (never an
    alias of a tensor the user or another leaf can see); later ones are added in place, or out
    of place under create_graph so that ``.grad`` carries a graph."""
    if g is None:
        return
    if create_graph is None:
        create_graph = grad_mode.is_grad_enabled()
    current = var._get_grad()
    eager = not create_graph and _plain_eager()
    if current is None:
        if create_graph:
            new = g.clone()
        elif eager:
            new = _fresh_grad_like(var, g)
        else:
            with grad_mode.no_grad():
                new = g.clone()
        _set_grad(var, new)
    elif create_graph:
        _set_grad(var, current + g)
    elif eager and current._base is None and current.dtype is g.dtype \
            and current.shape == g.shape and not current._inference:
        # the common case without the op machinery: one NumPy add into the existing buffer
        np.add(current._value, g._value, out=current._value)
        current._bump_version()
    else:
        with grad_mode.no_grad():
            current.add_(g)
    if run_hooks and var._post_acc_hooks:
        for hook in list(var._post_acc_hooks.values()):
            hook(var)


def _plain_eager():
    """No tracer and no forward-AD level: tensors hold NumPy arrays and nothing records."""
    return trace.current_tracer() is None and forward_ad._active_level is None


def _fresh_grad_like(var, g):
    """A copy of ``g`` laid out like ``var`` (PyTorch's layout rule 1: the gradient of a dense
    parameter gets the parameter's strides)."""
    value = np.empty_like(var._value, dtype=g._value.dtype)
    np.copyto(value, g._value)
    return Tensor._make(value, g.dtype)


def _set_grad(var, value):
    if var.is_leaf:
        var.grad = value
    else:
        var._grad = value


def named_backward(name):
    """A decorator: the ``grad_fn`` of the composite's result is called ``name`` (PyTorch's, e.g.
    ``NllLossBackward0``) rather than after the primitive that happened to come last. ``name`` may
    be a function of the call's arguments (PyTorch's overloads: ``SumBackward0``/``1``; None
    leaves the name as it is). Every tensor of a tuple result is named. Only a
    node the call made is renamed: a result that is one of the inputs (in place, or returned as
    is) keeps its own."""
    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            out = fn(*args, **kwargs)
            # (a tuple result, as split's or max(dim)'s: each of its tensors is named)
            for result in (out if isinstance(out, (tuple, list)) else (out,)):
                node = getattr(result, "_grad_fn", None)
                # (the outermost composite names it: a loss ending in mean() is the loss's node)
                if isinstance(node, OpNode) and not any(a is result for a in args):
                    torch_name = name if isinstance(name, str) else name(*args, **kwargs)
                    if torch_name is not None:  # (None: a case PyTorch names after its parts)
                        node.torch_name = torch_name
            return out

        return call

    return wrap


class VJPContext:
    """What a VJP/JVP rule sees: saved values, attributes, input shapes and dtypes."""

    def __init__(self, node):
        self._node = node
        self.attrs = node.attrs
        self.shapes = [m[0] for m in node.input_meta]
        self.dtypes = [m[1] for m in node.input_meta]
        self.needs_input_grad = node.needs_input_grad

    def input(self, i):
        return self._node.saved[i].unpack(self._node)

    @property
    def out(self):
        return self._node.saved["out"].unpack(self._node)

    def __getattr__(self, item):
        try:
            return self.__dict__["attrs"][item]
        except KeyError:
            raise AttributeError(item) from None


def fix_grad(grad, shape, dtype):
    """The one place where broadcast gradients are summed back to the input's shape and cast
    to its dtype."""
    if grad is None:
        return None
    if tuple(grad.shape) != tuple(shape):
        # (lazy: a true cycle, the ops stand above autograd: the registry records its Nodes;
        # only a broadcast input's gradient comes here)
        from ..ops.helpers import sum_to_shape

        grad = sum_to_shape(grad, shape)
    if grad.dtype is not dtype:
        grad = grad.to(dtype)
    return grad


# PyTorch's torch.autograd.graph also hosts the saved-tensor hooks and multi-grad hooks.
from .saved_hooks import (allow_mutation_on_saved_tensors, disable_saved_tensors_hooks,  # noqa: E402,F401
                          save_on_cpu, saved_tensors_hooks)
from .multi_grad_hook import register_multi_grad_hook  # noqa: E402,F401

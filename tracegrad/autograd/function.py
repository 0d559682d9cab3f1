"""Custom differentiable operations: ``tg.autograd.Function`` (PyTorch's ``torch.autograd.Function``).

Subclass ``Function`` with static ``forward`` and ``backward`` (alias ``vjp``), optionally
``jvp`` and ``setup_context``, and call ``apply``:

>>> import tracegrad as tg
>>> class Exp(tg.autograd.Function):
...     @staticmethod
...     def forward(ctx, i):
...         result = i.exp()
...         ctx.save_for_backward(result)
...         return result
...
...     @staticmethod
...     def backward(ctx, grad_output):
...         result, = ctx.saved_tensors
...         return grad_output * result
>>> x = tg.tensor([0.0, 1.0], requires_grad=True)
>>> y = Exp.apply(x)
>>> y.grad_fn.name()
'ExpBackward'
>>> y.sum().backward()
>>> x.grad
tensor([1.0000, 2.7183])

As in PyTorch, the ctx *is* the graph node (``y.grad_fn``): attributes set on ctx in forward
are readable from ``y.grad_fn``. ``forward`` runs under ``no_grad`` and ``backward`` under the
grad mode of the backward pass (on when ``create_graph=True``), so a backward written with
tracegrad ops is differentiable again. Nothing here reads tensor values: while a trace is
active the same code records ``forward`` and, later, ``backward`` into the IR.
"""
from __future__ import annotations

import functools
import inspect
import warnings

from ..core import creation
from ..core import tracing as trace
from ..core.tensor import Tensor
from . import anomaly, forward_ad, grad_mode
from .graph import Node, SavedTensor, fix_grad, gradient_edge


def _is_tensor(x):
    return isinstance(x, Tensor)


class FunctionCtx:
    """The methods ``forward``/``setup_context`` call on ``ctx``."""

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for ``backward``, where ``ctx.saved_tensors`` returns them
        after checking that none was modified in place since."""
        for i, t in enumerate(tensors):
            if t is not None and not _is_tensor(t):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        """Save tensors (or None) for ``jvp``, where ``ctx.saved_tensors`` returns them."""
        for t in tensors:
            if t is not None and not _is_tensor(t):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you "
                                     "should save non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        """Declare inputs that ``forward`` modified in place; they must be returned."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        """Declare outputs that carry no gradient (backward still receives one, zeros)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class BackwardCFunction(FunctionCtx, Node):
    """The graph node (and ctx) of one ``Function.apply``. One subclass per Function, named
    ``<Function>Backward``. Records for the compiler: ``_forward_cls`` (the Function) and
    ``saved_for_backward`` (the ``SavedTensor`` list made from ``save_for_backward``)."""

    _forward_cls = None

    def __init__(self):
        Node.__init__(self, ())
        self.to_save = ()
        self.saved_for_forward = ()
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self.saved_for_backward = None  # [SavedTensor | None] once apply has wrapped the outputs
        self._input_meta = []  # per forward input: (shape, dtype) of a tensor, else None
        self._output_meta = []  # per forward output: (shape, dtype) of a tensor, else None
        self._in_jvp = False

    def name(self):
        return type(self).__name__

    @property
    def num_outputs(self):
        return len(self._output_meta)

    @property
    def saved_tensors(self):
        if self._in_jvp:
            return tuple(self.saved_for_forward)
        saved = self.saved_for_backward
        if saved is None:
            return tuple(self.to_save)  # not wrapped yet (forward/setup_context asked early)
        return tuple(None if s is None else s.unpack(self) for s in saved)

    def release(self):
        super().release()
        for s in self.saved_for_backward or ():
            if s is not None:
                s.free()

    def _get_user_fn(self):
        cls = self._forward_cls
        if cls.backward is not Function.backward and cls.vjp is not Function.vjp:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not "
                               "allowed. You should only implement one of them.")
        return cls.vjp if cls.vjp is not Function.vjp else cls.backward

    def apply(self, *args):
        """The engine calls ``apply([grad or None per forward output])`` and gets one checked
        gradient per input; called with tensors (``grad_fn.apply(g)``) it runs the user's
        backward directly, as PyTorch's ``BackwardCFunction.apply`` does."""
        if not (len(args) == 1 and isinstance(args[0], list)):
            return self._get_user_fn()(self, *args)
        grad_outputs = args[0]
        grads = list(grad_outputs) + [None] * (len(self._output_meta) - len(grad_outputs))
        if self.materialize_grads:
            for i, meta in enumerate(self._output_meta):
                if grads[i] is None and meta is not None:
                    grads[i] = creation.zeros(meta[0], dtype=meta[1])
        result = self._get_user_fn()(self, *grads)
        return self._check_grads(result)

    def _check_grads(self, result):
        """PyTorch's checks on what backward returned: count (extra trailing Nones are
        dropped), type, position, shape (broadcastable ones are summed back); dtypes are cast
        to the input's, as PyTorch does."""
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self._input_meta)
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(result)})")
        grads = []
        for i, (g, meta) in enumerate(zip(result, self._input_meta)):
            if g is None:
                grads.append(None)
                continue
            if not _is_tensor(g):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            if meta is None:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None "
                                   f"at position {i + 1}, but the corresponding forward input was "
                                   "not a Variable")
            if not self.needs_input_grad[i]:
                grads.append(None)
                continue
            shape, dtype = meta
            if tuple(g.shape) != shape and not _expandable(shape, tuple(g.shape)):
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index "
                                   f"{i} - got {list(g.shape)} but expected shape compatible with "
                                   f"{list(shape)}")
            grads.append(fix_grad(g, shape, dtype))
        return grads


def _expandable(shape, target):
    """Whether ``shape`` broadcasts to ``target`` (then the gradient is summed back)."""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))


class FunctionMeta(type):
    """Gives every Function subclass its node class ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class of custom differentiable operations; see the module docstring."""

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions are "
                      "all static, so you should invoke them on the class itself.",
                      DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                           "Please use new-style autograd function with static forward method.")

    @staticmethod
    def forward(*args, **kwargs):
        """``forward(ctx, *inputs)``, or ``forward(*inputs)`` with ``setup_context``."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Optional: fill ``ctx`` from the inputs and the output of a ctx-less ``forward``."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """One gradient per output in, one per input out (None where there is none)."""
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """One tangent per input in (None where there is none), one per output out."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` (under no_grad) and connect its outputs to a new graph node."""
        uses_setup = cls.setup_context is not Function.setup_context
        if uses_setup:
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        node = cls._backward_cls()
        # keyword arguments count as further inputs, in order (as in PyTorch)
        inputs = tuple(args) + tuple(kwargs.values())
        is_tensor = [_is_tensor(a) for a in inputs]
        node.needs_input_grad = tuple(t and a.requires_grad for t, a in zip(is_tensor, inputs))
        executable = grad_mode.is_grad_enabled() and any(node.needs_input_grad)
        if executable:  # edges first: forward may modify inputs and we then rebase them
            node._input_meta = [(tuple(a.shape), a.dtype) if t else None
                                for t, a in zip(is_tensor, inputs)]
            node._next_functions = tuple(
                (gradient_edge(a) if t else None) or (None, 0) for t, a in zip(is_tensor, inputs))
        with grad_mode.no_grad():
            if uses_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, outputs)
            else:
                outputs = cls.forward(node, *args, **kwargs)
        result = _wrap_outputs(node, inputs, outputs, executable, uses_setup)
        if executable:
            anomaly.record_forward_trace(node)
        _forward_ad(node, cls, inputs, result)
        return result


def _wrap_outputs(node, inputs, outputs, executable, uses_setup):
    """Connect forward's outputs to ``node`` following PyTorch's rules (custom_function.cpp):
    inputs returned as-is become views of them, dirty inputs are rebased onto the node,
    non-differentiable outputs stay detached; then the saved tensors are recorded."""
    is_tuple = isinstance(outputs, tuple)
    raw = outputs if is_tuple else (outputs,)
    input_ids = {id(a) for a in inputs if _is_tensor(a)}
    dirty = {id(t) for t in node.dirty_tensors}
    non_diff = {id(t) for t in node.non_differentiable}
    returned = {id(o) for o in raw if _is_tensor(o)}
    if dirty - returned:
        raise RuntimeError("Some elements marked as dirty during the forward method were not "
                           "returned as output. The inputs that are modified inplace must all be "
                           "outputs of the Function.")

    def differentiable(t):
        return executable and id(t) not in non_diff and t.dtype.is_floating_point

    for t in dict.fromkeys(node.dirty_tensors):
        if not (differentiable(t) and t._base is not None):  # a rebased view is bumped there
            t._bump_version()
    returned_as_is = set()
    wrapped = []
    for i, o in enumerate(raw):
        if not _is_tensor(o):
            if executable:
                node._output_meta.append(None)
            wrapped.append(o)
            continue
        if executable:
            node._output_meta.append((tuple(o.shape), o.dtype))
        is_input, is_dirty = id(o) in input_ids, id(o) in dirty
        if not differentiable(o):
            if is_input and not is_dirty and not o.requires_grad:
                o = _alias(o)
            elif is_input and o.requires_grad:
                o = o.detach()
            elif o.requires_grad and o._base is None:
                o.detach_()
        elif is_dirty:
            o = _rebase_dirty(node, i, o, len(returned))
        elif is_input:
            returned_as_is.add(id(o))
            o = _alias(o)
            _set_history(o, node, i)
            o._custom_function_view = True
        else:
            _set_history(o, node, i)
            o._custom_function_view = o._base is not None
        wrapped.append(o)
    if executable:
        node.saved_for_backward = [_save(node, t, uses_setup, returned_as_is)
                                   for t in node.to_save]
    return tuple(wrapped) if is_tuple else wrapped[0]


def _set_history(t, node, output_nr):
    t._grad_fn, t._output_nr, t._requires_grad = node, output_nr, True


def _alias(t):
    """An input returned as-is: a new view of it (PyTorch's ``view_as(self)``)."""
    from ..core.views import make_view  # (lazy: a true cycle, the view rules stand above autograd)

    return make_view(t.detach(), t, _identity, _identity)


def _identity(t):
    return t


def check_custom_function_view(t):
    """PyTorch forbids in-place ops on an output of a Function that is a view (of an input, or
    an input returned as-is): rebasing the view would bypass the custom backward."""
    if t._custom_function_view and t._grad_fn is not None and grad_mode.is_grad_enabled():
        raise custom_function_view_error(t, "is being modified inplace")


def custom_function_view_error(t, what):
    name = t._grad_fn.name() if t._grad_fn is not None else "a custom Function"
    name = name[:-len("Backward")] if name.endswith("Backward") else name
    return RuntimeError(
        f"Output {t._output_nr} of {name} is a view and {what}. This view was created inside a "
        "custom Function (or because an input was returned as-is) and the autograd logic to "
        "handle view+inplace would override the custom backward associated with the custom "
        "Function, leading to incorrect gradients. This behavior is forbidden. You can fix this "
        "by cloning the output of the custom Function."
    )


def _rebase_dirty(node, output_nr, t, n_tensor_outputs):
    """A dirty input's history continues at ``node``; a view's base is rebased around it."""
    from ..core import views  # (lazy: as _alias's)

    if t.is_leaf and t.requires_grad:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                           "operation.")
    if t._base is not None and t._base.is_leaf and t._base.requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    t._grad = None  # PyTorch resets the grad and hooks of a tensor modified by a Function
    if t._base is None:
        _set_history(t, node, output_nr)
        return t
    if n_tensor_outputs > 1:
        raise RuntimeError("If your Function modifies inplace an input that is a view of another "
                           "Tensor, your Function cannot return more than one Tensor. This is not "
                           "supported by the current autograd engine. You should either make sure "
                           "the input is not a view (using .clone() for example) or make your "
                           "Function only return one Tensor (potentially splitting it into two "
                           "Functions: one doing the inplace that returns a single Tensor and a "
                           "second one that does the other operations).")
    new_value = t.detach()
    _set_history(new_value, node, output_nr)
    views._rebase_through_view(t, t._base, new_value, trace.current_tracer())
    return t


def _save(node, t, uses_setup, returned_as_is):
    if t is None:
        return None
    if uses_setup and id(t) in returned_as_is:
        raise RuntimeError("An input that has been returned as-is as output is being saved for "
                           "backward. This is not supported if you override setup_context. You "
                           "should return and save a view of the input instead, e.g. with "
                           "x.view_as(x) or setup ctx inside the forward function itself.")
    return SavedTensor(t, node, is_output=t._grad_fn is node)


def _forward_ad(node, cls, inputs, result):
    """Forward-mode AD through a Function: ``jvp`` maps input tangents to output tangents
    (forward_ad.function_jvp does the work); inside it ``ctx.saved_tensors`` returns what
    ``save_for_forward`` saved, as in PyTorch."""
    if forward_ad._active_level is None:
        return
    node._in_jvp = True
    try:
        forward_ad.function_jvp(cls, node, inputs,
                                result if isinstance(result, tuple) else (result,))
    finally:
        node._in_jvp = False


def once_differentiable(fn):
    """Decorate a ``backward`` that is not differentiable itself: it runs under no_grad, and
    differentiating its result (double backward) raises a RuntimeError."""

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not grad_mode.is_grad_enabled():
            return outputs
        if not any(_is_tensor(a) and a.requires_grad for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        err = DelayedError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable", len(outs))
        marked = []
        for i, o in enumerate(outs):
            if _is_tensor(o):
                o = o.detach()
                _set_history(o, err, i)
            marked.append(o)
        return tuple(marked) if len(marked) > 1 else marked[0]

    return wrapper


class DelayedError(Node):
    """A node whose backward raises: the history of once_differentiable results."""

    def __init__(self, msg, num_outputs):
        super().__init__(())
        self.msg = msg
        self._n = num_outputs

    def name(self):
        return "Error"

    @property
    def num_outputs(self):
        return self._n

    def apply(self, grad_outputs):
        raise RuntimeError(self.msg)

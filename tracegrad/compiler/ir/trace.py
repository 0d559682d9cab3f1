"""The tracer: while active, every dispatched op is recorded into an IR Graph instead of
running. Tensors created inside the traced function hold IR values; tensors the function
reads without receiving them (parameters, optimizer state, globals) are *lifted*: they become
graph inputs bound by reference, and in-place writes to them (and ``.grad`` assignments) are
recorded as functional updates plus a write-back, so the user's tensors are untouched while
tracing and hold exactly what eager mode would leave there after the program runs.
"""
from __future__ import annotations

from ...core.tracing import (GraphBreak, _state, _TraceState, _user_location,  # noqa: F401
                             current_tracer, graph_break, paused, tracing)

from ...core.device import CPU, CUDA0
from ...core.storage import DeviceArray


class Lifted:
    """A user tensor read by the traced function, bound at every call by ``where``:
    ("data", tensor) its storage, ("grad", tensor) the storage of its .grad, or
    ("arg_grad", i) the storage of the .grad of flat argument i."""

    __slots__ = ("tensor", "value", "where")

    def __init__(self, tensor, value, where):
        self.tensor = tensor
        self.value = value
        self.where = where


class Tracer:
    # the device the traced program runs on: cuda once a tensor it reads (an argument or a
    # lifted one) is a cuda tensor; what ``Tensor.device`` says of the values traced here
    device = CPU

    def __init__(self, graph):
        self.graph = graph
        self.lifted = []  # [Lifted], in order of first use
        self._shadow = {}  # id(ndarray) -> current Value of that storage
        self._owner = {}  # id(ndarray) -> Lifted (also keeps the storage alive)
        self._grad_owner = {}  # id(grad tensor) -> where ("grad", owner) / ("arg_grad", i)
        self.mutated = []  # Lifted whose storage the program writes back
        self.grad_state = {}  # id(tensor) -> [target, initial_grad, current_grad]
        self.arg_symbols = {}  # id(symbolic arg) -> flat argument index
        self.arg_reals = {}  # flat argument index -> the real tensor at trace time
        self.arg_symbol_tensors = {}  # flat argument index -> its symbolic tensor
        self.seed_inputs = []
        self.guards = []  # ("grad_is_none", target, bool)

    # ------------------------------------------------------------------ values
    def value_of(self, t):
        """The IR value currently held by tensor ``t`` (lifting it when first seen)."""
        from .graph import Value

        v = t._value
        if isinstance(v, Value):
            if t._base is not None and getattr(t, "_traced_seen", None) != t._vc.value:
                self._refresh_view(t)
            return t._value
        cur = self._shadow.get(id(v))
        if cur is None:
            cur = self._lift(t)
        return cur

    def _refresh_view(self, t):
        """The base of traced view ``t`` was written in place: re-derive the view's value."""
        from ...autograd import grad_mode

        t._traced_seen = t._vc.value
        with grad_mode.no_grad():
            fresh = t._view_fn(t._base)
        t._value = self.value_of(fresh)

    def _lift(self, t):
        from ...autograd import forward_ad

        if forward_ad._tangent(t) is not None:  # its tangent would be dropped silently
            graph_break("the function reads a forward-AD dual tensor (make_dual) from outside: "
                        "compiled programs do not propagate the tangents of tensors passed in")
        where = self._grad_owner.get(id(t), ("data", t))
        label = "lifted" if where[0] == "data" else "lifted grad"
        self.note_device(t)
        value = self.graph.add_input(tuple(t.shape), t.dtype, label)
        entry = Lifted(t, value, where)
        self.lifted.append(entry)
        self._shadow[id(t._value)] = value
        self._owner[id(t._value)] = entry
        return value

    def note_device(self, t):
        """Tensor ``t`` is read by the trace: a cuda one makes the trace's device cuda."""
        if t._value.__class__ is DeviceArray:
            self.device = CUDA0

    def record(self, op, inputs, attrs, shape, dtype):
        values = [self.value_of(t) for t in inputs]
        return self.graph.add_node(op, values, attrs, shape, dtype)

    def constant(self, array, dtype):
        return self.graph.const(array, dtype)

    def seed_input(self):
        v = self.graph.add_input((), _int64(), "seed")
        self.seed_inputs.append(v)
        return v

    def assign(self, t, new):
        """In-place write of tensor ``new``'s value into ``t``."""
        from .graph import Value

        value = self.value_of(new)
        if isinstance(t._value, Value):
            t._value = value
            t._traced_seen = t._vc.value + 1  # the caller bumps the version right after
            return
        key = id(t._value)
        if key not in self._shadow:
            self._lift(t)
        self._shadow[key] = value
        entry = self._owner[key]
        if entry not in self.mutated:
            self.mutated.append(entry)

    def current_value(self, entry):
        return self._shadow[id(entry.tensor._value)]

    def read_value(self, t, what):
        """``t.item()`` / ``bool(t)`` / ``t.numpy()`` ... on a tensor that is not symbolic: a
        tensor from outside the function. A scalar read (``.item()``, ``bool()``) is
        specialised: the program is reused only while the tensor still holds that value. Other
        reads, and reads of a tensor the function itself wrote, break the graph."""
        shadow = self._shadow.get(id(t._value))
        if shadow is not None and shadow.kind != "input":
            graph_break(f"{what} on a tensor the compiled function modified in place")
        if what not in (".item()", "bool()"):
            graph_break(f"{what} on a tensor read from outside the function (its values would be "
                        "baked into the program)")
        if t.numel() == 1:
            value = t._value.reshape(()).item()
            # the description names the tensor once capture knows its name (see capture.py)
            self.guard_value(("item", t),
                             lambda t=t: t._value.reshape(()).item() if t.numel() == 1 else None, value)

    # ------------------------------------------------------------------ .grad of user tensors
    def guard_value(self, description, getter, value):
        """Specialise on a Python value the function read from outside its arguments (an
        optimizer's learning rate, ...): the program is reused only while ``getter()`` still
        equals ``value``."""
        self.guards.append(("value", description, getter, value))

    def _grad_target(self, t):
        """(target, real tensor) for the .grad of ``t``, or None for tensors made in the trace."""
        from .graph import Value

        idx = self.arg_symbols.get(id(t))
        if idx is not None:
            return ("arg_grad", idx), self.arg_reals[idx]
        if isinstance(t._value, Value):
            return None
        return ("grad", t), t

    def get_grad(self, t):
        found = self._grad_target(t)
        if found is None:
            return t._grad
        target, real = found
        state = self.grad_state.get(id(t))
        if state is None:
            initial = real._grad
            self.guards.append(("grad_is_none", target, initial is None))
            if initial is not None:
                self._grad_owner[id(initial)] = target
            state = self.grad_state[id(t)] = [target, initial, initial]
        return state[2]

    def set_grad(self, t, value):
        found = self._grad_target(t)
        if found is None:
            t._grad = value
            return
        state = self.grad_state.get(id(t))
        if state is None:
            state = self.grad_state[id(t)] = [found[0], _UNREAD, None]
        state[2] = value


class _Unread:
    def __repr__(self):
        return "<unread>"


_UNREAD = _Unread()


def _int64():
    from ...core import dtypes

    return dtypes.int64

"""Program: one captured specialisation of a compiled function: its IR, guards, executable(s)
and the logic that binds arguments, runs, writes back into user tensors and wires the
compiled backward into autograd.
"""
from __future__ import annotations

import numpy as np

from . import dtypes as _dt
from .autograd.graph import FREED_MESSAGE, Node, gradient_edge
from .ir.capture import bind_inputs
from .tensor import Tensor


class SavedInfo:
    """One value the compiled forward keeps for the backward."""

    __slots__ = ("name", "shape", "dtype", "bytes")

    def __init__(self, name, shape, dtype):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.bytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize

    def __repr__(self):
        return f"SavedInfo({self.name}: {self.dtype.short}{list(self.shape)}, {self.bytes} bytes)"


class Program:
    """A compiled specialisation. ``graph`` is the whole call; ``forward``/``backward`` are
    set when the outputs are differentiable after the call; ``saved`` describes the values the
    forward keeps for the backward; ``source`` is the generated code; ``guards`` the
    conditions under which this program is reused."""

    def __init__(self, capture, backend, forward=None, backward=None, saved_values=(),
                 grad_positions=(), executable=None, backward_executable=None):
        self.capture = capture
        self.graph = capture.graph
        self.forward = forward
        self.backward = backward
        self.backend = backend
        self.executable = executable
        self.backward_executable = backward_executable
        self.grad_positions = list(grad_positions)  # graph input index per backward output
        fwd = forward if forward is not None else self.graph
        n_user = len(self.graph.outputs)
        self.saved = [SavedInfo(v.ref(), v.shape, v.dtype) for v in fwd.outputs[n_user:]] if forward else []
        self.calls = 0

    # ------------------------------------------------------------------ inspection
    @property
    def source(self):
        parts = [self.executable.source]
        if self.backward_executable is not None:
            parts.append(self.backward_executable.source)
        return "\n".join(parts)

    @property
    def guards(self):
        cap = self.capture
        out = [f"grad_mode == {cap.grad_enabled}"]
        for i, g in enumerate(cap.arg_guards):
            if g[0] == "tensor":
                out.append(f"arg {i}: Tensor {g[2].short}{list(g[1])} requires_grad={g[3]}")
            elif g[0] == "value":
                out.append(f"arg {i} == {g[2]!r}")
            else:
                out.append(f"arg {i} is <object at {hex(g[1])}>")
        for g in cap.state_guards:
            if g[0] == "data":
                out.append(f"lifted tensor at {hex(id(g[1]))}: {g[3].short}{list(g[2])} "
                           f"requires_grad={g[4]}")
            elif g[0] == "value":
                out.append(f"{g[1]} == {g[3]!r}")
            elif g[0] == "grad_shape":
                out.append(f".grad of {_target_name(g[1])}: {g[3].short}{list(g[2])}")
            else:
                out.append(f".grad of {_target_name(g[1])} is {'None' if g[2] else 'not None'}")
        return out

    @property
    def saved_bytes(self):
        return sum(s.bytes for s in self.saved)

    def __str__(self):
        parts = [str(self.graph)]
        if self.forward is not None:
            parts += ["", str(self.forward), "", str(self.backward), "",
                      f"saved for backward: {len(self.saved)} values, {self.saved_bytes} bytes"]
            parts += [f"  {s.name}: {s.dtype.short}{list(s.shape)} ({s.bytes} bytes)" for s in self.saved]
        return "\n".join(parts)

    def to_dot(self):
        return (self.forward or self.graph).to_dot()

    # ------------------------------------------------------------------ guards
    def mismatch(self, flat_args, grad_enabled):
        """None when this program may run for these arguments, else the reason it may not."""
        cap = self.capture
        if grad_enabled != cap.grad_enabled:
            return f"grad mode changed to {grad_enabled}"
        if len(flat_args) != len(cap.arg_guards):
            return f"{len(flat_args)} arguments instead of {len(cap.arg_guards)}"
        for i, (x, g) in enumerate(zip(flat_args, cap.arg_guards)):
            kind = g[0]
            if kind == "tensor":
                if not isinstance(x, Tensor):
                    return f"arg {i} is no longer a Tensor"
                if x._value.shape != g[1] or x._dtype is not g[2] or x._requires_grad != g[3]:
                    return (f"arg {i}: expected {g[2].short}{list(g[1])} requires_grad={g[3]}, got "
                            f"{x.dtype.short}{list(x.shape)} requires_grad={x.requires_grad}")
            elif kind == "value":
                if type(x) is not g[1] or x != g[2]:
                    return f"arg {i}: expected {g[2]!r}, got {x!r}"
            elif id(x) != g[1]:
                return f"arg {i} is a different object"
        for g in cap.state_guards:
            reason = _state_mismatch(g, flat_args)
            if reason:
                return reason
        return None

    # ------------------------------------------------------------------ running
    def run(self, flat_args):
        cap = self.capture
        arrays = bind_inputs(cap.bindings, flat_args)
        results = self.executable(arrays)
        graph = self.forward if self.forward is not None else self.graph
        n_out, n_wb = len(self.graph.outputs), len(graph.writebacks)
        n_all = len(graph.outputs)
        outs = results[:n_out]
        saved = results[n_out:n_all]
        wbs = results[n_all:n_all + n_wb]
        _apply_writebacks(cap, wbs, flat_args, graph)
        out_tensors = [Tensor._make(_own(a, arrays), v.dtype) for a, v in zip(outs, self.graph.outputs)]
        if self.forward is not None:
            self._attach_backward(out_tensors, saved, flat_args)
        for k in cap.freed_outputs:
            _FreedNode.attach(out_tensors[k])
        self.calls += 1
        leaves = [out_tensors[ref] if kind == "value" else ref for kind, ref in cap.out_leaves]
        from . import pytree

        return pytree.unflatten(cap.out_spec, leaves)

    def _attach_backward(self, out_tensors, saved, flat_args):
        cap = self.capture
        edges = []
        for pos in self.grad_positions:
            b = cap.bindings[pos]
            t = flat_args[b.ref] if b.kind == "arg" else b.ref
            edges.append(gradient_edge(t))
        node = CompiledBackward(self, saved, edges, [t for t in out_tensors])
        for nr, (k, _) in enumerate(cap.diff_outputs):
            t = out_tensors[k]
            t._requires_grad, t._grad_fn, t._output_nr = True, node, nr


def _own(a, inputs):
    """Outputs must not alias inputs or each other's buffers (the interpreter may share)."""
    if any(a is i for i in inputs):
        return a.copy()
    return a


def _target_name(target):
    kind, ref = target
    return f"arg {ref}" if kind == "arg_grad" else f"tensor at {hex(id(ref))}"


def _real(target, flat_args):
    kind, ref = target
    return flat_args[ref] if kind == "arg_grad" else ref


def _state_mismatch(g, flat_args):
    kind = g[0]
    if kind == "data":
        t = g[1]
        if t._value.shape != g[2] or t._dtype is not g[3] or t._requires_grad != g[4]:
            return f"lifted tensor changed: expected {g[3].short}{list(g[2])}, got {t.dtype.short}{list(t.shape)}"
    elif kind == "grad_is_none":
        real = _real(g[1], flat_args)
        if (real._grad is None) != g[2]:
            return f".grad of {_target_name(g[1])} is {'not ' if g[2] else ''}None now"
    elif kind == "value":
        now = g[2]()
        if type(now) is not type(g[3]) or now != g[3]:
            return f"{g[1]} changed from {g[3]!r} to {now!r}"
    elif kind == "grad_shape":
        real = _real(g[1], flat_args)
        gr = real._grad
        if gr is None or gr._value.shape != g[2] or gr._dtype is not g[3]:
            return f".grad of {_target_name(g[1])} changed"
    return None


def _apply_writebacks(cap, arrays, flat_args, graph):
    """Copy results into the user's tensors, as eager mode would have left them."""
    written = set()
    for (kind, ref), a, (v, _) in zip(cap.writebacks, arrays, graph.writebacks):
        if kind == "arg":
            _copy_into(flat_args[ref], a)
        elif kind == "data":
            _copy_into(ref, a)
        elif kind in ("grad", "arg_grad"):
            _copy_into(_real((kind, ref), flat_args)._grad, a)
        elif kind == "set_grad":
            real = _real(ref, flat_args)
            fresh = a if id(a) not in written else a.copy()
            real._grad = Tensor._make(np.array(fresh, copy=True) if fresh.base is not None or
                                      not fresh.flags.writeable else fresh, v.dtype)
        written.add(id(a))
    for action in cap.actions:
        if action[0] == "grad_none":
            _real(action[1], flat_args)._grad = None
        else:
            _real(action[1], flat_args)._grad = action[2]


def _copy_into(t, a):
    np.copyto(t._value, a)
    t._bump_version()


class CompiledBackward(Node):
    """The grad_fn of a compiled forward's outputs: runs the compiled backward program."""

    def __init__(self, program, saved, edges, outputs):
        super().__init__([e if e is not None else (None, 0) for e in edges])
        self.program = program
        self.saved_arrays = list(saved)
        self.out_meta = [(tuple(outputs[k].shape), outputs[k].dtype) for k, _ in program.capture.diff_outputs]

    def name(self):
        return "CompiledFunctionBackward"

    @property
    def num_outputs(self):
        return len(self.out_meta)

    def apply(self, grad_outputs):
        from .autograd import grad_mode

        if self.saved_arrays is None:
            raise RuntimeError(FREED_MESSAGE)
        if grad_mode.is_grad_enabled():
            raise RuntimeError(
                "double backward through a tg.compile'd function is not supported: its backward is "
                "compiled code. Differentiate twice inside the compiled function instead "
                "(tg.autograd.grad(..., create_graph=True) is captured)."
            )
        grads = [np.zeros(s, d.np) if g is None else np.ascontiguousarray(g._value, dtype=d.np)
                 for g, (s, d) in zip(grad_outputs, self.out_meta)]
        results = self.program.backward_executable(self.saved_arrays + grads)
        return [Tensor._make(np.array(r, copy=True), _dt.from_numpy_dtype(r.dtype)) for r in results]

    def release(self):
        super().release()
        self.saved_arrays = None


class _FreedNode(Node):
    """grad_fn of results whose graph a traced backward() already consumed (as in eager)."""

    @classmethod
    def attach(cls, t):
        t._requires_grad, t._grad_fn = True, cls()

    def name(self):
        return "CompiledFunctionBackward"

    def apply(self, grad_outputs):
        raise RuntimeError(FREED_MESSAGE)

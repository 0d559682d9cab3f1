"""Program: one captured specialisation of a compiled function: its IR, guards, executable(s)
and the logic that binds arguments, runs, writes back into user tensors and wires the
compiled backward into autograd.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes as _dt
from ..autograd.graph import Node, SavedTensorsFreed, _modified_message, gradient_edge
from .ir.capture import bind_inputs
from .ir.pystate import ModuleStateGuard, same_value
from ..core.tensor import Tensor


class SavedInfo:
    """One value the compiled forward keeps for the backward: ``name`` (its ``%N`` in the
    forward listing), ``shape``, ``dtype`` and ``bytes``."""

    __slots__ = ("name", "shape", "dtype", "bytes")

    def __init__(self, name, shape, dtype):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.bytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize

    def __repr__(self):
        return f"SavedInfo({self.name}: {self.dtype.short}{list(self.shape)}, {self.bytes} bytes)"


class Program:
    """A compiled specialisation. ``graph`` is the whole call as the user sees it (after the
    passes); ``forward``/``backward`` are set when the outputs are differentiable after the
    call; ``saved`` describes the values the forward keeps for the backward (``saved_choice``
    says whether the min-cut or the saved-tensor annotations chose them, and
    ``annotation_bytes`` what the annotations would keep); ``source`` is the generated code;
    ``guards`` the conditions under which this program is reused."""

    def __init__(self, capture, backend, graph, forward=None, backward=None, grad_positions=(),
                 executable=None, backward_executable=None, saved_choice=None,
                 annotation_bytes=0):
        self.capture = capture
        self.graph = graph
        self.forward = forward
        self.backward = backward
        self.backend = backend
        self.executable = executable
        self.backward_executable = backward_executable
        self.grad_positions = list(grad_positions)  # graph input index per backward output
        self.saved = [SavedInfo(v.ref(), v.shape, v.dtype) for v in forward.saved] if forward else []
        self.saved_choice = saved_choice
        self.annotation_bytes = annotation_bytes
        self.calls = 0
        self._targets = _target_getters(capture, executable, len((forward or graph).outputs))
        self._fast_check = None  # fastpath.compile_check(capture), made at the first call
        self._fast_run = None  # fastpath.compile_run(...), or False where it does not apply

    # ------------------------------------------------------------------ inspection
    @property
    def source(self):
        parts = [self.executable.source]
        if self.backward_executable is not None:
            parts.append(self.backward_executable.source)
        return "\n".join(parts)

    @property
    def guards(self):
        """The conditions under which this program is reused, one readable line each."""
        cap = self.capture
        names = cap.arg_names
        out = [f"grad_mode == {cap.grad_enabled}"]
        for i, g in enumerate(cap.arg_guards):
            name = names[i] if i < len(names) else str(i)
            if g[0] == "tensor":
                out.append(f"{name}: Tensor {g[2].short}{list(g[1])} requires_grad={g[3]}{_on(g[4])}")
            elif g[0] == "value":
                out.append(f"{name} == {g[2]!r}")
            elif g[0] == "array":
                out.append(f"{name}: ndarray {g[2]}{list(g[1])} with the same values")
            else:
                out.append(f"{name} is the same {type(g[2]).__name__} object")
        naming = getattr(cap, "naming", None)
        for g in cap.state_guards:
            if g[0] == "data":
                out.append(f"{g[5]}: the same tensor, {g[3].short}{list(g[2])} requires_grad={g[4]}{_on(g[6])}")
            elif g[0] == "value":
                out.append(f"{g[1]} == {g[3]!r}")
            elif g[0] == "grad_shape":
                out.append(f"{g[4]}: {g[3].short}{list(g[2])}")
            elif g[0] == "py":
                out.append(_py_guard_line(g[1]))
            elif g[0] == "alias":  # (ir/aliasing.py)
                out.append(g[1].describe())
            else:
                name = naming.of(g[1]) if naming else str(g[1])  # names the .grad itself
                out.append(f"{name} is {'None' if g[2] else 'not None'}")
        return out

    @property
    def saved_bytes(self):
        return sum(s.bytes for s in self.saved)

    def saved_report(self):
        """The saved-tensor report: one line per saved value, and which choice made it."""
        n = len(self.saved)
        lines = [f"saved for backward ({self.saved_choice}): {n} value{'s' if n != 1 else ''}, "
                 f"{self.saved_bytes} bytes (the saved-tensor annotations: "
                 f"{self.annotation_bytes} bytes)"]
        lines += [f"  {s.name}: {s.dtype.short}{list(s.shape)} ({s.bytes} bytes)" for s in self.saved]
        return "\n".join(lines)

    def __str__(self):
        if self.forward is None:
            return str(self.graph)
        return "\n".join([str(self.forward), "", str(self.backward), "", self.saved_report()])

    def to_dot(self):
        return (self.forward or self.graph).to_dot()

    # ------------------------------------------------------------------ guards
    def mismatch(self, flat_args, grad_enabled):
        """None when this program may run for these arguments, else the reason it may not."""
        check = self._fast_check
        if check is None:
            from . import fastpath

            check = self._fast_check = fastpath.compile_check(self.capture)
        if check(flat_args, grad_enabled):  # the same conditions as below, straight-line
            return None
        cap = self.capture
        if grad_enabled != cap.grad_enabled:
            return f"grad mode changed to {grad_enabled}"
        if len(flat_args) != len(cap.arg_guards):
            return f"{len(flat_args)} arguments instead of {len(cap.arg_guards)}"
        for i, (x, g) in enumerate(zip(flat_args, cap.arg_guards)):
            reason = _arg_mismatch(x, g)
            if reason:
                return f"argument {cap.arg_names[i]}: {reason}"
        for g in cap.state_guards:
            reason = _state_mismatch(g, flat_args, cap)
            if reason:
                return reason
        return None

    # ------------------------------------------------------------------ running
    def run(self, flat_args):
        fast = self._fast_run
        if fast is None:
            fast = self._fast_run = self._compile_run()
        if fast:
            return fast(flat_args)
        cap = self.capture
        arrays = bind_inputs(cap.bindings, flat_args)
        versions = self._input_versions(flat_args) if self.forward is not None else None
        getters = self._targets
        if getters is None:
            results = self._execute(arrays)
        else:  # user storage the executable may write directly (see _target_getters)
            results = self._execute(arrays, [arrays[r] if c == 0 else _target(c, r, flat_args)
                                             for c, r in getters])
        graph = self.forward if self.forward is not None else self.graph
        n_out, n_wb = len(self.graph.outputs), len(graph.writebacks)
        n_all = len(graph.outputs)
        saved = results[n_out:n_all]
        if getattr(self.executable, "fresh_results", False):
            # every result is a new buffer (the C backend): nothing can alias the inputs
            outs, wbs = results[:n_out], results[n_all:n_all + n_wb]
        else:
            outs = _distinct(results[:n_out], arrays)
            # a write-back may read storage another write-back overwrites (a swap): copy first
            wbs = [np.array(a, copy=True) if _alias_of(a, arrays) is not None else a
                   for a in results[n_all:n_all + n_wb]]
        _apply_writebacks(cap, wbs, flat_args, graph, arrays)
        out_tensors = [Tensor._make(a, v.dtype) for a, v in zip(outs, self.graph.outputs)]
        if self.forward is not None:
            self._attach_backward(out_tensors, saved, flat_args, arrays, versions)
        for k in cap.freed_outputs:
            _FreedNode.attach(out_tensors[k])
        self.calls += 1
        leaves = [out_tensors[ref] if kind == "value" else flat_args[ref] if kind == "arg" else ref
                  for kind, ref in cap.out_leaves]
        if cap.view_outputs:  # results that eager returns as views of inputs: views here too
            leaves = _view_results(cap, leaves, flat_args)
        from ..core import pytree

        return pytree.unflatten(cap.out_spec, leaves)

    def _compile_run(self):
        """The generated run (fastpath.compile_run) where results are fresh buffers, else
        False: the interpreter may return views of inputs, which run() below sorts out."""
        if not getattr(self.executable, "fresh_results", False) or self.capture.view_outputs:
            return False  # (view results are remade by run(): rare enough to leave generic)
        from . import fastpath

        return fastpath.compile_run(self, self._targets) or False

    def _execute(self, arrays, targets=None):
        """Run the executable (``run_into`` when ``targets`` are given); while
        tg.autograd.profiler.profile records, the whole program is one row named
        "compiled <graph name>" (its ops run inside the executable)."""
        from ..ops import registry

        exe = self.executable
        prof = registry._profiler
        if prof is None:
            return exe(arrays) if targets is None else exe.run_into(arrays, targets)
        r = prof._Range(f"compiled {self.graph.name}", [list(a.shape) for a in arrays], "compiled")
        try:
            return exe(arrays) if targets is None else exe.run_into(arrays, targets)
        finally:
            r.close()

    def _input_versions(self, flat_args):
        """Per graph input, the user tensor bound to it and its version before the call: a
        saved input modified in place before the backward runs is an error, as in eager."""
        out = []
        for b in self.capture.bindings:
            if b.kind == "arg":
                t = flat_args[b.ref]
            elif b.kind == "data":
                t = b.ref
            else:
                out.append(None)
                continue
            out.append((t, t._version))
        return out

    def _attach_backward(self, out_tensors, saved, flat_args, arrays, versions):
        cap = self.capture
        edges = []
        for pos in self.grad_positions:
            b = cap.bindings[pos]
            t = flat_args[b.ref] if b.kind == "arg" else b.ref
            edges.append(gradient_edge(t))
        checks = []
        fresh = getattr(self.executable, "fresh_results", False)
        for a in saved:  # saved arrays in user storage: remember the owner's version
            k = None if fresh else _alias_of(a, arrays)
            checks.append(versions[k] if k is not None else None)
        node = CompiledBackward(self, saved, checks, edges, out_tensors)
        for nr, (k, _) in enumerate(cap.diff_outputs):
            t = out_tensors[k]
            t._requires_grad, t._grad_fn, t._output_nr = True, node, nr


_INPLACE_KINDS = ("arg", "data", "grad", "arg_grad")


def inplace_pairs(cap):
    """(write-back index, graph input index or -1) for every write-back into a user tensor's
    own storage (an argument, a parameter or optimizer state, an existing .grad): the C
    backend may write those results in place. The input is the one bound to that same
    storage (the program reads the old value through it), -1 when the program never reads it."""
    from .ir.aliasing import binding_key

    first = {}  # (by key: a search of the bindings per write-back was quadratic in the parameters)
    for n, b in enumerate(cap.bindings):
        if b.kind in _INPLACE_KINDS:
            first.setdefault(binding_key(b.kind, b.ref), n)
    return tuple((j, first.get(binding_key(kind, ref), -1))
                 for j, (kind, ref) in enumerate(cap.writebacks) if kind in _INPLACE_KINDS)


def _target_getters(cap, exe, n_outputs):
    """Per in-place result of ``exe`` (``exe.inplace``), how to find its target at call time:
    (0, input index) -- the paired input's array, the same storage -- or (kind code, ref) for
    ``_target``; None when the executable writes nothing in place."""
    slots = getattr(exe, "inplace", None)
    if not slots or not hasattr(exe, "run_into"):
        return None
    codes = {"arg": 1, "data": 2, "grad": 3, "arg_grad": 4}
    out = []
    for pos, k in slots:
        kind, ref = cap.writebacks[pos - n_outputs]
        out.append((0, k) if k >= 0 else (codes[kind], ref))
    return out


def _target(code, ref, flat_args):
    if code == 1:
        return flat_args[ref]._value
    if code == 2:
        return ref._value
    if code == 3:
        return ref._grad._value
    return flat_args[ref]._grad._value


def _arg_mismatch(x, g):
    kind = g[0]
    if kind == "tensor":
        if not isinstance(x, Tensor):
            return f"expected a Tensor, got {type(x).__name__}"
        if x._value.shape != g[1] or x._dtype is not g[2] or x._requires_grad != g[3]:
            return (f"expected {g[2].short}{list(g[1])} requires_grad={g[3]}, got "
                    f"{x.dtype.short}{list(x.shape)} requires_grad={x.requires_grad}")
        if x._value.__class__ is not g[4]:
            return f"expected a tensor on {_device(g[4])}, got one on {x.device}"
    elif kind == "value":
        if not same_value(x, g[2]):
            return f"expected {g[2]!r}, got {x!r}"
    elif kind == "array":
        if not isinstance(x, np.ndarray) or x.shape != g[1] or x.dtype != g[2] \
                or not np.array_equal(x, g[3]):
            return "a NumPy array with other values"
    elif x is not g[2]:
        return f"a different {type(x).__name__} object"
    return None


def _device(storage_class):
    """The device of tensors whose ``_value`` is of ``storage_class`` (a guard's record)."""
    from ..core.storage import DeviceArray

    return "cuda:0" if storage_class is DeviceArray else "cpu"


def _on(storage_class):
    """A guard line's device, said only for tensors off the CPU (CPU lines stay as they were)."""
    return "" if _device(storage_class) == "cpu" else f" on {_device(storage_class)}"


def _py_guard_line(guard):
    """A readable line for a guard on Python state (ir/pystate.py)."""
    if isinstance(guard, ModuleStateGuard):
        names = ", ".join(type(m).__name__ for m in guard.modules)
        return f"module state of {names}: attributes, parameters, buffers, submodules and hooks unchanged"
    v = guard.value
    if isinstance(v, (int, float, complex, str, bytes, bool, type(None))):
        return f"{guard.desc} == {v!r}"
    return f"{guard.desc} is the same {type(v).__name__} object" + (
        ", with the attributes read" if guard.follows_attributes else "")


def _view_results(cap, leaves, flat_args):
    """``leaves`` with each result that eager returns as a view of an argument or a lifted
    tensor remade as that view of the real tensor (after the write-backs: it sees them), so
    that writes through it reach the tensor and it shares the tensor's version counter."""
    from .ir.aliasing import make_view_result

    leaves = list(leaves)
    made = {}
    for pos, (kind, ref, fn, requires_grad) in cap.view_outputs.items():
        key = id(fn[0])  # (the same traced tensor returned twice: the same view object twice)
        if key not in made:
            made[key] = make_view_result(fn, flat_args[ref] if kind == "arg" else ref, requires_grad)
        leaves[pos] = made[key]
    return leaves


def _alias_of(a, inputs):
    """Index of an input array whose memory ``a`` may share (the interpreter returns views of
    its inputs for reshape, permute, ...; the passes may return an input itself), or None."""
    for k, i in enumerate(inputs):
        if np.may_share_memory(a, i):
            return k
    return None


def _distinct(outs, inputs):
    """Outputs must alias neither inputs nor each other (the passes may return an input
    unchanged, or one value twice), and must be writable."""
    result, seen = [], []
    for a in outs:
        if not a.flags.writeable or _alias_of(a, inputs) is not None or _alias_of(a, seen) is not None:
            a = np.array(a, copy=True)
        seen.append(a)
        result.append(a)
    return result


def _real(target, flat_args):
    kind, ref = target
    return flat_args[ref] if kind == "arg_grad" else ref


def _state_mismatch(g, flat_args, cap):
    kind = g[0]
    if kind == "data":
        t = g[1]
        if t._value.shape != g[2] or t._dtype is not g[3] or t._requires_grad != g[4]:
            return (f"{g[5]} changed: expected {g[3].short}{list(g[2])} requires_grad={g[4]}, got "
                    f"{t.dtype.short}{list(t.shape)} requires_grad={t.requires_grad}")
        if t._value.__class__ is not g[6]:
            return f"{g[5]} moved: expected it on {_device(g[6])}, it is on {t.device}"
    elif kind == "grad_is_none":
        real = _real(g[1], flat_args)
        if (real._grad is None) != g[2]:
            name = cap.naming.of(g[1]) if getattr(cap, "naming", None) else str(g[1])
            return f"{name} is {'not ' if g[2] else ''}None now"
    elif kind == "value":
        now = g[2]()
        if not same_value(now, g[3]):
            return f"{g[1]} changed from {g[3]!r} to {now!r}"
    elif kind == "py":
        if not g[1].check():
            return g[1].reason()
    elif kind == "alias":  # which bound tensors share memory (ir/aliasing.py)
        return g[1].mismatch(flat_args)
    elif kind == "grad_shape":
        gr = _real(g[1], flat_args)._grad
        if gr is None or gr._value.shape != g[2] or gr._dtype is not g[3]:
            return f"{g[4]} changed"
    return None


def _apply_writebacks(cap, arrays, flat_args, graph, inputs):
    """Copy results into the user's tensors, as eager mode would have left them."""
    written = {id(i) for i in inputs}
    for (kind, ref), a, (v, _) in zip(cap.writebacks, arrays, graph.writebacks):
        if kind == "arg":
            _copy_into(flat_args[ref], a)
        elif kind == "data":
            _copy_into(ref, a)
        elif kind in ("grad", "arg_grad"):
            _copy_into(_real((kind, ref), flat_args)._grad, a)
        elif kind == "set_grad":
            real = _real(ref, flat_args)
            # a fresh .grad owns its storage: never an input's, another result's or a constant
            fresh = a if id(a) not in written and a.base is None and a.flags.writeable \
                else np.array(a, copy=True)
            real._grad = Tensor._make(fresh, v.dtype)
        written.add(id(a))
    for action in cap.actions:
        if action[0] == "grad_none":
            _real(action[1], flat_args)._grad = None
        else:
            _real(action[1], flat_args)._grad = action[2]


def _copy_into(t, a):
    if a is not t._value:  # else the executable wrote it in place (run_into)
        np.copyto(t._value, a)
    t._bump_version()


class CompiledBackward(Node):
    """The grad_fn of a compiled forward's outputs: runs the compiled backward program."""

    def __init__(self, program, saved, checks, edges, outputs):
        super().__init__([e if e is not None else (None, 0) for e in edges])
        self.program = program
        self.saved_arrays = list(saved)
        self.saved_checks = checks  # per saved array: (user tensor, version) or None
        self.out_meta = [(tuple(outputs[k].shape), outputs[k].dtype) for k, _ in program.capture.diff_outputs]
        # a backward whose sizes are runtime values (dynamic=True) runs at the forward's batch
        self.batch = getattr(program.executable, "last_batch", None)

    def name(self):
        return "CompiledFunctionBackward"

    @property
    def num_outputs(self):
        return len(self.out_meta)

    def apply(self, grad_outputs):
        from ..autograd import grad_mode

        if self.saved_arrays is None:
            raise SavedTensorsFreed()
        if grad_mode.is_grad_enabled():
            raise RuntimeError(
                "double backward through a tg.compile'd function is not supported: its backward is "
                "compiled code. Differentiate twice inside the compiled function instead "
                "(tg.autograd.grad(..., create_graph=True) is captured)."
            )
        for check in self.saved_checks:
            if check is not None and check[0]._version != check[1]:
                t = check[0]
                raise RuntimeError(_modified_message(t, None, 0, check[1]))
        self._raise_deferred()
        grads = [np.zeros(s, d.np) if g is None else np.ascontiguousarray(g._value, dtype=d.np)
                 if g.device.type == "cpu" else g._value  # (a cuda tensor's: the executable's to take)
                 for g, (s, d) in zip(grad_outputs, self.out_meta)]
        exe = self.program.backward_executable
        inputs = self.saved_arrays + grads
        results = exe(inputs) if self.batch is None else exe(inputs, batch=self.batch)
        if not getattr(exe, "fresh_results", False):  # the interpreter's may alias the inputs
            results = [np.array(r, copy=True) for r in results]
        return [Tensor._make(r, _dt.from_numpy_dtype(r.dtype)) for r in results]

    def _raise_deferred(self):
        """The error a backward rule raised while this backward was derived (ir/autodiff.py
        ``_deferred_errors``), where this backward needs a gradient that depends on it: as
        eager mode raises it at .backward(), and not for a gradient nobody asked for."""
        from ..autograd import engine
        from ..ops.deferred import raise_recorded

        for error, message, grads in getattr(self.program.capture, "backward_errors", ()):
            for j in grads:
                nxt = self._next_functions[j][0]
                if nxt is not None and (engine.current_graph_task_id() < 0
                                        or engine.will_engine_execute_node(nxt)):
                    raise_recorded(error, message)

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
        raise SavedTensorsFreed()

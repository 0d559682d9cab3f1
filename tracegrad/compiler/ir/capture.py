"""Capture: run a Python function on symbolic tensors and return everything a Program needs:
the IR graph, how to bind each graph input at call time, how to rebuild the results, the
write-backs into user tensors and the guards under which the capture is valid.

Arguments are specialised: tensors by shape, dtype and requires_grad; Python scalars and
strings by value; NumPy arrays by value; other objects (modules, optimizers, configs) by
identity. Tensors the function reads without receiving them are lifted by reference (see
``trace.Tracer``); modules it can reach are guarded on their ``training`` flags.
"""
from __future__ import annotations

import numpy as np

from ...core import pytree
from ...autograd import grad_mode
from ...core.tensor import Tensor
from . import aliasing as _aliasing
from . import names as _names
from . import pystate
from .graph import Graph
from .trace import Tracer
from ...core.tracing import tracing

_SIMPLE = (int, float, bool, str, type(None), complex, bytes)
_MAX_ARRAY_GUARD = 4096  # NumPy arguments up to this size are guarded by value, others break


class Binding:
    """How one graph input gets its array at call time: ("arg", i), ("data", tensor),
    ("grad", tensor) (the storage of tensor.grad), ("arg_grad", i) or ("seed", None)."""

    __slots__ = ("kind", "ref")

    def __init__(self, kind, ref=None):
        self.kind = kind
        self.ref = ref

    def __repr__(self):
        return f"Binding({self.kind})"


class Capture:
    """The result of tracing: graph + bindings + result spec + write-backs + guards."""

    def __init__(self):
        self.graph = None
        self.bindings = []  # one per graph input, same order
        self.arg_guards = []  # one per flat argument
        self.arg_names = []  # one per flat argument, for messages
        self.state_guards = []  # guards on lifted tensors, .grad presence, Python values
        self.grad_enabled = True
        self.out_spec = None
        self.out_leaves = []  # ("value", k) | ("arg", i) | ("python", obj)
        self.writebacks = []  # targets aligned with graph.writebacks: (kind, ref)
        self.actions = []  # .grad assignments that need no value: grad_none / grad_object
        self.arg_inputs = {}  # id(graph input Value) -> flat argument index
        self.diff_outputs = []  # (output position, traced tensor) differentiable after the call
        self.freed_outputs = []  # outputs whose graph was consumed by a traced backward()
        # leaf index -> (kind, ref, view_fn, requires_grad): results that eager returns as views of
        # an argument ("arg", i) or a lifted tensor ("data", t), remade so after each run (aliasing.py)
        self.view_outputs = {}
        self.lifted = []
        self.tracer = None
        self.changed_while_tracing = None
        self.reachable_modules = []  # tg.nn.Modules the function can reach (their state is guarded)  # why the program may run only once (pystate.py)


def arg_guard(x, name):
    from ...core.tracing import graph_break

    if isinstance(x, Tensor):
        # (the storage's class says the device: a program built for cuda tensors reads device memory)
        return ("tensor", tuple(x.shape), x.dtype, x.requires_grad, x._value.__class__)
    if isinstance(x, _SIMPLE):
        return ("value", type(x), x)
    if isinstance(x, np.ndarray):
        if x.size > _MAX_ARRAY_GUARD:
            graph_break(f"argument {name} is a NumPy array of {x.size} elements (pass a tensor: "
                        "its values would be baked into the program)")
        return ("array", x.shape, x.dtype, x.copy())
    return ("identity", id(x), x)


def trace_function(fn, args, kwargs, name=None, extra_guards=(), tracer_cls=Tracer):
    """Trace ``fn(*args, **kwargs)``; raises trace.GraphBreak when it cannot be captured.
    ``extra_guards`` are (description, getter) pairs evaluated now and checked at every call."""
    cap = Capture()
    graph = Graph(name or getattr(fn, "__name__", "fn"))
    tracer = tracer_cls(graph)
    cap.grad_enabled = grad_mode.is_grad_enabled()
    flat, spec = pytree.flatten((args, kwargs))
    cap.arg_names = _arg_names(fn, args, kwargs, len(flat))
    symbolic, sym_args = [], {}
    with tracing(tracer):
        cap.arg_guards = [arg_guard(x, n) for x, n in zip(flat, cap.arg_names)]
    # the same tensor passed twice is traced as one tensor (writes through one are seen
    # through the other, as eagerly); its twin keeps a graph input, which nothing reads
    same = tracer.alias_same = _aliasing.duplicate_arguments(flat)
    for i, x in enumerate(flat):
        if i in same:
            graph.add_input(tuple(x.shape), x.dtype, f"arg {cap.arg_names[i]}")
            cap.arg_inputs[id(graph.inputs[-1])] = i
            symbolic.append(symbolic[same[i]])
            continue
        if isinstance(x, Tensor):
            tracer.note_device(x)
            v = graph.add_input(tuple(x.shape), x.dtype, f"arg {cap.arg_names[i]}")
            s = Tensor._make(v, x.dtype)
            s._requires_grad = x.requires_grad
            tracer.arg_symbols[id(s)] = i
            tracer.arg_reals[i] = x
            tracer.arg_symbol_tensors[i] = s
            cap.arg_inputs[id(v)] = i
            sym_args[i] = (s, v)
            x = s
        symbolic.append(x)
    for desc, getter in extra_guards:
        tracer.guard_value(desc, getter, getter())
    from ... import amp  # (ops cast differently under autocast: a program is for one state)

    tracer.guard_value("autocast state", amp.state, amp.state())
    sargs, skwargs = pytree.unflatten(spec, symbolic)
    # the Python code that runs, for guards on what it reads; the object arguments' attributes
    watch = pystate.Watch([(f"argument {n}", x) for n, x in zip(cap.arg_names, flat)
                           if not isinstance(x, (Tensor, np.ndarray) + _SIMPLE)])
    with tracing(tracer):
        with watch:
            result = fn(*sargs, **skwargs)
        _finish(cap, tracer, graph, result, sym_args, fn, flat)
    _guard_python_state(cap, watch, fn)
    cap.graph = graph
    _aliasing.finish(cap, flat, same)  # the aliasing guard (or AliasFallback: run eagerly)
    cap.tracer = tracer
    return cap


def _guard_python_state(cap, watch, fn):
    """Guards on the Python state the trace read (pystate.py); a graph break for what the watch
    found it cannot guard (nondeterministic calls, assignments a program would not repeat)."""
    from ...core.tracing import GraphBreak

    if watch.breaks:  # (raised in the trace already: recorded in case the code caught it)
        raise GraphBreak(*watch.breaks[0])
    guards, modules = pystate.guards_for(watch, fn)
    # state the trace changed: this call runs the program once (the change happened once, while
    # tracing), later calls run eagerly (compiler/api.py)
    cap.changed_while_tracing = pystate.changed_while_tracing(watch)
    cap.state_guards.extend(("py", g) for g in guards)
    modules += cap.reachable_modules
    if modules:  # (dropout, batch norm: train and eval are different programs, as any attribute)
        cap.state_guards.append(("py", pystate.ModuleStateGuard(modules)))


def _arg_names(fn, args, kwargs, n_flat):
    """A readable name per flat argument: the parameter name, ``name[i]`` inside containers."""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    out = []
    for k, a in enumerate(args):
        base = params[k] if k < len(params) else f"args[{k}]"
        _name_leaves(a, base, out)
    for key, a in kwargs.items():
        _name_leaves(a, key, out)
    return out if len(out) == n_flat else [str(i) for i in range(n_flat)]


def _name_leaves(obj, base, out):
    leaves, _ = pytree.flatten(obj)
    if len(leaves) == 1 and leaves[0] is obj:
        out.append(base)
    else:
        out.extend(f"{base}[{i}]" for i in range(len(leaves)))


def _finish(cap, tracer, graph, result, sym_args, fn, flat):
    arg_of = {id(s): i for i, (s, _) in sym_args.items()}
    leaves, cap.out_spec = pytree.flatten(result)
    out_index = {}
    for leaf in leaves:
        if isinstance(leaf, Tensor) and id(leaf) in arg_of:
            i = arg_of[id(leaf)]
            unchanged = tracer.value_of(leaf) is sym_args[i][1]
            if unchanged or not (leaf.requires_grad and cap.grad_enabled):
                cap.out_leaves.append(("arg", i))  # eager returns the argument object itself
                continue
        if isinstance(leaf, Tensor) and leaf._is_traced and leaf._base is not None:
            view = _aliasing.view_of_input(leaf, tracer, sym_args, getattr(tracer, "alias_same", {}))
            if view is not None:  # (its value is also an output: export and vmap read that)
                cap.view_outputs[len(cap.out_leaves)] = view + (leaf.requires_grad,)
        if isinstance(leaf, Tensor) and leaf._is_traced:
            if id(leaf) in out_index:  # the same tensor twice: the same object twice
                cap.out_leaves.append(("value", out_index[id(leaf)]))
                continue
            graph.outputs.append(tracer.value_of(leaf))
            k = out_index[id(leaf)] = len(graph.outputs) - 1
            cap.out_leaves.append(("value", k))
            if leaf.requires_grad and cap.grad_enabled:
                if leaf.grad_fn is not None and leaf.grad_fn._released:
                    cap.freed_outputs.append(k)
                else:
                    cap.diff_outputs.append((k, leaf))
        else:
            cap.out_leaves.append(("python", leaf))  # user tensors come back as the same object
    found, modules = _names.reachable(fn, [(n, x) for n, x in zip(cap.arg_names, flat)
                                           if not isinstance(x, Tensor)])
    naming = _Naming(found, cap.arg_names)
    for entry in tracer.lifted:
        entry.value.label = "lifted " + naming.of(entry.where)
    for i, (s, v) in sym_args.items():  # in-place writes into arguments
        now = tracer.value_of(s)
        if now is not v:
            _writeback(cap, graph, now, ("arg", i), naming.of(("arg", i)) + " <-")
    for entry in tracer.mutated:  # parameters, optimizer state, existing .grad tensors
        _writeback(cap, graph, tracer.current_value(entry), entry.where, naming.of(entry.where) + " <-")
    for target, initial, current in tracer.grad_state.values():  # .grad assignments
        if current is initial:
            continue
        if current is None:
            cap.actions.append(("grad_none", target))
        elif current._is_traced:
            _writeback(cap, graph, tracer.value_of(current), ("set_grad", target),
                       naming.of(target) + " =")
        else:
            cap.actions.append(("grad_object", target, current))
    for entry in tracer.lifted:
        where, t = entry.where, entry.tensor
        if where[0] == "data":
            cap.state_guards.append(("data", t, tuple(t.shape), t.dtype, t.requires_grad,
                                     naming.of(where), t._value.__class__))
        else:
            cap.state_guards.append(("grad_shape", where, tuple(t.shape), t.dtype, naming.of(where)))
    # (their training flags, attributes, parameters...: one module-state guard, _guard_python_state)
    cap.reachable_modules = [m for _, m in modules]
    for g in tracer.guards:
        if g[0] == "value" and isinstance(g[1], tuple):  # a scalar read of an outside tensor
            g = ("value", f"{naming.tensor(g[1][1])}.item()", g[2], g[3])
        cap.state_guards.append(g)
    lifted = {id(e.value): Binding(e.where[0], e.where[1]) for e in tracer.lifted}
    seeds = {id(v) for v in tracer.seed_inputs}
    cap.bindings = [Binding("arg", cap.arg_inputs[id(v)]) if id(v) in cap.arg_inputs
                    else lifted[id(v)] if id(v) in lifted
                    else Binding("seed") if id(v) in seeds else None
                    for v in graph.inputs]
    cap.lifted = tracer.lifted
    cap.naming = naming


class _Naming:
    """Readable names of write-back targets and lifted tensors for listings and guards."""

    def __init__(self, found, arg_names):
        self.found = found
        self.arg_names = arg_names
        self.unnamed = {}

    def tensor(self, t):
        """Its reachable name, or ``<tensor k>`` numbered in order of first use: the listing is
        part of the cache key, so a name must not change between processes (an address would
        make every new process miss the cache)."""
        name = self.found.get(id(t))
        if name is None:
            name = self.unnamed.setdefault(id(t), f"<tensor {len(self.unnamed)}>")
        return name

    def of(self, where):
        kind, ref = where
        if kind == "arg":
            return self.arg_names[ref]
        if kind == "arg_grad":
            return f"{self.arg_names[ref]}.grad"
        if kind == "data":
            return self.tensor(ref)
        if kind == "grad":
            return f"{self.tensor(ref)}.grad"
        if kind == "set_grad":
            return self.of(ref)
        return str(where)


def _writeback(cap, graph, value, target, desc):
    graph.writebacks.append((value, desc))
    cap.writebacks.append(target)


def bind_inputs(bindings, flat_args):
    """The arrays for a program's inputs at call time, in graph-input order."""
    from ...core.creation import default_generator

    arrays = []
    for b in bindings:
        kind = b.kind
        if kind == "arg":
            arrays.append(flat_args[b.ref]._value)
        elif kind == "data":
            arrays.append(b.ref._value)
        elif kind == "grad":
            arrays.append(b.ref._grad._value)
        elif kind == "arg_grad":
            arrays.append(flat_args[b.ref]._grad._value)
        elif kind == "seed":
            arrays.append(np.asarray(default_generator.next_seed(), dtype=np.int64))
        else:
            raise AssertionError(f"unknown binding {kind}")
    return arrays

"""Capture: run a Python function on symbolic tensors and return everything a Program needs:
the IR graph, how to bind each graph input at call time, how to rebuild the results, the
write-backs into user tensors and the guards under which the capture is valid.
"""
from __future__ import annotations

import numpy as np

from .. import pytree
from ..autograd import grad_mode
from ..tensor import Tensor
from .graph import Graph
from .trace import _UNREAD, Tracer, tracing

_SIMPLE = (int, float, bool, str, type(None), complex, bytes)


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
        self.state_guards = []  # guards on lifted tensors and .grad presence
        self.grad_enabled = True
        self.out_spec = None
        self.out_leaves = []  # ("value", k) | ("object", obj) | ("python", obj)
        self.writebacks = []  # targets aligned with graph.writebacks: (kind, ref)
        self.actions = []  # .grad assignments that need no value: grad_none / grad_object
        self.arg_inputs = {}  # id(graph input Value) -> flat argument index
        self.diff_outputs = []  # (output position, traced tensor) differentiable after the call
        self.freed_outputs = []  # outputs whose graph was consumed by a traced backward()
        self.lifted = []


def arg_guard(x):
    if isinstance(x, Tensor):
        return ("tensor", tuple(x.shape), x.dtype, x.requires_grad)
    if isinstance(x, _SIMPLE):
        return ("value", type(x), x)
    return ("identity", id(x))


def trace_function(fn, args, kwargs, name=None):
    """Trace ``fn(*args, **kwargs)``; raises trace.GraphBreak when it cannot be captured."""
    cap = Capture()
    graph = Graph(name or getattr(fn, "__name__", "fn"))
    tracer = Tracer(graph)
    cap.grad_enabled = grad_mode.is_grad_enabled()
    flat, spec = pytree.flatten((args, kwargs))
    names = _arg_names(fn, len(args), kwargs)
    cap.arg_guards = [arg_guard(x) for x in flat]
    symbolic, sym_args = [], {}
    for i, x in enumerate(flat):
        if isinstance(x, Tensor):
            v = graph.add_input(tuple(x.shape), x.dtype, f"arg {names.get(i, i)}")
            s = Tensor._make(v, x.dtype)
            s._requires_grad = x.requires_grad
            tracer.arg_symbols[id(s)] = i
            tracer.arg_reals[i] = x
            tracer.arg_symbol_tensors[i] = s
            cap.arg_inputs[id(v)] = i
            sym_args[i] = (s, v)
            x = s
        symbolic.append(x)
    sargs, skwargs = pytree.unflatten(spec, symbolic)
    with tracing(tracer):
        result = fn(*sargs, **skwargs)
        _finish(cap, tracer, graph, result, sym_args)
    cap.graph = graph
    cap.tracer = tracer
    return cap


def _arg_names(fn, nargs, kwargs):
    import inspect

    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    names = {i: params[i] for i in range(min(nargs, len(params)))}
    for j, k in enumerate(kwargs):
        names[nargs + j] = k
    return names


def _finish(cap, tracer, graph, result, sym_args):
    leaves, cap.out_spec = pytree.flatten(result)
    for leaf in leaves:
        if isinstance(leaf, Tensor) and leaf._is_traced:
            graph.outputs.append(tracer.value_of(leaf))
            k = len(graph.outputs) - 1
            cap.out_leaves.append(("value", k))
            if leaf.requires_grad and cap.grad_enabled:
                if leaf.grad_fn is not None and leaf.grad_fn._released:
                    cap.freed_outputs.append(k)
                else:
                    cap.diff_outputs.append((k, leaf))
        else:
            cap.out_leaves.append(("python", leaf))  # user tensors come back as the same object
    for i, (s, v) in sym_args.items():  # in-place writes into arguments
        now = tracer.value_of(s)
        if now is not v:
            _writeback(cap, graph, now, ("arg", i), f"arg {i}")
    for entry in tracer.mutated:  # parameters, optimizer state, existing .grad tensors
        _writeback(cap, graph, tracer.current_value(entry), entry.where, _describe(entry.where))
    for target, initial, current in tracer.grad_state.values():  # .grad assignments
        if current is initial:
            continue
        if current is None:
            cap.actions.append(("grad_none", target))
        elif current._is_traced:
            _writeback(cap, graph, tracer.value_of(current), ("set_grad", target),
                       _describe(target) + " (new)")
        else:
            cap.actions.append(("grad_object", target, current))
    for entry in tracer.lifted:
        where = entry.where
        t = entry.tensor
        if where[0] == "data":
            cap.state_guards.append(("data", t, tuple(t.shape), t.dtype, t.requires_grad))
        else:
            cap.state_guards.append(("grad_shape", where, tuple(t.shape), t.dtype))
    cap.state_guards.extend(tracer.guards)
    lifted = {id(e.value): Binding(e.where[0], e.where[1]) for e in tracer.lifted}
    seeds = {id(v) for v in tracer.seed_inputs}
    cap.bindings = [Binding("arg", cap.arg_inputs[id(v)]) if id(v) in cap.arg_inputs
                    else lifted[id(v)] if id(v) in lifted
                    else Binding("seed") if id(v) in seeds else None
                    for v in graph.inputs]
    cap.lifted = tracer.lifted


def _writeback(cap, graph, value, target, desc):
    graph.writebacks.append((value, desc))
    cap.writebacks.append(target)


def _describe(where):
    kind, ref = where
    if kind == "arg":
        return f"arg {ref}"
    if kind == "arg_grad":
        return f"arg {ref}.grad"
    shape = list(ref.shape)
    return f"lifted f[{shape}]" if kind == "data" else f"grad of lifted {shape}"


def bind_inputs(bindings, flat_args):
    """The arrays for a program's inputs at call time, in graph-input order."""
    from ..creation import default_generator

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

"""Straight-line Python generated once per Program for its hot path: the guard check and, for
executables whose results are fresh buffers (the C backend), the whole of ``Program.run``.

A generic loop over guards, bindings and write-backs pays for tuple unpacking, kind dispatch
and attribute lookups on every element of every call; the tiny training step has 15 guards,
8 inputs and 12 write-backs, which made those loops ~20 us of a ~40 us overhead. Here each
guard, binding and write-back becomes one line with its constants bound by name, so a call
runs only the comparisons themselves. The conditions are exactly those of
``Program.mismatch`` and ``Program.run`` (program.py), which remain the reference: the check
only says yes or no, and on a no ``Program.mismatch`` computes the reason.

>>> import tracegrad as tg
>>> f = tg.compile(lambda x: x * 2, backend="c")
>>> _ = f(tg.ones(2)); _ = f(tg.ones(2))
>>> print(f.programs[0]._fast_check.source.splitlines()[0])
def check(flat, enabled):
>>> print(f.programs[0]._fast_run.source.splitlines()[1])
    arrays = [flat[0]._value]
"""
from __future__ import annotations

import numpy as np

from .ir.pystate import _Code, value_cond
from ..core.tensor import Tensor

_new = object.__new__


def _make_sets_only_these():
    """Whether Tensor._make sets exactly ``_value``, ``_dtype`` and ``_inference`` for a tensor
    that does not require grad (read from a real one, so that a field added there is noticed:
    make_tensors then calls _make itself)."""
    return set(Tensor._make(np.empty(0, np.float32)).__dict__) == {"_value", "_dtype", "_inference"}


_FAST_MAKE = _make_sets_only_these()


def make_tensors(arrays, dtypes, inference):
    """``[Tensor._make(a, d) for a, d in zip(arrays, dtypes)]`` for ``inference`` (the
    current inference mode, read once by the caller instead of once per tensor). The other
    fields are Tensor's class defaults (measured: three attribute sets on a new object beat
    building its dict and assigning it)."""
    if not _FAST_MAKE:
        return [Tensor._make(a, d) for a, d in zip(arrays, dtypes)]
    out = []
    for a, d in zip(arrays, dtypes):
        t = _new(Tensor._instance_class)  # (the public class, as Tensor._make makes)
        t._value = a
        t._dtype = d
        t._inference = inference
        out.append(t)
    return out


class _Source:
    """Lines of generated code and the constants they name."""

    def __init__(self):
        self.lines = []
        self.names = {}

    def const(self, obj, prefix="c"):
        name = f"{prefix}{len(self.names)}"
        self.names[name] = obj
        return name

    def build(self, fn_name):
        src = "\n".join(self.lines) + "\n"
        ns = dict(self.names)
        exec(compile(src, f"<tracegrad fastpath {fn_name}>", "exec"), ns)
        fn = ns[fn_name]
        fn.source = src
        return fn


def compile_check(cap, relaxed=False):
    """``check(flat, enabled) -> bool``: True exactly when ``Program.mismatch`` returns None;
    with ``relaxed``, exactly when ``DynamicProgram.mismatch``'s guards pass (the leading size
    of tensor arguments and of their .grad is free: dynamic._relaxed_mismatch and
    dynamic._relaxed_state_mismatch)."""
    s = _Source()
    L = s.lines
    L.append("def check(flat, enabled):")
    L.append(f"    if enabled != {s.const(cap.grad_enabled)} or len(flat) != {len(cap.arg_guards)}:")
    L.append("        return False")
    T = s.const(Tensor, "Tensor")
    for i, g in enumerate(cap.arg_guards):
        x = f"x{i}"
        L.append(f"    {x} = flat[{i}]")
        kind = g[0]
        if kind == "tensor":
            cond = (f"isinstance({x}, {T}) and {_shape_cond(s, x, g[1], relaxed)} and "
                    f"{x}._dtype is {s.const(g[2])} and {x}._requires_grad == {s.const(g[3])} "
                    f"and {x}._value.__class__ is {s.const(g[4])}")
        elif kind == "value":  # by bits for floats (pystate.value_cond)
            cond = value_cond(_Code(s.const), x, g[2], frozenset(), [])
        elif kind == "array":
            nd = s.const(np.ndarray)
            cond = (f"isinstance({x}, {nd}) and {x}.shape == {s.const(g[1])} and "
                    f"not ({x}.dtype != {s.const(g[2])}) and {s.const(np.array_equal)}({x}, {s.const(g[3])})")
        else:
            cond = f"{x} is {s.const(g[2])}"
        L.append(f"    if not ({cond}):")
        L.append("        return False")
    for g in cap.state_guards:
        kind = g[0]
        if kind == "data":
            t = s.const(g[1])
            cond = (f"{t}._value.shape == {s.const(g[2])} and {t}._dtype is {s.const(g[3])} "
                    f"and {t}._requires_grad == {s.const(g[4])} and {t}._value.__class__ is {s.const(g[6])}")
        elif kind == "grad_is_none":
            cond = f"({_real(s, g[1])}._grad is None) == {s.const(g[2])}"
        elif kind == "value":
            cond = value_cond(_Code(s.const), f"{s.const(g[2])}()", g[3], frozenset(), [])
        elif kind == "py":  # Python state the trace read (ir/pystate.py)
            cond = g[1].inline(s.const)
        elif kind == "alias":  # which bound tensors share memory (ir/aliasing.py)
            L.extend(g[1].fast_lines(s))
            continue
        elif kind == "grad_shape":
            L.append(f"    gr = {_real(s, g[1])}._grad")
            cond = f"gr is not None and {_shape_cond(s, 'gr', g[2], relaxed)} and gr._dtype is {s.const(g[3])}"
        else:
            continue  # Program.mismatch ignores other kinds too
        L.append(f"    if not ({cond}):")
        L.append("        return False")
    L.append("    return True")
    return s.build("check")


def _shape_cond(s, t, shape, relaxed):
    """Code: tensor ``t`` has ``shape``; with ``relaxed``, any leading size."""
    if relaxed and len(shape):
        return f"{t}._value.ndim == {len(shape)} and {t}._value.shape[1:] == {s.const(tuple(shape)[1:])}"
    return f"{t}._value.shape == {s.const(shape)}"


def _real(s, target):
    """Code for program._real(target, flat): the tensor whose .grad a target names."""
    kind, ref = target
    return f"flat[{ref}]" if kind == "arg_grad" else s.const(ref)


def _replaced_unread_grads(cap):
    """The targets of ``set_grad`` write-backs whose current ``.grad`` the program neither
    reads nor writes into."""
    def key(kind, ref):
        return ("arg", ref) if kind in ("arg", "arg_grad") else ("tensor", id(ref))

    used = {key(b.kind, b.ref) for b in cap.bindings if b.kind in ("grad", "arg_grad")}
    used |= {key(kind, ref) for kind, ref in cap.writebacks if kind in ("grad", "arg_grad")}
    return [ref for kind, ref in cap.writebacks if kind == "set_grad" and key(*ref) not in used]


def compile_run(prog, targets):
    """``run(flat) -> result``: Program.run for an executable whose results are fresh buffers
    (or, for the in-place slots ``targets`` describes, the user's storage itself); None when
    the program has a part this does not cover."""
    from ..autograd import grad_mode
    from .program import _FreedNode

    cap = prog.capture
    graph = prog.forward if prog.forward is not None else prog.graph
    n_out, n_all = len(prog.graph.outputs), len(graph.outputs)
    s = _Source()
    L = s.lines
    L.append("def run(flat):")
    items = []
    for b in cap.bindings:
        if b.kind == "arg":
            items.append(f"flat[{b.ref}]._value")
        elif b.kind == "data":
            items.append(f"{s.const(b.ref)}._value")
        elif b.kind == "grad":
            items.append(f"{s.const(b.ref)}._grad._value")
        elif b.kind == "arg_grad":
            items.append(f"flat[{b.ref}]._grad._value")
        elif b.kind == "seed":
            from ..core.creation import default_generator

            items.append(f"{s.const(np.asarray)}({s.const(default_generator)}.next_seed(), "
                         f"dtype={s.const(np.int64)})")
        else:
            return None
    L.append(f"    arrays = [{', '.join(items)}]")
    P = s.const(prog, "prog")
    if prog.forward is not None:
        L.append(f"    versions = {P}._input_versions(flat)")
    from ..ops import registry

    call = f"{P}.executable(arrays)"
    if targets:
        tl = []
        for code, ref in targets:
            if code == 0:
                tl.append(f"arrays[{ref}]")
            elif code == 1:
                tl.append(f"flat[{ref}]._value")
            elif code == 2:
                tl.append(f"{s.const(ref)}._value")
            elif code == 3:
                tl.append(f"{s.const(ref)}._grad._value")
            else:
                tl.append(f"flat[{ref}]._grad._value")
        L.append(f"    targets = [{', '.join(tl)}]")
        call = f"{P}.executable.run_into(arrays, targets)"
    # .grad tensors the step replaces and does not read (zero_grad() then backward()) are let
    # go before the call, as eager mode lets them go at zero_grad(): once nothing else holds
    # their buffers, the executable reuses them for the new gradients
    L.extend(f"    {_real(s, ref)}._grad = None" for ref in _replaced_unread_grads(cap))
    # the profiler's row for the program is Program._execute's business
    L.append(f"    if {s.const(registry, 'registry')}._profiler is None:")
    L.append(f"        results = {call}")
    L.append("    else:")
    L.append(f"        results = {P}._execute(arrays{', targets' if targets else ''})")
    # write-backs, in order (program._apply_writebacks with fresh results: a new .grad takes
    # its result array as it is, nothing else holds it). Tensors first, all at once.
    make = s.const(make_tensors)
    mode = s.const(grad_mode.is_inference_mode_enabled)
    L.append(f"    inference = {mode}()")
    new_grads = [(f"results[{n_all + j}]", v.dtype) for j, ((kind, _), (v, _))
                 in enumerate(zip(cap.writebacks, graph.writebacks)) if kind == "set_grad"]
    if new_grads:
        L.append(f"    grads = {make}([{', '.join(a for a, _ in new_grads)}], "
                 f"{s.const([d for _, d in new_grads])}, inference)")
    copyto = s.const(np.copyto)
    n_grad = 0
    for j, ((kind, ref), (v, _)) in enumerate(zip(cap.writebacks, graph.writebacks)):
        a = f"results[{n_all + j}]"
        if kind in ("arg", "data", "grad", "arg_grad"):  # program._copy_into, inline
            if kind == "arg":
                L.append(f"    t = flat[{ref}]")
            elif kind == "data":
                L.append(f"    t = {s.const(ref)}")
            else:
                L.append(f"    t = {_real(s, (kind, ref))}._grad")
            L.append(f"    if {a} is not t._value:  # else written in place by run_into")
            L.append(f"        {copyto}(t._value, {a})")
            L.append("    t._vc.value += 1  # Tensor._bump_version, inline")
        elif kind == "set_grad":
            L.append(f"    {_real(s, ref)}._grad = grads[{n_grad}]")
            n_grad += 1
        else:
            return None
    for action in cap.actions:
        if action[0] == "grad_none":
            L.append(f"    {_real(s, action[1])}._grad = None")
        else:
            L.append(f"    {_real(s, action[1])}._grad = {s.const(action[2])}")
    dts = s.const([v.dtype for v in prog.graph.outputs])
    L.append(f"    outs = {make}(results[:{n_out}], {dts}, inference)")
    if prog.forward is not None:
        L.append(f"    {P}._attach_backward(outs, results[{n_out}:{n_all}], flat, arrays, versions)")
    for k in cap.freed_outputs:
        L.append(f"    {s.const(_FreedNode)}.attach(outs[{k}])")
    L.append(f"    {P}.calls += 1")
    leaves = []
    for kind, ref in cap.out_leaves:
        leaves.append(f"outs[{ref}]" if kind == "value" else f"flat[{ref}]" if kind == "arg"
                      else s.const(ref))
    from ..core import pytree

    spec = cap.out_spec
    if spec == ("leaf", None, None) and len(leaves) == 1:
        L.append(f"    return {leaves[0]}")
    else:
        L.append(f"    return {s.const(pytree.unflatten)}({s.const(spec)}, [{', '.join(leaves)}])")
    return s.build("run")

"""``tg.compile(fn, dynamic=True)``: one Program object serves every batch size.

The leading dimension of every tensor argument is free: the guards check everything else
(dtypes, requires_grad, every other dimension, Python values, captured state), and the
function is captured once per distinct tuple of leading sizes behind this single object.

How, on the C backend: the first batch size is captured and built as usual. At the second one,
the program is captured (not compiled) at three sample batch sizes and built once into C code
whose batch size is a runtime argument (``backends/c/symbolic.py``); every later batch size
runs that code after one check: the function is traced at that size and must lower to exactly
the symbolic code evaluated there (so Python that branches on the batch size is caught, and
that size gets a build of its own). When the program cannot be made symbolic (a size that is
not linear in the batch size, a constant that depends on it, ...), a warning says why and
every batch size gets a build of its own, behind this same object. The interpreter backend
always works per batch size (capturing is all it needs).

``compiled.programs`` has one entry; ``DynamicProgram.specializations`` lists the Programs
built behind it. A shape change outside the leading dimension fails the relaxed guards and
retraces a new DynamicProgram, as without ``dynamic``.

>>> import tracegrad as tg
>>> f = tg.compile(lambda x: (x * 2).sum(1), backend="interpreter", dynamic=True)
>>> [tuple(f(tg.ones(b, 3)).shape) for b in (2, 5)]
[(2,), (5,)]
>>> len(f.programs)
1
"""
from __future__ import annotations

import hashlib
import re
import warnings

import numpy as np

from ..core.tensor import Tensor

# batch signatures remembered behind one DynamicProgram; the oldest is dropped beyond this
# (a dropped per-size build is rebuilt, a dropped symbolic entry re-checked, when seen again)
MAX_SPECIALIZATIONS = 32


def batch_signature(flat_args):
    """The leading size of every tensor argument with at least one dimension (None otherwise)."""
    return tuple(x._value.shape[0] if isinstance(x, Tensor) and x._value.ndim else None
                 for x in flat_args)


def trace_listing(graph):
    """A trace's listing as compared between batch sizes: every constant is written as its
    fill value (or a hash of its bytes), whatever its size (the listing shows the values of
    small constants only)."""
    text = re.sub(r"= const \[[^\]]*\]", "= const", str(graph))
    lines = []
    for c in graph.constants():
        flat = np.asarray(c.data).ravel()
        uniform = flat.size and np.all(flat == flat[0])
        lines.append(f"const fill {flat[0]!r}" if uniform else
                     "const data " + hashlib.sha256(flat.tobytes()).hexdigest()[:16])
    return "\n".join([text, *lines])


def batch_pattern(signature):
    """The signature with every leading size equal to the first one written "B" (those
    arguments share the runtime batch size), or None when no argument has a leading size."""
    first = next((s for s in signature if s is not None), None)
    if first is None:
        return None
    return tuple(None if s is None else "B" if s == first else s for s in signature)


class DynamicProgram:
    """A Program whose tensor arguments' leading dimensions are runtime sizes.

    ``template`` is the first specialisation captured; its guards, with leading dimensions
    freed, decide whether this object accepts a call. ``capture(flat_args)`` builds the
    specialisation for a new batch signature (it may raise trace.GraphBreak). Other
    attributes (``graph``, ``source``, ``forward``, ...) are those of the specialisation that
    ran last."""

    def __init__(self, template, flat_args, spec, capture, eager, graphs=None, trace_text=None,
                 backend_options=None):
        self.template = template
        self._spec = spec  # the pytree structure of (args, kwargs), to rebuild them for capture
        self._capture = capture  # (args, kwargs) -> Program, or None after a graph break
        self._eager = eager  # the original function, for a batch size that cannot be captured
        # (args, kwargs) -> CapturedGraphs, for the symbolic C build; None: per-size builds only
        self._graphs = graphs if template.backend == "c" else None
        self._trace_text = trace_text  # (args, kwargs) -> the listing of a fresh trace
        self._backend_options = dict(backend_options or {})
        self._specs = {batch_signature(flat_args): template}
        self._symbolic = {}  # batch pattern -> Program with runtime batch size, or None (failed)
        self._built = [template]
        self._last = template
        self._fast_check = None
        self.calls = 0

    @property
    def specializations(self):
        """The Programs built behind this one, oldest first: the first batch size's, then
        symbolic ones (any batch size) and per-size ones."""
        return list(self._built)

    def __getattr__(self, item):
        # only reached for attributes not defined here: delegate to the last one that ran
        if item.startswith("_"):
            raise AttributeError(item)
        return getattr(self._last, item)

    @property
    def guards(self):
        """The template's guards with every tensor argument's leading size written as B."""
        cap = self.template.capture
        out = self.template.guards
        names = cap.arg_names
        for i, g in enumerate(cap.arg_guards):
            if g[0] == "tensor" and len(g[1]):
                name = names[i] if i < len(names) else str(i)
                old = f"{name}: Tensor {g[2].short}{list(g[1])}"
                new = f"{name}: Tensor {g[2].short}[B{i}" + "".join(f", {d}" for d in g[1][1:]) + "]"
                out = [new + line[len(old):] if line.startswith(old) else line for line in out]
        return out

    def mismatch(self, flat_args, grad_enabled):
        """None when this program may run for these arguments, else why not."""
        cap = self.template.capture
        check = self._fast_check
        if check is None:  # the guards below as straight-line code (fastpath.compile_check)
            from . import fastpath

            check = self._fast_check = fastpath.compile_check(cap, relaxed=True)
        if check(flat_args, grad_enabled):
            return self._specialization_mismatch(flat_args, grad_enabled)
        if grad_enabled != cap.grad_enabled:
            return f"grad mode changed to {grad_enabled}"
        if len(flat_args) != len(cap.arg_guards):
            return f"{len(flat_args)} arguments instead of {len(cap.arg_guards)}"
        for i, (x, g) in enumerate(zip(flat_args, cap.arg_guards)):
            reason = _relaxed_mismatch(x, g)
            if reason:
                return f"argument {cap.arg_names[i]}: {reason}"
        # captured state (parameters, Python globals, .grad presence) does not depend on the
        # batch: the template's state guards decide for every batch size
        for g in cap.state_guards:
            reason = _relaxed_state_mismatch(g, flat_args, cap)
            if reason:
                return reason
        return self._specialization_mismatch(flat_args, grad_enabled)

    def _specialization_mismatch(self, flat_args, grad_enabled):
        """After the template's guards passed: what the build for this batch size says."""
        spec = self._specs.get(batch_signature(flat_args))
        if spec is None or getattr(spec, "runtime_batch", False):
            return None  # run() captures or checks this batch size
        # a built specialisation also checks the exact shapes of .grad fields
        return spec.mismatch(flat_args, grad_enabled)

    def run(self, flat_args):
        """Run the specialisation for this batch signature, capturing it first if needed."""
        key = batch_signature(flat_args)
        spec = self._specs.get(key)
        if spec is not None and getattr(spec, "runtime_batch", False) \
                and spec.grad_shape_mismatch(flat_args):
            spec = None  # a .grad that does not depend on the batch changed shape: check again
        if spec is None:
            from ..core import pytree

            from .api import _log

            args, kwargs = pytree.unflatten(self._spec, list(flat_args))
            spec = self._symbolic_for(key, flat_args, args, kwargs)
            if spec is None:
                _log("guards", "dynamic %s: specialising for leading sizes %s (%d built)",
                     self.template.graph.name, [k for k in key if k is not None], len(self._built))
                spec = self._capture(args, kwargs)
                if spec is None:  # a graph break at this batch size (already warned): run eagerly
                    return self._eager(*args, **kwargs)
                self._built.append(spec)
            if len(self._specs) >= MAX_SPECIALIZATIONS:
                self._specs.pop(next(iter(self._specs)))
            self._specs[key] = spec
        self._last = spec
        self.calls += 1
        if not getattr(spec, "runtime_batch", False):
            return spec.run(flat_args)
        from .backends.c.symbolic import CompiledCallFailed

        try:
            return spec.run(flat_args)
        except CompiledCallFailed:
            self._raise_failure(flat_args)
            raise

    def _raise_failure(self, flat_args):
        """Raise the error of a failed call of the runtime-batch program (an index out of
        bounds...): its C only says that it failed, so the interpreter runs a capture at this
        batch size on the same inputs, which raises eager's exception. Nothing was written."""
        from ..core import pytree
        from .backends.interpreter import run_graph
        from .ir.capture import bind_inputs

        args, kwargs = pytree.unflatten(self._spec, list(flat_args))
        c = self._graphs(args, kwargs)
        run_graph(c.forward if c.forward is not None else c.graph, bind_inputs(c.cap.bindings, flat_args))

    def __str__(self):
        return str(self._last)

    # ------------------------------------------------------------------ runtime batch size
    def _symbolic_for(self, key, flat_args, args, kwargs):
        """The Program with a runtime batch size that serves this signature (built at the
        first miss of its pattern, then checked at this size), or None: build per size."""
        from .api import _log
        from .ir import trace

        pattern = batch_pattern(key)
        if self._graphs is None or pattern is None:
            return None
        if pattern not in self._symbolic:
            self._symbolic[pattern] = self._build_symbolic(pattern, flat_args)
            if self._symbolic[pattern] is not None:
                self._built.append(self._symbolic[pattern])
        prog = self._symbolic[pattern]
        if prog is None:
            return None
        batch = next(s for s in key if s is not None)
        try:  # the function must record the same ops at this size (sizes aside)
            why = prog.symbolic_trace.check(self._trace_text(args, kwargs), batch)
        except trace.GraphBreak as e:
            why = str(e)
        if why is not None:
            _log("guards", "dynamic %s: batch size %d needs a build of its own: %s",
                 self.template.graph.name, batch, why)
            return None
        return prog

    def _build_symbolic(self, pattern, flat_args):
        from ..core import pytree
        from .backends.c import Unsupported, symbolic
        from .ir import trace
        from .program import Program, inplace_pairs

        try:
            caps = []
            for b in symbolic.SAMPLE_BATCHES:
                args, kwargs = pytree.unflatten(self._spec, _with_batch(flat_args, pattern, b))
                caps.append(self._graphs(args, kwargs))
            why = _same_capture(caps)
            if why:
                raise symbolic.NotSymbolic(why)
            traced = symbolic.SymbolicSource([c.trace_text for c in caps])
            # results the executable may write straight into user tensors, as without dynamic
            fwd = symbolic.build([c.forward or c.graph for c in caps],
                                 dict(self._backend_options, inplace=inplace_pairs(caps[0].cap)))
            bwd = symbolic.build([c.backward for c in caps], self._backend_options) \
                if caps[0].backward is not None else None
        except (symbolic.NotSymbolic, trace.GraphBreak, Unsupported) as e:
            warnings.warn(f"tg.compile(dynamic=True): {self.template.graph.name} is built once per "
                          f"batch size, not once for all: {e}", RuntimeWarning, stacklevel=5)
            return None
        c = caps[0]
        prog = Program(c.cap, "c", c.graph, c.forward, c.backward, grad_positions=c.positions,
                       executable=fwd, backward_executable=bwd, saved_choice=c.choice,
                       annotation_bytes=c.annotation_bytes)
        prog.runtime_batch = True
        prog.symbolic_trace = traced
        # .grad guards that are the same at every sample do not depend on the batch size
        varying = {i for i, gs in enumerate(zip(*(x.cap.state_guards for x in caps)))
                   if gs[0][0] == "grad_shape" and len({g[2] for g in gs}) > 1}
        fixed = [g for i, g in enumerate(c.cap.state_guards) if g[0] == "grad_shape" and i not in varying]
        prog.grad_shape_mismatch = lambda flat: _fixed_grad_mismatch(fixed, flat, c.cap)
        return prog


def _relaxed_mismatch(x, g):
    """Program's argument guard with a tensor's leading size free."""
    from .program import _arg_mismatch

    if g[0] != "tensor" or not isinstance(x, Tensor) or not len(g[1]) or x._value.ndim != len(g[1]):
        return _arg_mismatch(x, g)
    shape = x._value.shape
    if shape[1:] != g[1][1:] or x._dtype is not g[2] or x._requires_grad != g[3]:
        want = "[B" + "".join(f", {d}" for d in g[1][1:]) + "]"
        return (f"expected {g[2].short}{want} requires_grad={g[3]}, got "
                f"{x.dtype.short}{list(shape)} requires_grad={x.requires_grad}")
    if x._value.__class__ is not g[4]:
        return _arg_mismatch(x, g)  # (the device changed: its message)
    return None


def _relaxed_state_mismatch(g, flat_args, cap):
    """Program's state guard, except that the shape of a .grad (an argument's .grad has the
    argument's batch size) is checked with its leading size free."""
    from .program import _real, _state_mismatch

    if g[0] != "grad_shape":
        return _state_mismatch(g, flat_args, cap)
    gr = _real(g[1], flat_args)._grad
    if gr is None or gr._dtype is not g[3] or gr._value.ndim != len(g[2]) \
            or gr._value.shape[1:] != tuple(g[2])[1:]:
        return f"{g[4]} changed"
    return None


def _with_batch(flat_args, pattern, batch):
    """The arguments with every "B" tensor replaced by zeros of leading size ``batch`` (same
    dtype, requires_grad and .grad presence): tracing reads shapes, not values."""
    from ..core import creation

    out = list(flat_args)
    made = {}  # the same tensor passed twice stays one tensor (the trace shares it: aliasing.py)
    for i, p in enumerate(pattern):
        if p == "B":
            x = flat_args[i]
            if id(x) in made:
                out[i] = made[id(x)]
                continue
            shape = (batch,) + tuple(x._value.shape[1:])
            t = creation.zeros(shape, dtype=x.dtype)
            if x.grad is not None:
                t.grad = creation.zeros(shape, dtype=x.grad.dtype)
            out[i] = made[id(x)] = t.requires_grad_(x.requires_grad)
    return out


def _ref_key(ref):
    if isinstance(ref, tuple):
        return tuple(_ref_key(r) for r in ref)
    return ref if isinstance(ref, (int, str, type(None))) else ("object", id(ref))


def _same_capture(caps):
    """None when the captures bind, write back and return the same things (only sizes may
    differ), else what differs."""
    def shape_free(c):
        cap = c.cap
        return ([(b.kind, _ref_key(b.ref)) for b in cap.bindings],
                [(k, _ref_key(r)) for k, r in cap.writebacks],
                [tuple(_ref_key(x) for x in a) for a in cap.actions],
                [k for k, _ in cap.diff_outputs], list(cap.freed_outputs),
                [(k, _ref_key(r)) for k, r in cap.out_leaves], repr(cap.out_spec), list(c.positions),
                c.forward is None, c.backward is None)

    first = shape_free(caps[0])
    for c in caps[1:]:
        if shape_free(c) != first:
            return "the function captures different inputs, outputs or updates at another batch size"
    return None


def _fixed_grad_mismatch(guards, flat_args, cap):
    from .program import _state_mismatch

    for g in guards:
        reason = _state_mismatch(g, flat_args, cap)
        if reason:
            return reason
    return None

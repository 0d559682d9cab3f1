"""``tg.compile``: capture a function into IR once per guard set, build it with a backend and
run the built Program on later calls; ``tg.explain`` reports what capture sees.

>>> import tracegrad as tg
>>> @tg.compile(backend="interpreter")
... def f(x):
...     return (x * x).sum()
>>> f(tg.ones(3))
tensor(3.)
>>> len(f.programs)
1
"""
from __future__ import annotations

import functools
import logging
import os
import warnings

from . import pytree
from .autograd import grad_mode
from .ir import autodiff, partition, trace
from .ir.capture import trace_function
from .program import Program

log = logging.getLogger("tracegrad")
BACKENDS = ("c", "interpreter", "cuda")
CACHE_SIZE_LIMIT = 8


class CompileError(RuntimeError):
    """Raised with ``fullgraph=True`` when a function cannot be captured; says why and where."""


def _log_enabled(topic):
    return topic in {t.strip() for t in os.environ.get("TRACEGRAD_LOG", "").split(",")}


def _log(topic, msg, *args):
    if _log_enabled(topic):
        if not log.handlers and not logging.getLogger().handlers:
            logging.basicConfig(level=logging.INFO, format="[tracegrad %(message)s")
        log.setLevel(logging.INFO)
        log.info(f"{topic}] " + msg, *args)


def _build(backend, graph, options):
    if backend == "interpreter":
        from .backends import interpreter

        return interpreter.build(graph, options)
    if backend == "c":
        from .backends import c

        return c.build(graph, options)
    if backend == "cuda":
        from .backends import cuda

        return cuda.build(graph, options)
    raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")


def capture_program(fn, args, kwargs, backend, options=None, name=None):
    """Trace ``fn`` for these arguments and build a Program (raises trace.GraphBreak)."""
    from .ir import passes

    cap = trace_function(fn, args, kwargs, name=name)
    graph = cap.graph
    forward = backward = None
    positions = []
    if cap.diff_outputs:
        with trace.tracing(cap.tracer):
            n_fwd, grad_inputs, grad_outputs = autodiff.differentiate(cap, cap.tracer, graph)
        if grad_outputs:
            forward, backward, _saved = partition.split(graph, n_fwd, grad_inputs, grad_outputs)
            positions = [p for p, _ in grad_outputs]
        graph.nodes = graph.nodes[:n_fwd]
        graph.inputs = [v for v in graph.inputs if v.label != "grad"]
    cap.tracer = None  # the tracer holds symbolic tensors; drop them
    passes.run_default(graph)
    graph.renumber()
    if forward is not None:
        passes.run_default(forward)
        passes.run_default(backward)
    _log("ir", "captured %s\n%s", graph.name, forward or graph)
    exe = _build(backend, forward if forward is not None else graph, options)
    bexe = _build(backend, backward, options) if backward is not None else None
    prog = Program(cap, backend, forward, backward, grad_positions=positions, executable=exe,
                   backward_executable=bexe)
    _log("code", "%s", prog.source)
    return prog


class CompiledFunction:
    """The result of ``tg.compile(fn)``: call it like ``fn``."""

    def __init__(self, fn, backend="c", fullgraph=False, dynamic=False, options=None):
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
        self.fn = fn
        self.backend = backend
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.options = dict(options or {})
        self.programs = []
        self.breaks = []  # reasons this function fell back to eager
        self._warned_limit = False
        self._eager = False
        functools.update_wrapper(self, fn, updated=())

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __call__(self, *args, **kwargs):
        if self._eager:
            return self.fn(*args, **kwargs)
        flat, _ = pytree.flatten((args, kwargs))
        enabled = grad_mode.is_grad_enabled()
        reasons = []
        for prog in self.programs:
            reason = prog.mismatch(flat, enabled)
            if reason is None:
                return prog.run(flat)
            reasons.append(reason)
        if self.programs:
            _log("guards", "retracing %s: %s", self.__name__, "; ".join(reasons))
        if len(self.programs) >= CACHE_SIZE_LIMIT:
            if not self._warned_limit:
                warnings.warn(
                    f"tg.compile: {self.__name__} was recompiled {len(self.programs)} times "
                    f"(limit {CACHE_SIZE_LIMIT}); last reason: {reasons[-1]}. Running it eagerly "
                    "from now on; use dynamic=True or keep argument shapes and Python values fixed.",
                    RuntimeWarning, stacklevel=2)
                self._warned_limit = True
            return self.fn(*args, **kwargs)
        prog = self._capture(args, kwargs)
        if prog is None:
            return self.fn(*args, **kwargs)
        self.programs.append(prog)
        return prog.run(flat)

    def _capture(self, args, kwargs):
        try:
            return capture_program(self.fn, args, kwargs, self.backend, self.options,
                                   name=getattr(self.fn, "__name__", None))
        except trace.GraphBreak as gb:
            where = f" at {gb.where}" if gb.where else ""
            msg = f"tg.compile: graph break in {self.__name__}: {gb.reason}{where}"
            self.breaks.append((gb.reason, gb.where))
            if self.fullgraph:
                raise CompileError(msg) from None
            _log("breaks", "%s", msg)
            warnings.warn(msg + "; running the whole function eagerly.", RuntimeWarning, stacklevel=3)
            self._eager = True
            return None

    def inspect(self, *args, **kwargs):
        """The Program for these arguments (traced and built if needed)."""
        flat, _ = pytree.flatten((args, kwargs))
        enabled = grad_mode.is_grad_enabled()
        for prog in self.programs:
            if prog.mismatch(flat, enabled) is None:
                return prog
        try:
            prog = capture_program(self.fn, args, kwargs, self.backend, self.options,
                                   name=getattr(self.fn, "__name__", None))
        except trace.GraphBreak as gb:
            raise CompileError(f"cannot capture {self.__name__}: {gb}") from None
        self.programs.append(prog)
        return prog


def compile(fn=None, *, backend="c", fullgraph=False, dynamic=False, options=None):
    """Compile ``fn`` (a function or a ``tg.nn.Module``). Usable as ``@tg.compile``,
    ``@tg.compile(backend=...)`` or ``tg.compile(module)``."""
    if fn is None:
        return lambda f: compile(f, backend=backend, fullgraph=fullgraph, dynamic=dynamic, options=options)
    try:
        from .nn import Module
    except ImportError:  # pragma: no cover
        Module = ()
    if isinstance(fn, Module):
        compiled = CompiledFunction(fn.forward, backend, fullgraph, dynamic, options)
        return CompiledModule(fn, compiled)
    return CompiledFunction(fn, backend, fullgraph, dynamic, options)


class CompiledModule:
    """``tg.compile(module)``: calls go through the compiled forward; attributes pass through."""

    def __init__(self, module, compiled):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_compiled", compiled)

    def __call__(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, item):
        if item in ("inspect", "programs", "breaks"):
            return getattr(self._compiled, item)
        return getattr(self._module, item)

    def __setattr__(self, key, value):
        setattr(self._module, key, value)

    def __repr__(self):
        return f"CompiledModule({self._module!r})"


class Explanation:
    def __init__(self, graph_count, breaks, op_counts, programs):
        self.graph_count = graph_count
        self.graph_break_count = len(breaks)
        self.break_reasons = breaks
        self.op_counts = op_counts
        self.programs = programs

    def __str__(self):
        lines = [f"Graph count: {self.graph_count}", f"Graph break count: {self.graph_break_count}"]
        for reason, where in self.break_reasons:
            lines.append(f"  break: {reason}" + (f" (at {where})" if where else ""))
        lines.append("Op counts: " + ", ".join(f"{k}={v}" for k, v in self.op_counts.items()))
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, *args, **kwargs):
    """Trace ``fn`` on these arguments without running it; report graphs, breaks, op counts."""
    cf = fn if isinstance(fn, CompiledFunction) else CompiledFunction(fn, backend="interpreter")
    try:
        prog = capture_program(cf.fn, args, kwargs, "interpreter", name=getattr(cf.fn, "__name__", None))
    except trace.GraphBreak as gb:
        return Explanation(0, [(gb.reason, gb.where)], {}, [])
    g = prog.forward or prog.graph
    counts = dict(prog.graph.op_counts())
    if prog.backward is not None:
        for k, v in prog.backward.op_counts().items():
            counts[k] = counts.get(k, 0) + v
    del g
    return Explanation(1, [], counts, [prog])

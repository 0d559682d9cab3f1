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
import threading
import warnings
from typing import TYPE_CHECKING

from ..core import pytree
from ..core.storage import allocated as _device_allocated
from .._logging import enabled as _log_enabled
from .._logging import log as _log
from .._logging import switch as _log_switch
from ..autograd import anomaly as _anomaly
from ..autograd import forward_ad as _forward_ad
from ..autograd import grad_mode
from ..autograd import saved_hooks as _saved_hooks
from ..autograd.graph import SavedTensorsFreed
from .ir import aliasing as _aliasing
from .transforms import autodiff, partition
from .ir import trace
from .ir.capture import trace_function
from .program import Program

if TYPE_CHECKING:
    from .profile import Profile

BACKENDS = ("c", "cuda", "interpreter")
CACHE_SIZE_LIMIT = 8


class CompileError(RuntimeError):
    """Raised with ``fullgraph=True`` when a function cannot be captured; says why and where."""


def _build(backend, graph, options):
    """Build ``graph`` with ``backend``. A native backend that cannot compile it (an op with no
    lowering rule) hands it to the interpreter with a warning naming why; fullgraph=True
    promised native code, so there it is an error."""
    import importlib

    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    module = importlib.import_module(f".backends.{backend}", __package__)
    if backend == "interpreter":
        return module.build(graph, options)
    try:
        return module.build(graph, options)
    except module.Unsupported as e:
        if (options or {}).get("fullgraph"):
            raise CompileError(f"backend={backend!r} cannot compile {graph.name}: {e}") from None
        warnings.warn(f"tg.compile: backend={backend!r} cannot compile {graph.name}: {e}; running "
                      "this graph with the interpreter.", RuntimeWarning, stacklevel=4)
        from .backends import interpreter

        return interpreter.build(graph, options)


CORE_OPTIONS = ("optimize", "partition", "verify")  # read here, not passed to backends


class CapturedGraphs:
    """What tracing and the graph pipeline produce before a backend builds anything."""

    def __init__(self, cap, graph, forward, backward, positions, choice, annotation_bytes):
        self.cap, self.graph, self.forward, self.backward = cap, graph, forward, backward
        self.positions, self.choice, self.annotation_bytes = positions, choice, annotation_bytes


def capture_graphs(fn, args, kwargs, options=None, name=None, extra_guards=(), keep_trace_text=False):
    """Trace ``fn`` for these arguments and run the graph pipeline (raises trace.GraphBreak).

    Pipeline: trace (whole call, including any backward()/optimizer step inside) ->
    differentiation pass when outputs are differentiable after the call (joint graph) ->
    passes (simplify, fold, CSE, DCE) on the joint graph -> forward/backward partition
    (min-cut vs saved-tensor annotations). ``options``: ``optimize`` (default True),
    ``partition`` ("mincut" or "annotations"), ``verify`` (run the IR verifier after every
    pass; default from TRACEGRAD_VERIFY). Shared by tg.compile and tg.export.
    ``keep_trace_text``: keep the listing of the trace itself (before any pass) as
    ``trace_text``, which dynamic=True compares between batch sizes."""
    from . import passes

    options = dict(options or {})
    verify = options.get("verify")
    verify = passes.verify_enabled() if verify is None else verify
    cap = trace_function(fn, args, kwargs, name=name, extra_guards=extra_guards)
    joint = cap.graph
    if keep_trace_text:
        from .dynamic import trace_listing

        trace_text = trace_listing(joint)
    else:
        trace_text = None
    n_user = len(joint.outputs)
    grad_inputs, positions = [], []
    _set_aside_freed_outputs(cap)
    if cap.diff_outputs:
        with trace.tracing(cap.tracer):
            try:
                _, grad_inputs, grad_outputs = autodiff.differentiate(cap, cap.tracer, joint)
            except SavedTensorsFreed:
                # eager mode raises this only when the outputs' backward is run: stay eager
                raise trace.GraphBreak("an output's backward would read values that a backward() "
                                       "or autograd.grad() inside the function freed (no "
                                       "retain_graph=True)") from None
        if grad_outputs:
            joint.outputs += [v for _, v in grad_outputs]
            positions = [p for p, _ in grad_outputs]
        else:  # nothing to differentiate after all: drop the gradient inputs again
            joint.inputs = [v for v in joint.inputs if not any(v is g for g in grad_inputs)]
    cap.tracer = None  # the tracer holds symbolic tensors; drop them
    if verify:
        joint.verify()
    if options.get("optimize", True):
        passes.optimize(joint, verify)
    else:
        passes.run_pass(passes.dce, joint, verify)
    positions = _prune_inputs(joint, cap, positions)
    forward = backward = None
    choice, annotation_bytes = None, 0
    if positions:
        sp = partition.split(joint, n_user, grad_inputs, [k for k, _ in cap.diff_outputs],
                             strategy=options.get("partition", "mincut"))
        graph, forward, backward = sp.graph, sp.forward, sp.backward
        choice, annotation_bytes = sp.choice, sp.annotation_bytes
        if verify:
            for g in (graph, forward, backward):
                g.verify()
    else:
        graph = joint.renumber()
    cap.graph = graph
    c = CapturedGraphs(cap, graph, forward, backward, positions, choice, annotation_bytes)
    c.trace_text = trace_text
    return c


def _set_aside_freed_outputs(cap):
    """Outputs whose autograd graph a backward() inside the function already freed (an RNN's
    returned hidden state, say) get no compiled backward: as eagerly, their .backward() raises
    (program._FreedNode). The other outputs are differentiated as usual."""
    from ..autograd.graph import AccumulateGrad, OpNode

    def freed(node):
        # released and holding saved values (what a second backward would read): a leaf's
        # accumulator or an op that saves nothing runs again eagerly too
        if not node._released or isinstance(node, AccumulateGrad):
            return False
        return bool(node.saved) if isinstance(node, OpNode) else True

    def reaches_freed(t):
        seen, stack = set(), [t.grad_fn]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if freed(node):
                return True
            stack.extend(fn for fn, _ in node.next_functions)
        return False

    keep = []
    for k, t in cap.diff_outputs:
        if reaches_freed(t):
            cap.freed_outputs.append(k)
        else:
            keep.append((k, t))
    cap.diff_outputs = keep


def capture_program(fn, args, kwargs, backend, options=None, name=None, extra_guards=()):
    """Trace ``fn`` for these arguments (``capture_graphs``) and build a Program with
    ``backend``; options other than the pipeline's go to the backend."""
    options = dict(options or {})
    backend_options = {k: v for k, v in options.items() if k not in CORE_OPTIONS}
    c = capture_graphs(fn, args, kwargs, options, name, extra_guards)
    on_device = False
    # (no device buffer was ever made: no cuda tensor exists, and the CUDA backend stays unimported,
    # ~70 ms of a CPU process's first compile)
    if _device_allocated()[2]:
        from .backends.cuda import device_programs

        on_device = device_programs.on_device(c.cap, args, kwargs)  # (cuda tensors: the CUDA backend)
    if on_device and backend != "interpreter":
        backend = "cuda"
    if c.cap.changed_while_tracing:  # it runs once (CompiledFunction._capture_once): no C build
        backend = "interpreter"
    forward, backward, graph = c.forward, c.backward, c.graph
    if _log_enabled("ir"):
        text = str(forward) + "\n\n" + str(backward) if forward is not None else str(graph)
        _log("ir", "captured %s\n%s", graph.name, text)
    fwd_options = backend_options
    if backend == "c":  # results the executable may write straight into user tensors
        from .program import inplace_pairs

        fwd_options = dict(backend_options, inplace=inplace_pairs(c.cap))
    exe = _build(backend, forward if forward is not None else graph, fwd_options)
    bexe = _build(backend, backward, backend_options) if backward is not None else None
    if on_device:  # (an interpreter fallback copies device arrays over and back)
        from .backends.cuda import device_programs

        exe, bexe = device_programs.wrap(exe), device_programs.wrap(bexe)
    prog = Program(c.cap, backend, graph, forward, backward, grad_positions=c.positions,
                   executable=exe, backward_executable=bexe, saved_choice=c.choice,
                   annotation_bytes=c.annotation_bytes)
    _log("code", "%s", prog.source)
    return prog


def _prune_inputs(joint, cap, positions):
    """Drop lifted tensors and seeds the optimised graph no longer reads (arguments stay: they
    are the program's interface); returns the gradient positions renumbered."""
    used = {id(i) for n in joint.nodes for i in n.inputs}
    used |= {id(v) for v in joint.outputs} | {id(v) for v, _ in joint.writebacks}
    n_bound = len(cap.bindings)
    keep = [k for k in range(n_bound) if cap.bindings[k].kind == "arg" or k in positions
            or id(joint.inputs[k]) in used]
    if len(keep) == n_bound:
        return positions
    renumber = {old: new for new, old in enumerate(keep)}
    joint.inputs = [joint.inputs[k] for k in keep] + joint.inputs[n_bound:]
    cap.bindings = [cap.bindings[k] for k in keep]
    return [renumber[p] for p in positions]


_CONTAINERS = (tuple, list, dict)  # what pytree.flatten descends into


def _any_container(args):
    for a in args:  # (a plain loop: the cheapest form of any() on every call)
        if isinstance(a, _CONTAINERS):
            return True
    return False


_MISS = object()


def _first_program_hit(prog):
    """``hit(args)``: the result of ``prog`` for a call with these positional arguments when
    ``CompiledFunction.__call__`` would run it (its first program, checked first), else
    ``_MISS`` (the general path then decides: another program, a retrace, a log line). The
    same checks in the same order, without the generality a hit does not need (measured on
    the tiny step: 1.5 us of a 8.5 us call was that path); None when ``prog`` has no
    straight-line check and run (fastpath.py).

    A container among the arguments fails the guards of a program traced without one (a list
    is no tensor, and its leaves would make more arguments), so the arguments need no
    flattening here."""
    check, run = prog._fast_check, prog._fast_run
    if type(prog) is not Program or not check or not run:
        return None
    hooks, grad, anomaly, forward = _saved_hooks._state, grad_mode._state, _anomaly, _forward_ad
    logs = _log_switch  # (logs.on: one attribute read while no log topic is on)

    def hit(args):
        if hooks.stack or anomaly._enabled or forward._state is not None or (logs.on and logs.refresh()):
            return _MISS  # (autograd state that may block compiled code; logging asked for)
        flat = list(args)
        return run(flat) if check(flat, grad.grad) else _MISS

    return hit


class CompiledFunction:
    """The result of ``tg.compile(fn)``: call it like ``fn``."""

    def __init__(self, fn, backend="c", fullgraph=False, dynamic=False, options=None):
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
        if backend == "cuda":  # no GPU and no emulation: refused now, naming both ways out
            from .backends import cuda

            cuda.toolchain()
        self.fn = fn
        self.backend = backend
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.options = dict(options or {})
        self.programs = []
        self.breaks = []  # reasons this function fell back to eager
        self._warned_limit = False
        self._compile_lock = threading.RLock()  # (a traced function may call itself compiled)
        self._eager = False
        # the call of programs[0], checked first (_first_program_hit); False where it has none
        self._hit = None
        self.graph_name = _graph_name(fn)  # the name of its IR graphs
        functools.update_wrapper(self, fn, updated=())
        _compiler_api._instances.add(self)  # (for tg.compiler.reset)

    def _build_options(self):
        # backends see fullgraph so that one that cannot compile a graph raises CompileError
        return dict(self.options, fullgraph=self.fullgraph)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __call__(self, *args, **kwargs):
        if self._hit and not kwargs:
            result = self._hit(args)
            if result is not _MISS:
                return result
        if self._eager:
            return self.fn(*args, **kwargs)
        if not kwargs and not _any_container(args):
            flat, spec = list(args), None  # leaves only: the spec is only needed on a miss
        else:
            flat, spec = pytree.flatten((args, kwargs))
        blocked = self._autograd_state_blocker(flat, args, kwargs)
        if blocked is not None:  # checked before the cache: a stored program would ignore it
            return self._run_eager_once(blocked, args, kwargs)
        enabled = grad_mode.is_grad_enabled()
        reasons = []
        for k, prog in enumerate(self.programs):
            reason = prog.mismatch(flat, enabled)
            if reason is None:
                if _log_enabled("cache"):
                    _log("cache", "%s: hit, program %d of %d", self.__name__, k + 1, len(self.programs))
                ready = getattr(prog, "_fast_run", None) is not None  # (its run was generated)
                if k == 0 and spec is None and self._hit is None and ready:
                    self._hit = _first_program_hit(prog) or False
                return prog.run(flat)
            reasons.append(reason)
        if self.programs:
            _log("guards", "retracing %s: %s", self.__name__,
                 "; ".join(f"program {k + 1}: {r}" for k, r in enumerate(reasons)))
        else:
            _log("cache", "%s: miss, tracing the first program", self.__name__)
        if len(self.programs) >= CACHE_SIZE_LIMIT:
            if not self._warned_limit:
                warnings.warn(
                    f"tg.compile: {self.__name__} was recompiled {len(self.programs)} times "
                    f"(limit {CACHE_SIZE_LIMIT}); last reason: {reasons[-1]}. Running it eagerly "
                    "from now on; use dynamic=True or keep argument shapes and Python values fixed.",
                    RuntimeWarning, stacklevel=2)
                self._warned_limit = True
            return self.fn(*args, **kwargs)
        prog = self._capture_once(args, kwargs, flat, spec, enabled, len(reasons))
        if prog is None:
            return self.fn(*args, **kwargs)
        return prog.run(flat)

    def _capture_once(self, args, kwargs, flat, spec, enabled, n_checked):
        """Trace and build a program for this call, or None (eager). Threads that miss at once
        take turns: a later one first checks the programs the others added meanwhile, so one
        call traces where eight threads' first calls would each have traced their own."""
        with self._compile_lock:
            for prog in self.programs[n_checked:]:
                if prog.mismatch(flat, enabled) is None:
                    return prog
            if self._eager:
                return None
            prog = self._capture(args, kwargs)
            if prog is None:
                return None
            if prog.capture.changed_while_tracing:
                return self._run_once_then_eager(prog)
            if spec is None:
                spec = pytree.flatten((args, kwargs))[1]
            prog = self._dynamic_wrap(prog, flat, spec)
            self.programs.append(prog)
            _log("cache", "%s: compiled program %d", self.__name__, len(self.programs))
            return prog

    def _run_once_then_eager(self, prog):
        """The trace changed Python state the function reads (an append to an outer list, an
        attribute of a config object): the change happened once, while tracing, so this call
        runs the traced program (the tensor results of that same call) and later calls run
        eagerly, each making its change. fullgraph=True raises instead."""
        reason = prog.capture.changed_while_tracing
        msg = f"tg.compile: graph break in {self.__name__}: {reason}"
        self.breaks.append((reason, None))
        self._eager, self._hit = True, False
        if self.fullgraph:
            raise CompileError(msg)
        _log("breaks", "%s", msg)
        warnings.warn(msg + "; running the function eagerly from the next call.", RuntimeWarning,
                      stacklevel=5)
        return prog

    def _autograd_state_blocker(self, flat, args, kwargs):
        """Why autograd state outside the arguments' guards (custom saved-tensor hooks, anomaly
        mode, forward-AD tangents on the arguments or on lifted tensors) forbids running a
        compiled program for this call, or None."""
        reason = _saved_hooks.compile_blocker() or _anomaly.compile_blocker()
        if reason is None and _forward_ad._state is not None:
            from .ir.capture import _arg_names
            from ..core.tensor import Tensor

            names = _arg_names(self.fn, args, kwargs, len(flat))
            tensors = [(x, f"argument {names[i]}") for i, x in enumerate(flat) if isinstance(x, Tensor)]
            tensors += [(e.tensor, "a tensor the function reads from outside")
                        for p in self.programs for e in p.capture.lifted]
            reason = _forward_ad.compile_blocker([t for t, _ in tensors], [n for _, n in tensors])
        return reason

    def _run_eager_once(self, reason, args, kwargs):
        """This call runs eagerly (later calls may compile again); fullgraph=True raises."""
        msg = f"tg.compile: graph break in {self.__name__}: {reason}"
        self.breaks.append((reason, None))
        if self.fullgraph:
            raise CompileError(msg)
        _log("breaks", "%s", msg)
        warnings.warn(msg + "; running this call eagerly.", RuntimeWarning, stacklevel=3)
        return self.fn(*args, **kwargs)

    def _alias_fallback(self, af, args, kwargs):
        """Inputs that overlap in a way the trace cannot express (ir/aliasing.py): this call,
        and later ones with the same aliasing, run eagerly behind an EagerFallback entry (other
        calls still compile); fullgraph=True raises."""
        msg = f"tg.compile: graph break in {self.__name__}: {af.reason}"
        self.breaks.append((af.reason, None))
        if self.fullgraph:
            raise CompileError(msg) from None
        _log("breaks", "%s", msg)
        warnings.warn(msg + "; running calls with this aliasing eagerly.", RuntimeWarning, stacklevel=4)
        return _aliasing.EagerFallback(af.capture, self.fn, pytree.flatten((args, kwargs))[1], af.reason)

    def _dynamic_wrap(self, prog, flat, spec):
        """With dynamic=True, one DynamicProgram (leading sizes free) stands for ``prog``. A
        program returning views of its inputs stays one program per shape: the view functions
        it applies to the inputs after the call hold the traced sizes."""
        if not self.dynamic or isinstance(prog, _aliasing.EagerFallback) or prog.capture.view_outputs:
            return prog
        from .dynamic import DynamicProgram, trace_listing

        options = self._build_options()
        backend_options = {k: v for k, v in options.items() if k not in CORE_OPTIONS}
        return DynamicProgram(prog, flat, spec, self._capture, self.fn,
                              graphs=lambda a, k: capture_graphs(self.fn, a, k, options, name=self.graph_name,
                                                                 keep_trace_text=True),
                              trace_text=lambda a, k: trace_listing(trace_function(self.fn, a, k,
                                                                                   name=self.graph_name).graph),
                              backend_options=backend_options)

    def _capture(self, args, kwargs):
        try:
            return capture_program(self.fn, args, kwargs, self.backend, self._build_options(),
                                   name=self.graph_name)
        except _aliasing.AliasFallback as af:
            return self._alias_fallback(af, args, kwargs)
        except trace.GraphBreak as gb:
            where = f" at {gb.where}" if gb.where else ""
            msg = f"tg.compile: graph break in {self.__name__}: {gb.reason}{where}"
            self.breaks.append((gb.reason, gb.where))
            if self.fullgraph:
                raise CompileError(msg) from None
            _log("breaks", "%s", msg)
            warnings.warn(msg + "; running the whole function eagerly.", RuntimeWarning, stacklevel=3)
            self._eager = True
            self._hit = False  # eager from now on, for every call
            return None

    def inspect(self, *args, **kwargs):
        """The Program for these arguments (traced and built if needed)."""
        flat, spec = pytree.flatten((args, kwargs))
        enabled = grad_mode.is_grad_enabled()
        for prog in self.programs:
            if prog.mismatch(flat, enabled) is None:
                return prog
        try:
            prog = capture_program(self.fn, args, kwargs, self.backend, self._build_options(),
                                   name=self.graph_name)
        except trace.GraphBreak as gb:
            raise CompileError(f"cannot capture {self.__name__}: {gb}") from None
        prog = self._dynamic_wrap(prog, flat, spec)
        self.programs.append(prog)
        return prog

    def profile(self, *args, **kwargs) -> Profile:
        """A per-kernel profile of the call with these arguments (compiler/profile/): each
        kernel's time, FLOPs, bytes and share of this machine's measured peak, the IR nodes it
        computes and its generated C; ``print`` it, read ``.rows`` or ``.save_chrome_trace(path)``.
        The call's effects (parameter updates, ``.grad``) are not applied. For the number of
        runs or a given peak: ``tracegrad.compiler.profile.profile_call``.

        >>> import tracegrad as tg
        >>> f = tg.compile(lambda x: (x * 2).exp().sum())
        >>> p = f.profile(tg.ones(1000))  # doctest: +SKIP
        >>> print(p)  # doctest: +SKIP
        """
        from .profile import profile_call

        return profile_call(self, args, kwargs)


COMPILE_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


# (the parameter `disable` is torch.compile's; tg.compiler.disable, bound below, is a function)
def compile(fn=None, *, backend="c", fullgraph=False, dynamic=False, options=None, mode=None,
            disable=False):
    """Compile ``fn`` (a function or a ``tg.nn.Module``). Usable as ``@tg.compile``,
    ``@tg.compile(backend=...)`` or ``tg.compile(module)``.

    ``mode`` takes PyTorch's names so that code written for ``torch.compile`` runs; every mode
    compiles the same way here (one native program per guard set, no autotuning: the C
    backend's choices are made by measurement when it is built). ``disable=True`` returns
    ``fn`` itself, uncompiled, as PyTorch does."""
    if mode not in COMPILE_MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(map(str, COMPILE_MODES[1:]))}")
    if fn is None:
        return lambda f: compile(f, backend=backend, fullgraph=fullgraph, dynamic=dynamic, options=options,
                                 mode=mode, disable=disable)
    if disable:
        return fn
    try:
        from ..nn import Module
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
        if item in ("inspect", "programs", "breaks", "profile"):
            return getattr(self._compiled, item)
        return getattr(self._module, item)

    def __setattr__(self, key, value):
        setattr(self._module, key, value)

    def __repr__(self):
        return f"CompiledModule({self._module!r})"


class Explanation:
    """What ``tg.explain`` found: ``graph_count`` (1 when the whole function is captured, 0
    when it breaks), ``graph_break_count`` and ``break_reasons`` ((reason, "file:line: source")
    pairs), ``op_counts`` (op name -> nodes over the programs that run: the forward, or the
    whole call, plus the backward) and ``programs``."""

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
        lines.append("Op counts: " + (", ".join(f"{k}={v}" for k, v in self.op_counts.items()) or "none"))
        for prog in self.programs:
            if prog.forward is not None:
                lines.append(prog.saved_report())
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, *args, **kwargs):
    """Trace ``fn`` (a function, a compiled function or a module) on these arguments without
    running it; report graphs, graph breaks with reasons, and op counts.

    >>> import tracegrad as tg
    >>> print(tg.explain(lambda x: x.sin().sum() if x.sum() > 0 else x, tg.ones(3)))
    ... # doctest: +ELLIPSIS
    Graph count: 0
    Graph break count: 1
      break: bool() on a traced tensor (Python control flow on a tensor value) (at ...)
    Op counts: none
    """
    target, extra = _unwrap(fn)
    try:
        prog = capture_program(target, args, kwargs, "interpreter",
                               name=_graph_name(target), extra_guards=extra)
    except trace.GraphBreak as gb:
        return Explanation(0, [(gb.reason, gb.where)], {}, [])
    if prog.capture.changed_while_tracing:
        return Explanation(0, [(prog.capture.changed_while_tracing, None)], {}, [])
    counts = {}
    for g in (prog.forward or prog.graph, prog.backward):
        for k, v in (g.op_counts() if g is not None else {}).items():
            counts[k] = counts.get(k, 0) + v
    counts = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return Explanation(1, [], counts, [prog])


def _unwrap(fn):
    """(the Python function to trace, extra guards) for a function, CompiledFunction,
    CompiledModule or Module."""
    if isinstance(fn, CompiledModule):
        fn = fn._module
    if isinstance(fn, CompiledFunction):
        return fn.fn, ()
    try:
        from ..nn import Module
    except ImportError:  # pragma: no cover
        Module = ()
    if isinstance(fn, Module):
        return fn.forward, ()
    return fn, ()


def _graph_name(fn):
    """A module's forward is listed under the module's class name ("Sequential(...)")."""
    self = getattr(fn, "__self__", None)
    if self is not None and hasattr(self, "named_parameters") and fn.__name__ == "forward":
        return type(self).__name__
    return getattr(fn, "__name__", None)


from . import torch_compiler as _compiler_api  # noqa: E402  (torch.compiler's helpers, on tg.compiler)

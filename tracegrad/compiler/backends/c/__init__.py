"""The C backend: an IR Graph -> one generated C function -> a shared object loaded with cffi.

``build(graph, options)`` returns an executable ``exe(list_of_input_arrays) -> list of arrays``
(graph.outputs, then graph.writebacks), like the interpreter's. The generated function is
``int tg_run(void **args, char *ws)``: ``args`` holds pointers to the input buffers (NumPy
arrays, no copies unless a caller passes a non-contiguous array), the graph's constants and
freshly allocated outputs; ``ws`` is the program's one workspace.

Options (``tg.compile(..., options={...})``): ``openmp`` (True, False or "auto", the default:
see ``resolve_openmp``), ``native`` (``-march=native``, default True), ``blas`` (default True),
``cache`` (default True).

Loading is ABI-mode cffi (``ffi.dlopen``): measured on this project's machine, building with
the plain C compiler costs ~0.1 s where an API-mode extension needs Python headers and
setuptools (~1 s more), and an ABI call costs ~0.4 us, well inside the per-call budget. The
declarations come from cffi's out-of-line module shipped with the package (``_cffi_abi.py``,
see ``generate_cffi_module``), so that a new process does not import pycparser to parse them.

>>> import numpy as np, tracegrad as tg
>>> f = tg.compile(lambda x: (x * 2).exp().sum(), backend="c")
>>> round(float(f(tg.zeros(3))), 4)
3.0
"""
from __future__ import annotations

import copy
import functools
import hashlib
import importlib.resources
import os
import re
import sys
import threading
import warnings
from operator import is_
from pathlib import Path

import numpy as np

from ....ops.linalg import MATMUL
from . import factor_kernels, kernels  # (imported for their registrations: rules.RULES)
from .lower import BLAS_SERIAL_WORK, matmul_work
from .rules import RULES, Unsupported  # (api.py catches Unsupported)
from .toolchain import MVEC_BINARY, CompileFailed, NoCompiler

CODEGEN_VERSION = 8  # 2: tg_set_blas takes OpenBLAS's thread-count setter/getter; 3: and ?omatcopy;
# 4: the runtime split by theme (runtime.py); 5: factorizations through LAPACK (theme lapack);
# 6: identical kernels as one function (shared.py); 7: tg_set_blas_batch (cblas_?gemm_batch);
# 8: the gemm theme linked from the runtime object (runtime_object.py)
_ffi = None
_warned_no_compiler = False

# sys.getrefcount(pool[pos]) of an array that only its pool list holds, measured with the very
# expression CExecutable._fresh_outputs uses (so it follows the interpreter's own counting)
_probe = [np.empty(0)]
_POOL_ONLY = sys.getrefcount(_probe[0])
del _probe


def _templates_dir():
    """The C templates, inside this package (package data)."""
    return Path(__file__).resolve().parent / "templates"


_SOURCES = ("__init__.py", "lower.py", "kernels.py", "factor_kernels.py", "views.py", "memory.py",
            "batch_split.py", "half.py", "text.py", "runtime.py", "runtime_object.py", "shared.py", "rules.py",
            "../rules.py")


def _codegen_fingerprint():
    """Hash of the templates and the lowering code: any change invalidates cached builds."""
    h = hashlib.sha256(str(CODEGEN_VERSION).encode())
    tdir = _templates_dir()
    for path in sorted(tdir.rglob("*")):
        if path.suffix in (".j2", ".h", ".c"):
            h.update(path.relative_to(tdir).as_posix().encode() + path.read_bytes())
    here = Path(__file__).parent
    for name in _SOURCES:
        h.update((here / name).read_bytes())
    return h.hexdigest()


_fingerprint = None


# The C declarations every generated program exports (runtime.h.j2, program.c.j2).
FFI_CDEF = ("int tg_run(void **args, char *ws); int tg_run_dyn(void **args, char *ws, int64_t B); "
            "void tg_set_blas(void *s, void *d, int ilp64, void *threads_local, void *set_threads, "
            "void *get_threads, void *somatcopy, void *domatcopy); void tg_set_pool(void *parallel2); "
            "void tg_set_collective(void *fn); void tg_set_lapack(void **fns, int count); "
            "void tg_set_blas_batch(void *sgemm_batch, void *dgemm_batch);")


def generate_cffi_module(directory):
    """Write cffi's out-of-line ABI module for FFI_CDEF (``_cffi_abi.py``) into ``directory``;
    returns its path. The package ships its output as ``_cffi_abi.py`` (a test regenerates and
    compares it): importing that takes ~2 ms where ``cffi.FFI().cdef`` imports and runs
    pycparser, ~40 ms of a warm-cache first call on this project's machine."""
    import cffi

    builder = cffi.FFI()
    builder.set_source("_cffi_abi", None)
    builder.cdef(FFI_CDEF)
    return builder.compile(tmpdir=str(directory))


OPENMP_RUNTIMES = ("libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so", "libomp.dylib")
_pinned_openmp = []

# Functions a runtime theme exports for the loader to hand a function pointer to, as tg_set_blas
# does (setter name -> a function returning the address), called at load on programs that define
# the setter: tracegrad/distributed/_native.py adds tg_set_collective (a callback into mpi4py).
LOAD_SETTERS = {}


def _pin_openmp_runtime():
    """Keep the OpenMP runtime a program brought in mapped until the process ends. cffi unloads
    a program's library when its handle is collected (at the latest at interpreter exit), and
    with the last one the runtime; its threads, still spinning in it under
    ``OMP_WAIT_POLICY=active``, then crash the process (exit status 139). A ctypes handle is
    never closed: taken once on the runtime already loaded (RTLD_NOLOAD), it pins it."""
    if _pinned_openmp:
        return
    import ctypes

    from .threads import apply_to_openmp

    for name in OPENMP_RUNTIMES:
        try:
            _pinned_openmp.append(ctypes.CDLL(name, mode=getattr(os, "RTLD_NOLOAD", 0) | os.RTLD_NOW))
        except OSError:
            continue
        apply_to_openmp(_pinned_openmp[-1])  # a tg.set_num_threads made before it was loaded
        return


def _ffi_instance():
    global _ffi
    if _ffi is None:
        # OpenMP threads that spin after a parallel loop steal the cores OpenBLAS's threads
        # need (measured on the medium workload: 50 ms -> 23 ms a step). libgomp reads this
        # when the first program loads it; a user's own setting wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from ._cffi_abi import ffi
        except Exception:  # a cffi that cannot read the shipped module: parse the cdef instead
            import cffi

            ffi = cffi.FFI()
            ffi.cdef(FFI_CDEF)
        _ffi = ffi
    return _ffi


def render(plan, name="graph", export=None, dynamic=False, profile=False, linked=False):
    """The C source of a lowered plan (jinja2 templates in compiler/backends/c/templates/). ``export``
    (a C identifier, used by tg.export) renders ``static int <export>_run(args, ws)`` without
    the loader-only ``tg_set_blas`` and its mutable globals (BLAS then comes from -DTG_BLAS).
    ``dynamic`` renders ``tg_run_dyn(args, ws, tg_B)`` for backends/c/symbolic.py, which
    rewrites the batch-dependent literals into expressions of ``tg_B``. ``profile`` renders
    the timed variant of compiler/profile/ (a clock read at the start of each kernel, on the
    kernel's own comment line, so that every line keeps its number). ``linked``: the program
    declares the functions of runtime_object.THEMES, to be linked with that object."""
    if export and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", export):  # (tg.export checked it fully)
        raise ValueError(f"render: export must be a C identifier, got {export!r}")
    return render_template("program.c.j2", [plan], buffers=plan.buffers, kernels=plan.kernels, name=name,
                           export=export or "", dynamic=dynamic, profile=profile,
                           vector_math=not export and plan.fast_math,
                           runtime_part="linked" if linked else "")


def render_template(template, plans, **context):
    """Render one of compiler/backends/c/templates/ with the settings every program shares and
    the runtime that the kernels of ``plans`` use (runtime.py: the core and the themes they
    call). ``name`` (the graph's: a user's function or class name) is shown in a comment only,
    through ``text.comment_text``: it can neither end the comment nor add a line
    (docs/security.md)."""
    import jinja2

    from . import runtime
    from .shared import SharedKernels
    from .text import comment_text

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(_templates_dir())),
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    context = dict(dict(codegen_version=CODEGEN_VERSION, export="", dynamic=False, profile=False,
                        mvec_binary=MVEC_BINARY, runtime_part="",
                        blas_serial_work=BLAS_SERIAL_WORK, **runtime.context(plans)), **context)
    if "name" in context:
        context["name"] = comment_text(context["name"])
    # identical kernels: one function each (shared.py); not in a dynamic program, whose
    # batch-dependent literals symbolic.py rewrites in tg_run_dyn's own scope
    share = SharedKernels(prefix=context["export"] or "tg", enabled=not context["dynamic"])
    return share.finish(env.get_template(template).render(share=share, **context))


@functools.lru_cache(maxsize=None)
def runtime_object_source():
    """The C source of the runtime object (runtime_object.py): the themes of its THEMES, their
    functions and BLAS pointers hidden, the loader's setters exported."""
    from . import runtime_object

    return render_template(runtime_object.TEMPLATE, [], runtime_part="object", vector_math=False,
                           runtime_themes=[f"runtime/{t}.h.j2" for t in runtime_object.THEMES])


def cache_key(graph, options, flag_list, cc_version):
    global _fingerprint
    from .... import __version__
    from ...cache import make_key
    from .toolchain import cpu_features

    if _fingerprint is None:
        _fingerprint = _codegen_fingerprint()
    # an op's C expressions live in its definition (ops/), outside the fingerprinted files
    ops = sorted({(n.op.name, n.op.version, n.op.c or "", n.op.c_int or "") for n in graph.nodes})
    return make_key({"ir": str(graph), "ops": ops, "codegen": _fingerprint, "cc": cc_version,
                     "flags": list(flag_list), "cpu": cpu_features(), "package": __version__,
                     "options": sorted((k, str(v)) for k, v in (options or {}).items() if k != "fullgraph")})


AUTO_OPENMP_MIN_ELEMENTS = 1 << 20
AUTO_OPENMP_MIN_PRODUCT_WORK = 1 << 24  # multiply-adds of one-thread products in a program


def resolve_openmp(graph, options):
    """The ``openmp`` option as a bool. ``"auto"`` (the default) parallelizes the loops of
    programs that handle a value of at least 2^20 elements, and of programs whose matrix
    products are each small enough for one BLAS thread but add up to 2^24 multiply-adds or
    more (a convolution's per-sample products, then run side by side); never those with a
    product large enough for BLAS's own threads. Measured on this project's 2-core machines
    (docs/performance.md): ``chain`` 15 ms -> 5 ms on two threads; BLAS-threaded programs
    gained nothing and lost with PyTorch's OpenMP runtime in the process (its threads spin
    where OpenBLAS's need the cores: medium 16 -> 40 ms); small ones lost to waking threads
    (tiny 120 us -> 171 us); a small CNN's step (batch 64) 8.6-10.0 -> 4.2-6.0 ms."""
    value = (options or {}).get("openmp", "auto")
    if value != "auto":
        return bool(value)
    product_work = 0
    for n in graph.nodes:
        if n.op is MATMUL:
            count, each = matmul_work(n)
            if each >= BLAS_SERIAL_WORK:
                return False
            product_work += count * each
    if product_work >= AUTO_OPENMP_MIN_PRODUCT_WORK:
        return True
    return any(int(np.prod(n.out.shape, dtype=np.int64)) >= AUTO_OPENMP_MIN_ELEMENTS for n in graph.nodes)


def resolve_split(graph, options):
    """The ``batch_split`` option as a ``batch_split.Split`` or None: whether the program runs
    its rows on two threads (backends/c/batch_split.py). ``"auto"`` (the default) splits when
    two or more threads are allowed (``tg.set_num_threads``), the program has no OpenMP loops,
    each product of a half is small enough for one BLAS thread, and the halves' products
    outweigh the partials they pass on (``SPLIT_MIN_PRODUCT_WORK``, ``SPLIT_WORK_PER_PARTIAL``
    there: tiny's MLP step splits from batch 64 on); ``True`` splits whatever can be, ``False``
    never."""
    from .batch_split import SPLIT_MIN_PRODUCT_WORK, SPLIT_WORK_PER_PARTIAL, split_batch
    from .threads import get_num_threads

    value = options.get("batch_split", "auto")
    if not value or options["openmp"] or (value == "auto" and get_num_threads() < 2):
        return None
    found = split_batch(graph)
    if found is None or value != "auto":
        return found
    work = sum(count * each for count, each in found.products)
    if (any(each >= BLAS_SERIAL_WORK for _, each in found.products) or work < SPLIT_MIN_PRODUCT_WORK
            or work < SPLIT_WORK_PER_PARTIAL * found.partial_elements):
        return None
    return found


def build(graph, options=None):
    """Build ``graph`` into a C executable (raises Unsupported for ops without a lowering;
    without a working compiler: warns once and returns the interpreter's executable)."""
    from . import runtime_object, toolchain
    from .lower import lower
    from .batch_split import lower_split

    options = dict(options or {})
    options["openmp"] = resolve_openmp(graph, options)
    split = resolve_split(graph, options)
    options["batch_split"] = split is not None
    try:
        cc_version, flag_list = toolchain.toolchain(openmp=options["openmp"],
                                                    native=options.get("native", True))
    except NoCompiler as e:
        return _without_compiler(e, graph, options)
    state = {}

    def lowered():
        if "plan" not in state and split is not None:
            state["plan"], state["source"] = lower_split(split, graph, options)
        elif "plan" not in state:
            state["plan"] = lower(graph, options)
            state["linked"] = runtime_object.links([state["plan"]], options)
            state["source"] = render(state["plan"], graph.name, profile=bool(options.get("profile")),
                                     linked=state["linked"])
        return state["plan"], state["source"]

    def do_build(tmpdir):
        plan, source = lowered()
        if state.get("linked"):
            so = runtime_object.compile_linked(source, str(tmpdir), flag_list, cc_version,
                                               runtime_object_source())
        else:
            so = toolchain.compile_shared(source, str(tmpdir), flag_list)
        meta = {"workspace": plan.workspace, "source": source,
                # (dtypes by name: bfloat16's .str is a void's)
                "outputs": [[list(s), np.dtype(d).name] for s, d in plan.out_specs],
                "inplace": [list(p) for p in plan.inplace], "deferred": list(plan.deferred),
                "batch_split": split is not None}
        return so, meta

    key = cache_key(graph, options, flag_list, cc_version)
    try:
        if options.get("cache", True):
            from ...cache import get_or_build

            # on a miss, lowering runs first: it raises Unsupported before anything is locked
            so_path, meta, hit = get_or_build(key, do_build, on_miss=lowered)
        else:
            import tempfile

            tmp = tempfile.mkdtemp(prefix="tracegrad-nocache-")
            so_path, meta = do_build(tmp)
            hit = False
    except NoCompiler as e:  # the compiler passed its probes but then built nothing
        return _without_compiler(e, graph, options)
    return CExecutable(graph, str(so_path), meta, options, cache_hit=hit)


def _without_compiler(error, graph, options):
    """The interpreter's executable, after one warning per process naming ``error``."""
    global _warned_no_compiler
    if not _warned_no_compiler:
        warnings.warn(f"tracegrad: {error}; backend='c' runs programs with the interpreter instead.",
                      RuntimeWarning, stacklevel=4)
        _warned_no_compiler = True
    from .. import interpreter

    return interpreter.build(graph, options)


class CExecutable:
    """A loaded program: call it with the input arrays (graph.inputs order)."""

    # every result is written into a buffer nothing else refers to (new, or reused from the
    # pool once released: _fresh_outputs), never into an input's storage
    fresh_results = True
    entry = "tg_run"  # the generated function's name (DynamicCExecutable: tg_run_dyn)

    def __init__(self, graph, so_path, meta, options, cache_hit=False):
        from .toolchain import NO_BLAS, blas

        ffi = _ffi_instance()
        self.graph = graph
        self.options = options  # (as built: compiler/profile/ builds the timed variant from them)
        self.path = so_path
        self.cache_hit = cache_hit
        self.source = meta["source"]
        self._lib = ffi.dlopen(so_path)
        if options.get("openmp"):
            _pin_openmp_runtime()
        b = (blas() if options.get("blas", True) else None) or NO_BLAS
        self.blas = b.description
        ptr = lambda address: ffi.cast("void *", address or 0)
        self._lib.tg_set_blas(ptr(b.sgemm), ptr(b.dgemm), b.ilp64, ptr(b.threads_local),
                              ptr(b.set_threads), ptr(b.get_threads), ptr(b.somatcopy),
                              ptr(b.domatcopy))
        self._lib.tg_set_blas_batch(ptr(b.sgemm_batch), ptr(b.dgemm_batch))
        if "tg_set_lapack" in self.source:  # (runtime theme lapack: toolchain.LAPACK_FUNCTIONS' order)
            self._lib.tg_set_lapack(ffi.new("void *[]", [ptr(a) for a in b.lapack]), len(b.lapack))
        if meta.get("batch_split"):  # batch_split.c.j2: the halves run on pool.c's worker
            from .pool import parallel2_address

            self._lib.tg_set_pool(ptr(parallel2_address()))
        for setter, address in LOAD_SETTERS.items():  # (only a program whose runtime defines it)
            if setter in self.source:
                getattr(self._lib, setter)(ptr(address()))
        self._run = getattr(self._lib, self.entry)
        self._in_dtypes = [v.dtype.np for v in graph.inputs]
        self._n_in = len(graph.inputs)
        self._consts = [np.ascontiguousarray(c.data, dtype=c.dtype.np) for c in graph.constants()]
        self._outs = [(tuple(s), np.dtype(d)) for s, d in meta["outputs"]]
        n_slots = self._n_in + len(self._consts) + len(self._outs)
        self._ptrs = ffi.new("void *[]", max(n_slots, 1))
        for k, c in enumerate(self._consts):
            self._ptrs[self._n_in + k] = ffi.from_buffer(c)
        self._out0 = self._n_in + len(self._consts)
        ws = np.empty(meta["workspace"] + 64, np.uint8)
        addr = ws.ctypes.data
        self._ws_array = ws
        self._ws = ffi.cast("char *", addr + (-addr) % 64)
        self._last = [None] * self._n_in
        self._from_buffer = ffi.from_buffer
        # (output position, paired input index or -1) per result run_into may write into the
        # caller's storage (lower.lower(): the code is correct whether or not it does)
        self.inplace = [tuple(p) for p in meta.get("inplace", ())]
        # of those, the positions the code copies in after its last kernel (a read of the
        # paired input follows the write: lower._hazards)
        self.deferred = list(meta.get("deferred", ()))
        self._reset_outputs()
        self._lock = threading.RLock()
        self._twins = []  # idle twins (_twin), shared by this executable and its twins

    def _twin(self):
        """An executable for a call made while another thread's call runs in this one: the same
        library, constants and result shapes, but its own pointer array, workspace and result
        buffers, so that both calls run at once. Twins are kept for the next such call."""
        try:
            return self._twins.pop()
        except IndexError:
            pass
        ffi = _ffi_instance()
        twin = copy.copy(self)
        twin._ptrs = ffi.new("void *[]", len(self._ptrs))
        twin._consts = list(self._consts)
        for k, c in enumerate(twin._consts):
            twin._ptrs[self._n_in + k] = ffi.from_buffer(c)
        twin._ws_array = np.empty_like(self._ws_array)
        addr = twin._ws_array.ctypes.data
        twin._ws = ffi.cast("char *", addr + (-addr) % 64)
        twin._last = [None] * self._n_in
        twin._reset_outputs()
        twin._lock = threading.RLock()
        return twin

    def _on_twin(self, call):
        twin = self._twin()
        try:
            return call(twin)
        finally:
            self._twins.append(twin)

    def _reset_outputs(self):
        """Start over with output buffers of the shapes in ``self._outs``."""
        self._into = None  # run_into's arrangement for the last targets (see _arrange)
        # the output buffer each result slot points at now, reused while nothing else holds it
        self._pool = [None] * len(self._outs)
        self._all_fresh = [(self._out0 + pos, pos, s, d) for pos, (s, d) in enumerate(self._outs)]

    def _fresh_outputs(self, slots, results):
        """Put an output buffer in ``results[pos]`` for each ``(slot, pos, shape, dtype)``: the
        buffer of the previous call again when nothing outside this executable refers to it
        any more (no tensor, view, memoryview or other array: its reference count is the
        pool's alone), else a new one, which the slot is re-pointed at. A reused buffer costs
        no allocation and no cffi pointer, and a large one keeps its pages mapped instead of
        faulting them in again on every call."""
        pool, ptrs, getrefcount = self._pool, self._ptrs, sys.getrefcount
        for k, pos, shape, dt in slots:
            if pool[pos] is None or getrefcount(pool[pos]) != _POOL_ONLY:
                pool[pos] = np.empty(shape, dt)
                ptrs[k] = self._from_buffer(pool[pos])
            results[pos] = pool[pos]

    # One call at a time per executable (self._lock, re-entrant for DynamicCExecutable): a
    # call binds its arrays into the pointer array, runs in the workspace and hands out reused
    # result buffers, and cffi lets go of the GIL while the native code runs. A call that finds
    # the executable busy (another thread's call) runs on a twin instead (_twin).
    def __call__(self, inputs):
        if not self._lock.acquire(False):
            return self._on_twin(lambda twin: twin(inputs))
        try:
            return self._call(inputs)
        finally:
            self._lock.release()

    def _bind(self, inputs):
        """Point the input slots at ``inputs`` where they changed. Returns (the contiguous
        copies made of inputs of another dtype or layout: the caller keeps them alive for this
        call only, never cached by identity; the indices of inputs bound as they are)."""
        ptrs, last, fb = self._ptrs, self._last, self._from_buffer
        keep = new = None
        for i, a in enumerate(inputs):
            if a is last[i]:
                continue
            if a.dtype != self._in_dtypes[i] or not a.flags.c_contiguous:
                a = np.ascontiguousarray(a, dtype=self._in_dtypes[i])
                keep = [] if keep is None else keep
                keep.append(a)
                last[i] = None
            else:
                last[i] = a
                new = [] if new is None else new
                new.append(i)
            ptrs[i] = fb(a)
        return keep, new

    def _call(self, inputs):
        self._into = None  # the output slots below no longer point at run_into's targets
        keep, _ = self._bind(inputs)
        outs = [None] * len(self._outs)
        self._fresh_outputs(self._all_fresh, outs)
        if self._run(self._ptrs, self._ws):
            self._raise(inputs)
        del keep  # (the copies lived through the call)
        return outs

    def run_into(self, inputs, targets):
        """Run, writing each result of ``self.inplace`` into its target (one array or None per
        entry: the user's storage that result is written back to) when that is safe: the
        target is C-contiguous, writeable, of the result's shape and dtype, is its paired
        input's very array (when paired) and overlaps no other input or target. Other results
        come in fresh buffers, as from ``__call__``. A target written is returned itself
        (``results[pos] is target``), so the caller skips the copy.

        The arrangement is kept while the inputs and targets are the same objects (their
        memory cannot move); a new input is checked against the targets in use (one
        ``np.may_share_memory`` each); new targets arrange again."""
        if not self._lock.acquire(False):  # (busy: see __call__)
            return self._on_twin(lambda twin: twin.run_into(inputs, targets))
        try:  # (the body inline: this is every compiled training step's path)
            keep = new = None
            if not all(map(is_, inputs, self._last)):  # (the usual step: parameters keep their arrays)
                keep, new = self._bind(inputs)  # (copies are made before the call: safe to read)
            into = self._into
            if into is None or not all(map(is_, targets, into[1])):
                into = self._arrange(inputs, targets)
            elif new is not None and into[0]:
                into = self._arrange(inputs, targets)  # a target left out may fit again
            elif new is not None:
                for i in new:
                    a = inputs[i]
                    if any(k != i and np.may_share_memory(a, t) for _, t, k in into[2]):
                        into = self._arrange(inputs, targets)
                        break
            results = list(into[3])
            self._fresh_outputs(into[4], results)
            if self._run(self._ptrs, self._ws):
                self._raise(inputs)
            del keep  # (the copies lived through the call)
            return results
        finally:
            self._lock.release()

    def _arrange(self, inputs, targets):
        """Decide which targets run_into writes directly; point their output slots at them.
        Returns (dropped any?, targets, [(pos, target, paired input)], results template,
        [(slot, pos, shape, dtype)] of fresh outputs); also kept as ``self._into``."""
        from ...ir.aliasing import overlapping_pairs

        last = self._last
        fits = []
        for (pos, k), t in zip(self.inplace, targets):
            if t is None:
                continue
            shape, dt = self._outs[pos]
            if t.shape != shape or t.dtype != dt or not t.flags.c_contiguous or not t.flags.writeable:
                continue
            if k >= 0 and (inputs[k] is not t or last[k] is not t):
                continue  # not the paired input's own array (or that input was copied)
            fits.append((pos, t, k))
        # an input the program reads after a result is written must not share the result's
        # memory (copied inputs, last[i] None, are private), nor may two results share theirs:
        # the overlapping pairs among inputs and targets, found at once (a pair at a time was
        # quadratic: ~25 ms for a 128-layer MLP step's 256 targets)
        n_in = len(last)
        pairs = overlapping_pairs(list(last) + [t for _, t, _ in fits])
        reads = {q - n_in for p, q in pairs if p < n_in <= q and p != fits[q - n_in][2]}
        clash = {n for p, q in pairs if p >= n_in and p - n_in not in reads and q - n_in not in reads
                 for n in (p - n_in, q - n_in)}
        active = [e for n, e in enumerate(fits) if n not in reads and n not in clash]
        results = [None] * len(self._outs)
        for pos, t, _ in active:
            self._ptrs[self._out0 + pos] = self._from_buffer(t)
            self._pool[pos] = None  # the slot points at the target now
            results[pos] = t
        fresh = [(self._out0 + pos, pos, s, d) for pos, (s, d) in enumerate(self._outs)
                 if results[pos] is None]
        dropped = len(active) < sum(t is not None for t in targets)
        self._into = (dropped, list(targets), active, results, fresh)
        return self._into

    def _raise(self, inputs):
        from ..interpreter import run_graph

        run_graph(self.graph, list(inputs))  # raises the interpreter's (PyTorch's) error
        raise IndexError("index out of bounds in a compiled program")

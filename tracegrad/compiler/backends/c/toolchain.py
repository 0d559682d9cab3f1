"""The system C compiler and the BLAS the generated code calls.

The compiler is ``$CC`` or ``cc``; flags are fixed here and are part of the cache key, as are
the compiler's version and the CPU's features (so ``-march=native`` code is only ever loaded on
a CPU with the same features). BLAS is found at run time (NumPy's bundled OpenBLAS first) and
handed to the loaded program as function pointers, so the build never links against it.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import importlib.util
import os
import platform
import shutil
import tempfile
from collections.abc import Sequence
from typing import NamedTuple

# -fno-trapping-math: without it GCC will not turn a float select (``x > c ? y : z``, as in
# tg_expf, tg_tanhf and relu) into a vector blend on targets without AVX-512
# masks, and every loop holding one stays scalar (measured: tiny's tanh loops on AVX2). It only
# lets floating-point exception flags differ, which nothing generated reads; values, NaN and
# infinities are unchanged.
# -Werror=implicit-function-declaration: a helper the generated code calls but the runtime does
# not define is a build failure naming it, not a library that fails to load (GCC 12 only warns).
BASE_FLAGS = ["-std=gnu11", "-O3", "-fPIC", "-shared", "-fno-math-errno", "-fno-trapping-math",
              "-fno-semantic-interposition", "-fopenmp-simd", "-Werror=implicit-function-declaration"]
NATIVE_FLAGS = ["-march=native"]
OPENMP_FLAGS = ["-fopenmp"]

# glibc's libmvec holds vector forms of libm functions (4 ulp at most, by glibc's manual; the full
# argument range, large arguments included). Declared ``simd`` in the generated code
# (runtime.h.j2), a loop calling sin, cos, tan, expm1 or pow vectorizes with them instead of
# staying scalar around a libm call per element (float32 sin over 1 M elements: 5.0 -> 0.53 ms on
# a Zen 4, docs/performance.md). Each available function becomes a ``-DTG_MVEC_<name>`` flag, so the cache key follows
# what this machine's libmvec has (glibc 2.22 has sin, cos, exp, log and pow; 2.35 added the rest).
MVEC_FUNCTIONS = ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "tanh", "erf", "pow", "asin",
                  "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "atan2", "hypot",
                  "erfc")
MVEC_BINARY = ("pow", "atan2", "hypot")
MVEC_FLAG = "-DTG_LIBMVEC"


class NoCompiler(Exception):
    """No working C compiler (the backend warns once and uses the interpreter)."""


class CompileFailed(RuntimeError):
    """The compiler works but rejected generated code: a tracegrad bug (message has the log)."""


def compiler():
    return os.environ.get("CC", "cc")


@functools.lru_cache(maxsize=None)
def compiler_version(cc):
    import subprocess  # (imported where a compiler runs: a warm start runs none)

    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise NoCompiler(f"C compiler {cc!r} cannot run: {e}") from None
    if out.returncode != 0:
        raise NoCompiler(f"C compiler {cc!r} --version failed: {out.stderr.strip()[:200]}")
    return out.stdout.splitlines()[0] if out.stdout else cc


@functools.lru_cache(maxsize=None)
def cpu_features():
    """Model and feature flags of this CPU (Linux: /proc/cpuinfo), for the cache key."""
    try:
        with open("/proc/cpuinfo") as f:
            model = flags = ""
            for line in f:
                if line.startswith(("flags", "Features")) and not flags:
                    flags = line.split(":", 1)[1].strip()
                elif line.startswith("model name") and not model:
                    model = line.split(":", 1)[1].strip()
        return f"{platform.machine()}|{model}|{flags}"
    except OSError:
        return f"{platform.machine()}|{platform.processor()}"


_PROBE = "#include <math.h>\nint tg_probe(int x) { return x + (int)sqrt(4.0); }\n"


@functools.lru_cache(maxsize=None)
def _probe(cc, flags, source=_PROBE, libraries=()):
    """Does ``cc`` build a shared object of ``source`` with ``flags``?"""
    import subprocess

    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "probe.c")
        with open(src, "w") as f:
            f.write(source)
        try:
            r = subprocess.run([cc, *flags, src, "-o", os.path.join(d, "probe.so"), *libraries],
                               capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return False
        # (and a library written: a "compiler" such as CC=/bin/true exits 0 writing nothing)
        return r.returncode == 0 and os.path.isfile(os.path.join(d, "probe.so"))


@functools.lru_cache(maxsize=None)
def toolchain(openmp=True, native=True):
    """(compiler version, flags) for these options. Probing the compiler costs a few
    subprocesses, so the answer is remembered in the cache directory, keyed by the compiler's
    path and modification time (a warm start runs no subprocess at all)."""
    from ... import cache

    cc = compiler()
    path = shutil.which(cc)
    if path is None:
        raise NoCompiler(f"no C compiler found (looked for {cc!r}; set CC)")
    real = os.path.realpath(path)
    st = os.stat(real)
    libc = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else ""
    ident = (f"{real}|{st.st_mtime_ns}|{st.st_size}|{int(openmp)}{int(native)}|{BASE_FLAGS}|{libc}|"
             f"{MVEC_FUNCTIONS}")
    directory = cache.cache_dir()
    name = f"toolchain-{cache.make_key(ident)[:16]}.json"
    try:
        # the flags reach the compiler's command line: a memo is used only when its checksum
        # holds and every flag is one this module can produce (cache.read_json checks the file)
        got = cache.read_json(directory / name)
        if got.get("ident") == ident and isinstance(got.get("version"), str) \
                and isinstance(got.get("flags"), list) and set(got["flags"]) <= _known_flags():
            return got["version"], tuple(got["flags"])
    except (OSError, ValueError):
        pass
    version = compiler_version(cc)
    flag_list = _flags(openmp, native)
    try:  # (a unique temporary file: threads of one process probe at once)
        cache.write_json(directory, name, {"ident": ident, "version": version, "flags": list(flag_list)})
    except OSError:
        pass  # an unwritable or full directory: the memo is only a shortcut (cache.py warns on builds)
    return version, flag_list


def _known_flags():
    """Every flag ``_flags`` can choose."""
    return set(BASE_FLAGS + NATIVE_FLAGS + OPENMP_FLAGS + [MVEC_FLAG]
               + [f"-DTG_MVEC_{f}" for f in MVEC_FUNCTIONS])


def _flags(openmp=True, native=True):
    """The flags in use: OpenMP and -march=native only when this compiler accepts them."""
    cc = compiler()
    base = list(BASE_FLAGS)
    if not _probe(cc, tuple(base)):
        raise NoCompiler(f"C compiler {cc!r} cannot build a shared object")
    if native and _probe(cc, tuple(base + NATIVE_FLAGS)):
        base += NATIVE_FLAGS
    if openmp and _probe(cc, tuple(base + OPENMP_FLAGS)):
        base += OPENMP_FLAGS
    return tuple(base + _mvec_flags(cc, base))


def _mvec_flags(cc, base):
    """``-DTG_LIBMVEC`` and a ``-DTG_MVEC_<name>`` per function of MVEC_FUNCTIONS whose float and
    double vector forms this machine's libmvec exports, or [] where there is none or ``cc``
    does not vectorize through it (clang ignores GCC's ``simd`` attribute)."""
    try:
        lib = ctypes.CDLL("libmvec.so.1")
    except OSError:
        return []
    # the SSE forms ('b'); glibc builds each function for every x86-64 level together
    names = [f for f in MVEC_FUNCTIONS
             if all(hasattr(lib, f"_ZGVbN{n}{'vv' if f in MVEC_BINARY else 'v'}_{f}{s}")
                    for n, s in ((4, "f"), (2, "")))]
    if not names or not _probe(cc, tuple(base) + ("-Werror=attributes",), _MVEC_PROBE, ("-lmvec",)):
        return []
    return [MVEC_FLAG] + [f"-DTG_MVEC_{f}" for f in names]


_MVEC_PROBE = """#include <math.h>
__attribute__((simd("notinbranch"))) float sinf(float);
void tg_probe(int n, const float *restrict x, float *restrict y) {
  for (int i = 0; i < n; i++) y[i] = sinf(x[i]);
}
"""


def _libraries(flag_list):
    """What a program built with ``flag_list`` links against (after its source: linkers that
    drop unneeded libraries only keep those named after their users)."""
    return ["-lm", "-lmvec"] if MVEC_FLAG in flag_list else ["-lm"]


def compile_shared(source: str, workdir: str, flag_list: Sequence[str], objects: Sequence[str] = ()) -> str:
    """Compile C ``source`` to ``workdir/program.so``, linked with the object files ``objects``
    (runtime_object.py); returns its path."""
    return link_shared([_write(source, workdir, "program.c"), *objects], workdir, flag_list)


def compile_object(source: str, workdir: str, flag_list: Sequence[str], name: str = "runtime") -> str:
    """Compile C ``source`` to the object file ``workdir/<name>.o`` (position-independent, as
    the shared objects it is linked into); returns its path."""
    src = _write(source, workdir, f"{name}.c")
    return _run([f for f in flag_list if f != "-shared"] + ["-c"], [src], os.path.join(workdir, f"{name}.o"))


def link_shared(objects: Sequence[str], workdir: str, flag_list: Sequence[str]) -> str:
    """Link ``objects`` (object files, or C sources compiled on the way) into
    ``workdir/program.so``, with the libraries ``flag_list`` needs; returns its path."""
    return _run(list(flag_list), list(objects), os.path.join(workdir, "program.so"), flag_list)


def _write(source, workdir, name):
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(source)
    return path


def _run(flags, inputs, out, link_flags=None):
    """Run the compiler on ``inputs`` writing ``out``; a shared object (``link_flags``: the
    flags it was built with) links the libraries those flags need, after its inputs."""
    import subprocess

    cc = compiler()
    after = _libraries(link_flags) if link_flags is not None else []
    try:
        r = subprocess.run([cc, *flags, *inputs, "-o", out, *after], capture_output=True, text=True,
                           timeout=600)
    except OSError as e:
        raise NoCompiler(f"C compiler {cc!r} cannot run: {e}") from None
    if r.returncode != 0:
        raise CompileFailed(f"{cc} failed on generated code (a tracegrad bug; please report it):\n"
                            f"{r.stderr[-4000:]}")
    if not os.path.isfile(out):
        raise NoCompiler(f"C compiler {cc!r} exited with status 0 but wrote nothing (expected {out})")
    return out


# ----------------------------------------------------------------------------- BLAS
class Blas(NamedTuple):
    """A loaded BLAS: addresses of its cblas sgemm/dgemm, their integer width, how to run
    one product on a single thread (OpenBLAS's per-thread count where it has one, else its
    global count: set and get), and OpenBLAS's out-of-place transpose (cblas_?omatcopy), which
    small ``x @ W.T`` products use (runtime.h.j2: TG_GEMM)."""

    sgemm: int
    dgemm: int
    ilp64: int
    description: str
    threads_local: int | None = None
    set_threads: int | None = None
    get_threads: int | None = None
    somatcopy: int | None = None
    domatcopy: int | None = None
    lapack: tuple = ()  # addresses (or None) of LAPACK_FUNCTIONS, in that order
    # OpenBLAS's cblas_?gemm_batch (LP64 only): a batch of small products in one call, shared
    # out over its threads (gemm.h.j2: TG_GEMM_BATCH)
    sgemm_batch: int | None = None
    dgemm_batch: int | None = None


NO_BLAS = Blas(None, None, 1, None)  # what a program is told without one: its plain C loops

# The LAPACK functions programs call (runtime theme lapack.h.j2, which numbers them in this
# order): LU and Cholesky in the kernels' own dtype, eigh and SVD in double (as the kernels
# compute them for both dtypes).
LAPACK_FUNCTIONS = ("sgetrf", "dgetrf", "sgetrs", "dgetrs", "spotrf", "dpotrf", "dsyevd", "dgesdd")


@contextlib.contextmanager
def _own_openblas_coretype():
    """Around loading tracegrad's own OpenBLAS (the ``scipy-openblas32`` package): its
    kernels follow this CPU as the generated code does (-march=native), by OpenBLAS's own
    CPU detection, or are the set named by
    ``TRACEGRAD_OPENBLAS_CORETYPE``. An ``OPENBLAS_CORETYPE`` in the environment is left to
    NumPy's OpenBLAS: hidden while this copy loads (OpenBLAS reads it once, then), restored
    right after. Measured on this project's AMD Zen 5 machine, whose environment sets
    ``OPENBLAS_CORETYPE=Haswell``: float32 256x1024 @ 1024x1024 runs at ~225 GFLOP/s with
    Haswell's AVX2 kernels and ~400 GFLOP/s with the SkylakeX kernels detection picks (the
    medium workload: 12.6 -> 8.3 ms)."""
    saved = os.environ.pop("OPENBLAS_CORETYPE", None)
    chosen = os.environ.get("TRACEGRAD_OPENBLAS_CORETYPE")
    if chosen:
        os.environ["OPENBLAS_CORETYPE"] = chosen
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_CORETYPE", None)
        if saved is not None:
            os.environ["OPENBLAS_CORETYPE"] = saved


def _address(lib, name):
    try:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    except AttributeError:
        return None


def _blas_candidates():
    """(library path, symbol prefix, ILP64?, tracegrad's own copy?) in order of preference,
    generated lazily: the system search runs ``ldconfig`` and ``gcc`` (~30 ms) only when the
    bundled libraries are missing."""
    # found without importing the package: its import reads its version through
    # importlib.metadata (~25 ms of a warm-cache first call) and loads the library itself
    spec = importlib.util.find_spec("scipy_openblas32")
    for d in (spec.submodule_search_locations or []) if spec else []:
        for pattern in ("libscipy_openblas*.so*", "libscipy_openblas*.dylib"):
            for p in sorted(glob.glob(os.path.join(d, "lib", pattern))):
                yield p, "scipy_", 0, True
    import numpy

    np_dir = os.path.dirname(numpy.__file__)
    for pattern in (os.path.join(os.path.dirname(np_dir), "numpy.libs", "libscipy_openblas64_*.so*"),
                    os.path.join(np_dir, ".dylibs", "libscipy_openblas64_*")):
        for p in sorted(glob.glob(pattern)):
            yield p, "scipy_", 1, False
    import ctypes.util  # (here: it imports subprocess, ~6 ms of a warm start)

    for name in ("openblas", "cblas", "blas"):
        p = ctypes.util.find_library(name)
        if p:
            yield p, "", 0, False


@functools.lru_cache(maxsize=None)
def blas():
    """The BLAS generated programs call (a ``Blas``), or None when none is found.

    Order: the ``scipy-openblas32`` package (a dependency: an OpenBLAS of tracegrad's own, so
    its kernels can be chosen for this CPU without touching NumPy's), NumPy's bundled OpenBLAS
    (ILP64, ``scipy_cblas_*64_``), a system OpenBLAS/CBLAS.
    """
    for path, prefix, ilp64, own_copy in _blas_candidates():
        suffix = "64_" if ilp64 else ""
        try:
            if own_copy:
                with _own_openblas_coretype():
                    lib = ctypes.CDLL(path)
            else:
                lib = ctypes.CDLL(path)
        except OSError:
            continue
        sgemm, dgemm = (_address(lib, f"{prefix}cblas_{t}gemm{suffix}") for t in "sd")
        if sgemm is None or dgemm is None:
            continue
        desc = f"{os.path.basename(path)}:{prefix}cblas_sgemm{suffix}"
        corename = getattr(lib, f"{prefix}openblas_get_corename{suffix}", None)
        if corename is not None:
            corename.restype = ctypes.c_char_p
            desc += f" ({corename().decode()} kernels)"
        return Blas(sgemm, dgemm, ilp64, desc,
                    threads_local=_address(lib, "openblas_set_num_threads_local"),
                    set_threads=_address(lib, f"{prefix}openblas_set_num_threads{suffix}"),
                    get_threads=_address(lib, f"{prefix}openblas_get_num_threads{suffix}"),
                    somatcopy=_address(lib, f"{prefix}cblas_somatcopy{suffix}"),
                    domatcopy=_address(lib, f"{prefix}cblas_domatcopy{suffix}"),
                    # (LP64 only: the theme passes Fortran integers as C ints)
                    lapack=() if ilp64 else tuple(_address(lib, f"{prefix}{name}_")
                                                  for name in LAPACK_FUNCTIONS),
                    sgemm_batch=None if ilp64 else _address(lib, f"{prefix}cblas_sgemm_batch"),
                    dgemm_batch=None if ilp64 else _address(lib, f"{prefix}cblas_dgemm_batch"))
    return None

"""The CUDA backend: an IR Graph -> one generated ``.cu`` file (kernels and a host launcher)
-> a shared object loaded with cffi.

The launcher is ``extern "C" int tg_cuda_run(void **args)``: ``args`` holds device pointers to
the inputs, the graph's constants and the outputs (graph.outputs, then graph.writebacks). It
allocates the work buffers between kernels, launches every kernel on the default stream, waits
for them and frees what it allocated; it returns 0 or the CUDA error code. Cuda tensors
(core/storage.py) are handed over as they are; host arrays are copied in and out by
``CudaExecutable`` (docs/cuda.md).

How it is built:

- ``TRACEGRAD_CUDA_EMULATE=1``: with the host C++ compiler and the emulation header
  (``templates/tg_cuda_emulate.h``), so the very same source runs on the CPU: a testing mode,
  like Triton's interpreter, slow by design;
- otherwise with ``nvcc`` for the GPU of this machine, when there is one. Without a GPU (and
  without emulation) ``build`` raises ``NoCuda``, naming both ways out.

Builds are cached like the C backend's (compiler/cache.py), the compiler's version and the
mode (emulated or the GPU's architecture) in the key.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import indexing, kernels  # (imported for their registrations: rules.RULES)
from .lower import lower
from .rules import RULES, Unsupported

__all__ = ["RULES", "Unsupported", "NoCuda", "build", "render", "emulated"]

CODEGEN_VERSION = 2  # 2: the launcher takes device pointers
EMULATE_ENV = "TRACEGRAD_CUDA_EMULATE"
# what the generated source depends on, the C renderer's view and expression rules included
# (rules.py reuses them), so that a change to any of them is a new cache key
_SOURCES = ("__init__.py", "lower.py", "kernels.py", "indexing.py", "rules.py", "../rules.py",
            "templates/tg_cuda_emulate.h", "../c/lower.py", "../c/views.py", "../c/text.py",
            "../c/kernels.py")


class IndexFailed(IndexError):
    """A kernel of a CUDA program read an index out of range (nothing was read through it)."""


class NoCuda(RuntimeError):
    """backend='cuda' on a machine that can neither run CUDA nor was asked to emulate it."""


def emulated():
    """Whether CUDA programs are built for the CPU emulation (TRACEGRAD_CUDA_EMULATE=1)."""
    return os.environ.get(EMULATE_ENV, "") not in ("", "0")


def templates_dir():
    return Path(__file__).resolve().parent / "templates"


PRELUDE = """\
#include <stdint.h>
#include <math.h>
#ifdef TG_CUDA_EMULATE
#include "tg_cuda_emulate.h"
#define TG_LAUNCH(kernel, grid, block, ...) tg_emu::launch(kernel, grid, block, __VA_ARGS__)
#else
#include <cuda_runtime.h>
#define TG_LAUNCH(kernel, grid, block, ...) kernel<<<grid, block>>>(__VA_ARGS__)
#endif
/* an index out of range (a kernel set the program's failure flag): not a CUDA error code */
#define TG_FAIL_INDEX (-1)
/* every CUDA call's error ends the call (after the buffers are freed) */
#define TG_CHECK(call) do { cudaError_t tg_e = (call); if (tg_e != cudaSuccess) { rc = (int)tg_e; goto done; } } while (0)
"""


def render(plan, name="graph"):
    """The ``.cu`` source of a lowered plan. Its launcher takes device pointers: the inputs,
    the graph's constants and the outputs live in device memory already (the caller's: cuda
    tensors, or copies CudaExecutable makes of host arrays); only the work buffers between
    kernels are allocated here, per call."""
    from ..c.text import comment_text

    lines = [f"// tracegrad CUDA program ({comment_text(name)}), codegen {CODEGEN_VERSION}", PRELUDE]
    for k in plan.kernels:
        lines.append(k["source"])
    lines.append('extern "C" int tg_cuda_run(void **args) {')
    lines.append("  int rc = 0;")
    work = [b for b in plan.buffers if b.kind in ("work", "flag")]
    for b in plan.buffers:  # (all declared before the first goto of TG_CHECK)
        if b.kind in ("work", "flag"):
            lines.append(f"  {b.ctype} *{b.name} = 0;")
        else:
            lines.append(f"  {b.ctype} *{b.name} = ({b.ctype} *)args[{b.slot}];")
    for b in work:
        lines.append(f"  TG_CHECK(cudaMalloc((void **)&{b.name}, {max(b.nbytes, 1)}));")
    if plan.fail is not None:
        lines.append(f"  TG_CHECK(cudaMemset({plan.fail.name}, 0, {plan.fail.nbytes}));")
    lines += launch_lines([k["launch"] for k in plan.kernels])
    if plan.fail is not None:  # (after the synchronize: every kernel has run)
        lines += ["  {", "    int32_t failed = 0;",
                  f"    TG_CHECK(cudaMemcpy(&failed, {plan.fail.name}, 4, cudaMemcpyDeviceToHost));",
                  "    if (failed) rc = TG_FAIL_INDEX;", "  }"]
    lines.append("done:")
    for b in work:
        lines.append(f"  cudaFree({b.name});")
    lines.append("  return rc;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def launch_lines(launches: Sequence[str]) -> list[str]:
    """A launcher's body lines for the kernel launches ``launches`` (C statements): each on the
    default stream and checked as it is queued, then one wait for all of them (a kernel's fault
    is reported there). TG_CHECK jumps to the launcher's ``done:`` label, which follows."""
    lines = []
    for launch in launches:
        lines += [f"  {launch}", "  TG_CHECK(cudaGetLastError());"]
    return lines + ["  TG_CHECK(cudaDeviceSynchronize());"]


# ----------------------------------------------------------------------------- toolchain
def _version(cmd):
    try:
        out = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def host_compiler():
    """The C++ compiler of emulated builds (``CXX``, else g++ or clang++) and its version."""
    for cxx in ([os.environ["CXX"]] if os.environ.get("CXX") else []) + ["g++", "clang++"]:
        path = shutil.which(cxx)
        version = path and _version([path])
        if version:
            return path, version
    raise NoCuda(f"{EMULATE_ENV}=1 needs a host C++ compiler (g++ or clang++; or set CXX)")


def gpu_arch():
    """``sm_XY`` of this machine's first GPU, or None when there is none (no driver, no device).
    Asked of the driver library itself, so that no CUDA toolkit is needed to find out."""
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    count, major, minor = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return None
    # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76, of device 0
    if cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, 0) or cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, 0):
        return None
    return f"sm_{major.value}{minor.value}"


_toolchain = {}


def toolchain():
    """(mode, compile command without source and output, version text) for this process."""
    mode = "emulate" if emulated() else "gpu"
    if mode not in _toolchain:
        if mode == "emulate":
            cxx, version = host_compiler()
            cmd = [cxx, "-std=c++17", "-O2", "-shared", "-fPIC", "-pthread", "-DTG_CUDA_EMULATE",
                   "-I", str(templates_dir()), "-x", "c++"]
            _toolchain[mode] = ("emulate", cmd, version)
        else:
            arch = gpu_arch()
            nvcc = shutil.which("nvcc")
            if arch is None:
                raise NoCuda("backend='cuda' found no CUDA GPU on this machine. Either set "
                             f"{EMULATE_ENV}=1 to run the generated CUDA on the CPU (a testing mode), "
                             "or use backend='c' (native CPU code)")
            if nvcc is None:
                raise NoCuda("backend='cuda' needs nvcc (the CUDA toolkit) to build for this machine's "
                             f"GPU; or set {EMULATE_ENV}=1 to emulate, or use backend='c'")
            cmd = [nvcc, "-O3", "-shared", "-Xcompiler", "-fPIC", f"-arch={arch}", "-x", "cu"]
            _toolchain[mode] = (arch, cmd, _version([nvcc]))
    return _toolchain[mode]


def compile_source(source, directory, cmd):
    """Build ``source`` into ``directory``/program.so with ``cmd``; returns the path."""
    directory = Path(directory)
    src = directory / "program.cu"
    src.write_text(source)
    so = directory / "program.so"
    out = subprocess.run(cmd + [str(src), "-o", str(so)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"building the generated CUDA program failed:\n{out.stderr[-4000:]}")
    return so


def build_fixed(kind: str, source: str) -> Path:
    """The shared object of ``source``, a fixed ``.cu`` of this package rather than a graph's
    program (the device runtime, a strided copy), built for this process's toolchain once and
    kept in the compile cache, keyed by ``kind``, the source, the build mode and the compiler."""
    from ...cache import get_or_build, make_key

    mode, cmd, version = toolchain()
    key = make_key({"backend": kind, "source": hashlib.sha256(source.encode()).hexdigest(),
                    "mode": mode, "compiler": version})
    so_path, _meta, _hit = get_or_build(key, lambda d: (compile_source(source, d, cmd), {"source": source}))
    return so_path


_fingerprints = []


def _fingerprint():
    if _fingerprints:
        return _fingerprints[0]
    h = hashlib.sha256(str(CODEGEN_VERSION).encode())
    here = Path(__file__).resolve().parent
    for name in _SOURCES:
        h.update((here / name).read_bytes())
    _fingerprints.append(h.hexdigest())
    return _fingerprints[0]


def cache_key(graph, mode, version):
    from ...cache import make_key

    # an op's C expression lives in its definition (ops/), outside the fingerprinted files
    ops = sorted({(n.op.name, n.op.version, n.op.c or "", n.op.c_int or "") for n in graph.nodes})
    return make_key({"backend": "cuda", "ir": str(graph), "ops": ops, "codegen": _fingerprint(),
                     "mode": mode, "compiler": version})


# ----------------------------------------------------------------------------- build
def build(graph, options=None):
    """Build ``graph`` into a CUDA executable. Raises Unsupported (an op without a CUDA
    lowering: the caller falls back to the interpreter) before NoCuda (no way to run it)."""
    options = options or {}
    plan = lower(graph)
    source = render(plan, graph.name)
    mode, cmd, version = toolchain()

    def do_build(tmpdir):
        return compile_source(source, tmpdir, cmd), {"source": source}

    if options.get("cache", True):
        from ...cache import get_or_build

        so_path, _meta, hit = get_or_build(cache_key(graph, mode, version), do_build)
    else:
        import tempfile

        so_path, _meta = do_build(tempfile.mkdtemp(prefix="tracegrad-cuda-"))
        hit = False
    return CudaExecutable(graph, plan, source, str(so_path), mode, cache_hit=hit)


_ffi = None


def _ffi_instance():
    global _ffi
    if _ffi is None:
        import cffi

        ffi = cffi.FFI()
        ffi.cdef("int tg_cuda_run(void **args);")
        _ffi = ffi
    return _ffi


class CudaExecutable:
    """A loaded CUDA program: call it with the input arrays (graph.inputs order); returns new
    arrays (graph.outputs, then graph.writebacks).

    Inputs that are device arrays (cuda tensors' storage, core/storage.py) are handed to the
    program as they are (a non-contiguous view is made contiguous on the device first) and the
    results are new device arrays: nothing crosses to the host. When no input is on the device
    (CPU tensors compiled with backend="cuda"), the inputs are copied in and the results copied
    back, and the results are host arrays. Host inputs among device ones (a random seed) are
    copied in. The graph's constants are copied to the device once, at the first call."""

    fresh_results = True  # every result is a new array

    def __init__(self, graph, plan, source, so_path, mode, cache_hit=False):
        ffi = _ffi_instance()
        self.graph = graph
        self.source = source
        self.path = so_path
        self.mode = mode  # "emulate" or the GPU's sm_XY
        self.cache_hit = cache_hit
        self._lib = ffi.dlopen(so_path)
        self._in_dtypes = [v.dtype.np for v in graph.inputs]
        self._consts = list(plan.consts)
        self._device_consts = None
        self._outs = list(plan.out_specs)
        self._lock = threading.Lock()  # one pointer array: one call at a time

    def __call__(self, inputs):
        from ....core.storage import DeviceArray

        on_device = False
        for a in inputs:
            if a.__class__ is DeviceArray:
                on_device = True
                break
        args = [_device_input(a, dt) for a, dt in zip(inputs, self._in_dtypes)]
        if self._device_consts is None:
            self._device_consts = [DeviceArray.from_host(c) for c in self._consts]
        outs = [DeviceArray.empty(shape, dt) for shape, dt in self._outs]
        with self._lock:
            try:
                run_program(self._lib, args + self._device_consts + outs, self.graph.name)
            except IndexFailed:
                self._raise(inputs)
        return outs if on_device else [o.to_host() for o in outs]

    def _raise(self, inputs):
        """PyTorch's error for an index out of range: the interpreter's, on host copies of
        the inputs (the C backend's way)."""
        from ....core.storage import DeviceArray
        from ..interpreter import run_graph

        run_graph(self.graph, [a.to_host() if a.__class__ is DeviceArray else a for a in inputs])
        raise IndexError("index out of bounds in a compiled CUDA program")


def _device_input(a, dtype):
    """A contiguous device array of ``dtype`` holding ``a`` (a device or host array)."""
    from ....core.storage import DeviceArray, copy_into

    if a.__class__ is not DeviceArray:
        return DeviceArray.from_host(np.ascontiguousarray(a, dtype=dtype))
    if a.is_contiguous and a.dtype == dtype:
        return a
    out = DeviceArray.empty(a.shape, dtype)
    copy_into(out, a)
    return out


def run_program(lib: Any, arrays: Sequence, name: str) -> None:
    """Call a loaded program's ``tg_cuda_run`` with the device pointers of ``arrays``."""
    ffi = _ffi_instance()
    ptrs = ffi.new("void *[]", max(len(arrays), 1))
    for k, a in enumerate(arrays):
        if a.size:
            ptrs[k] = ffi.cast("void *", a.ptr)
    rc = lib.tg_cuda_run(ptrs)
    if rc == -1:  # TG_FAIL_INDEX
        raise IndexFailed(f"an index out of range in the CUDA program {name}")
    if rc:
        raise RuntimeError(f"the CUDA program {name} failed with CUDA error {rc}")


def load(so_path: str | os.PathLike) -> Any:
    """A built program's library (its ``tg_cuda_run``)."""
    return _ffi_instance().dlopen(str(so_path))

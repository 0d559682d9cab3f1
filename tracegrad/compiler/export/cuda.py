"""``tg.export(fn, *args, backend="cuda")``: the exported library as CUDA source on device pointers.

The graph is lowered by the CUDA backend (compiler/backends/cuda: the same kernels
``tg.compile(backend="cuda")`` runs); what differs from the backend's own launcher is where the
buffers live. Inputs and outputs are the caller's device pointers (the ABI's ``tg_tensor.data``),
the constants are copied from ``static const`` host arrays into the device workspace, and every
intermediate buffer is a slice of that workspace: one ``cudaMalloc`` per call (the wrapper's,
export_cuda_wrapper.cu.j2), sized ``<NAME>_WORKSPACE_BYTES``. The validation, the error messages,
the header and the README's tables are the C library's (library.py, export_abi.c.j2,
export_checks.c.j2): one implementation for both targets.

The kernels and ``<name>_run`` are in an anonymous namespace, so the two sources of a split
export (``<name>_forward.cu``, ``<name>_backward.cu``, each with its ``tg_k0``...) link together.
``make EMULATE=1`` builds the same sources with g++ and the backend's emulation header, which is
copied into the library directory.

>>> import tracegrad as tg
>>> ep = tg.export(lambda x: (x * 2).relu().sum(), tg.ones(4, 3), name="double_relu", backend="cuda")
>>> print(ep)  # doctest: +ELLIPSIS
ExportedProgram double_relu (CUDA ABI: device pointers, workspace ... bytes)
  input  0: x: float32[4, 3] (argument)
  output 0: result: float32[] (result)
>>> sorted(ep.files())  # doctest: +NORMALIZE_WHITESPACE
['CMakeLists.txt', 'Makefile', 'README.md', 'double_relu.cu', 'double_relu.h', 'example.cu',
 'tg_cuda_emulate.h']
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .targets import CTarget, allocations, checked_calls, printed, tensor_arrays

if TYPE_CHECKING:
    from ..ir.graph import Graph
    from .library import ExampleBuffer, ExportedProgram, TensorSpec

ALIGN = 256  # workspace slices start where cudaMalloc's own allocations would (its alignment)

# Names of the CUDA runtime, its math library and C++ that an exported CUDA library's function
# cannot take (its .cu is C++ and includes <cuda_runtime.h>): beyond backends/c/text.py's rule
_CUDA_PREFIXES = ("cuda", "cublas", "curand", "cufft", "cusparse", "cusolver", "nv", "make_", "atomic")
_CUDA_NAMES = frozenset("""
dim3 uint3 warpSize std min max umin umax llmin llmax ullmin ullmax saturate rsqrt rcbrt sinpi cospi
sincospi erfinv erfcinv erfcx normcdf normcdfinv norm norm3d norm4d rnorm rnorm3d rnorm4d rhypot
cyl_bessel_i0 cyl_bessel_i1 fdivide signbit
""".split())
_VECTOR_TYPE = re.compile(r"u?(char|short|int|long|longlong|float|double)[1-4]")


class CudaTarget(CTarget):
    """A CUDA library on device pointers, built with nvcc (or g++ with ``EMULATE=1``)."""

    name = "cuda"
    abi = "CUDA ABI: device pointers"
    ext = "cu"
    example_file = "example.cu"
    thread_local = "thread_local"  # (the .cu is C++)
    _prefix = "export_cuda_"

    def check_name(self, name: str) -> None:
        """Beyond check_export_name: not a name of the CUDA runtime, its math library
        (``rsqrt``, ``rsqrtf``) or C++ (``std``), nor a CUDA vector type (``float4``)."""
        if (name.lower().startswith(_CUDA_PREFIXES) or name in _CUDA_NAMES
                or (name.endswith("f") and name[:-1] in _CUDA_NAMES) or _VECTOR_TYPE.fullmatch(name)):
            raise ValueError(f"tg.export: name {name!r} is a name of the CUDA runtime, its math library or C++ "
                             "(a .cu library is C++ and includes <cuda_runtime.h>): expected another name; "
                             "pass name=...")

    def check_dynamic(self, name: str) -> None:
        raise NotImplementedError(
            f"tg.export(backend='cuda', dynamic=True) of {name}: the CUDA backend plans its kernels for "
            "fixed shapes (grid sizes, tiles and index arithmetic are constants), so an exported CUDA "
            "library has no runtime batch size yet: export at the batch size you will call it with, or "
            "use backend='c' for a library with a runtime batch size")

    def lower(self, graph: Graph, name: str) -> tuple[Any, str, int]:
        from ..api import CompileError
        from ..backends import cuda

        try:
            plan = cuda.lower(graph)
        except cuda.Unsupported as e:
            raise CompileError(f"tg.export(backend='cuda'): the CUDA backend cannot compile {name}: {e}; an "
                               "exported library has no interpreter to fall back to (backend='c' exports "
                               "every op the C backend lowers)") from None
        if plan.fail is not None:  # (the library's ABI has no return code for it yet)
            raise CompileError(f"tg.export(backend='cuda'): {name} reads indices (gather, scatter), whose "
                               "out-of-range check the exported CUDA library does not report yet; "
                               "backend='c' exports it")
        plan.graph = graph  # (the constants, in slot order: library.render_library reads them there)
        source, workspace = render_launcher(plan, name)
        return plan, source, workspace

    def extra_files(self) -> dict[str, str]:
        from ..backends.cuda import templates_dir

        return {"tg_cuda_emulate.h": (templates_dir() / "tg_cuda_emulate.h").read_text()}

    def example(self, header: str, batch_lines: list[str], bufs: list[ExampleBuffer],
                arrays: list[tuple[str, list[tuple[str, TensorSpec]]]],
                calls: list[tuple[ExportedProgram, str, str]], prints: list[tuple[str, TensorSpec]]) -> str:
        """The C example's host buffers, each with a device twin in ``tg_dev[]``: the filled
        ones copied in, the printed ones copied back after the calls."""
        k_of = {b.var: k for k, b in enumerate(bufs)}
        lines = ["// Calls the exported CUDA library once: host buffers, their device copies (cudaMalloc,",
                 "// cudaMemcpy), the call, the results copied back. Every CUDA call is checked.",
                 "#include <stdio.h>", "#include <stdlib.h>", "#ifdef TG_CUDA_EMULATE",
                 '#include "tg_cuda_emulate.h"  /* built with make EMULATE=1: the CPU emulation */', "#else",
                 "#include <cuda_runtime.h>", "#endif", f'#include "{header}.h"', "",
                 "#define TG_CUDA_CHECK(call) do { cudaError_t tg_e = (call); if (tg_e != cudaSuccess) { \\",
                 '    fprintf(stderr, "%s: %s\\n", #call, cudaGetErrorString(tg_e)); return 1; } } while (0)', "",
                 "int main(void) {"]
        lines += batch_lines + allocations(bufs)
        lines.append("  /* the library reads and writes device memory: a device buffer per host buffer */")
        lines.append(f"  void *tg_dev[{max(len(bufs), 1)}] = {{0}};")
        for k, b in enumerate(bufs):
            t, c = b.spec, b.spec.dtype.c_type
            lines.append(f"  TG_CUDA_CHECK(cudaMalloc(&tg_dev[{k}], ({t.numel_ref} + 1) * sizeof({c})));")
            if b.fill is not None:
                lines.append(f"  TG_CUDA_CHECK(cudaMemcpy(tg_dev[{k}], {b.var}, {t.numel_ref} * sizeof({c}), "
                             "cudaMemcpyHostToDevice));")
        lines += tensor_arrays(arrays, lambda var: f"tg_dev[{k_of[var]}]")
        lines += checked_calls(calls)
        for var, t in prints:
            lines.append(f"  TG_CUDA_CHECK(cudaMemcpy({var}, tg_dev[{k_of[var]}], {t.numel_ref} * "
                         f"sizeof({t.dtype.c_type}), cudaMemcpyDeviceToHost));")
        lines += printed(prints)
        lines += [f"  cudaFree(tg_dev[{k}]);" for k in range(len(bufs))]
        lines += [f"  free({b.var});" for b in bufs] + ["  return 0;", "}"]
        return "\n".join(lines)


def render_launcher(plan, name: str) -> tuple[str, int]:
    """(the backend's prelude, the kernels and ``<name>_run(void **args, char *ws)``, workspace
    bytes).
    ``args``: the inputs' device pointers, the constants' host arrays, the outputs' device
    pointers (the wrapper's order); every other buffer is a slice of ``ws``."""
    from ..backends.cuda import PRELUDE, launch_lines

    offsets, total = {}, 0
    for b in plan.buffers:
        if b.kind in ("const", "work"):
            offsets[b.name] = total = (total + ALIGN - 1) // ALIGN * ALIGN
            total += b.nbytes
    lines = ["namespace {  // internal to this file: the entry points of a split export link together", ""]
    lines += [k["source"] for k in plan.kernels]
    lines += ["/* Runs the kernels: args holds the inputs' and outputs' device pointers and the constants'",
              f" * host arrays (copied into ws, the call's device workspace of {total} bytes). */",
              f"int {name}_run(void **args, char *ws) {{", "  int rc = 0;"]
    for b in plan.buffers:  # (all declared before the first TG_CHECK, which jumps to done)
        where = f"args[{b.slot}]" if b.kind in ("input", "output") else f"ws + {offsets[b.name]}"
        lines.append(f"  {b.ctype} *{b.name} = ({b.ctype} *)({where});")
    for b in plan.buffers:
        if b.kind == "const" and b.nbytes:
            lines.append(f"  TG_CHECK(cudaMemcpy({b.name}, args[{b.slot}], {b.nbytes}, cudaMemcpyHostToDevice));")
    lines += launch_lines([k["launch"] for k in plan.kernels])
    lines += ["done:", "  return rc;", "}", "", "}  // namespace"]
    return PRELUDE + "\n" + "\n".join(lines) + "\n", total

"""What is particular to one target of ``tg.export``: how a graph is lowered, which templates
render the library, and how the example program reaches the data.

The rest (capture, the signature, the ABI's validation and error messages, the header, the
README's tables) is one implementation in library.py and the shared templates
(export_abi.c.j2, export_checks.c.j2, export_header.h.j2, export_README.md.j2). Targets:
"c" (:class:`CTarget`, here) and "cuda" (:class:`~.cuda.CudaTarget`, cuda.py).

>>> target_for("c").template("Makefile")
'export_Makefile.j2'
>>> target_for("rust")
Traceback (most recent call last):
...
ValueError: tg.export: backend must be one of 'c', 'cuda', got 'rust'
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..ir.graph import Graph
    from .library import ExampleBuffer, ExportedProgram, TensorSpec


class CTarget:
    """A C library on host memory (docs/export.md): the C backend's lowering and kernels."""

    name = "c"
    abi = "C ABI"
    ext = "c"  # the entry points' source files: <entry>.c
    example_file = "example.c"
    thread_local = "_Thread_local"  # the error message's storage (C11)
    _prefix = "export_"

    def template(self, part: str) -> str:
        """The template of ``part`` ("wrapper", "Makefile", "CMakeLists.txt", "README.md")."""
        return f"{self._prefix}{part}.{self.ext}.j2" if part == "wrapper" else f"{self._prefix}{part}.j2"

    def check_name(self, name: str) -> None:
        """Names a C library may not take beyond backends/c/text.py's check_export_name: none."""

    def check_dynamic(self, name: str) -> None:
        """Raise unless this target exports a runtime batch size: C does."""

    def lower(self, graph: Graph, name: str) -> tuple[Any, str, int]:
        """(plan, kernel source, workspace bytes) of ``graph`` for the entry point ``name``;
        the plan's ``graph`` holds the constants in slot order."""
        from ..api import CompileError
        from ..backends import c
        from ..backends.c.lower import lower

        try:
            # openmp=True only adds pragmas; the Makefile's OPENMP switch decides whether they act
            plan = lower(graph, {"openmp": True})
        except c.Unsupported as e:
            raise CompileError(f"tg.export: the C backend cannot compile {name}: {e}") from None
        return plan, c.render(plan, graph.name, export=name), plan.workspace

    def extra_files(self) -> dict[str, str]:
        """Files the library directory holds beyond the sources, build files and README."""
        return {}

    def example(self, header: str, batch_lines: list[str], bufs: list[ExampleBuffer],
                arrays: list[tuple[str, list[tuple[str, TensorSpec]]]],
                calls: list[tuple[ExportedProgram, str, str]], prints: list[tuple[str, TensorSpec]]) -> str:
        """The example program: ``bufs`` allocated (and filled), the ``tg_tensor`` ``arrays``
        over them, the ``calls`` (entry, inputs array, outputs array), element 0 of ``prints``."""
        lines = ["#include <stdio.h>", "#include <stdlib.h>", f'#include "{header}.h"', "", "int main(void) {"]
        lines += batch_lines + allocations(bufs) + tensor_arrays(arrays, lambda var: var)
        lines += checked_calls(calls) + printed(prints)
        lines += [f"  free({b.var});" for b in bufs] + ["  return 0;", "}"]
        return "\n".join(lines)


def allocations(bufs: list[ExampleBuffer]) -> list[str]:
    """The example's host buffers: shape, ``calloc``, fill."""
    lines = []
    for b in bufs:
        t, c = b.spec, b.spec.dtype.c_type
        lines.append(f"  /* {b.comment} */")
        lines.append(f"  const int64_t {b.var}_shape[] = {t.shape_ref};")
        lines.append(f"  {c} *{b.var} = ({c} *)calloc({t.numel_ref} + 1, sizeof({c}));")
        if b.fill is not None:
            lines.append(f"  for (int64_t i = 0; i < {t.numel_ref}; i++) {b.var}[i] = ({c})({b.fill});")
    return lines


def tensor_arrays(arrays, data) -> list[str]:
    """The ``tg_tensor`` arrays; ``data(var)`` is the C text of buffer ``var``'s data pointer."""
    lines = []
    for arr, items in arrays:
        text = ", ".join(f"{{{data(var)}, {t.macro}_DTYPE, {t.macro}_NDIM, {var}_shape}}"
                         for var, t in items) or "{0}"
        lines.append(f"  tg_tensor {arr}[] = {{{text}}};")
    return lines


def checked_calls(calls) -> list[str]:
    """Each entry point called; a non-zero return prints ``<entry>_last_error()`` and ends."""
    lines = []
    for e, i, o in calls:
        lines += [f"  if ({e.name}({i}, {e.NAME}_N_INPUTS, {o}, {e.NAME}_N_OUTPUTS) != 0) {{",
                  f'    fprintf(stderr, "%s\\n", {e.name}_last_error());', "    return 1;", "  }"]
    return lines


def printed(prints) -> list[str]:
    """``printf`` of element 0 of each buffer in ``prints``."""
    lines = []
    for var, t in prints:
        fmt, cast = ("%g", "(double)") if t.dtype.is_floating_point else ("%lld", "(long long)")
        lines.append(f'  printf("{t.name_c}[0] = {fmt}\\n", {cast}{var}[0]);')
    return lines


def target_for(backend: str) -> CTarget:
    """The target of ``tg.export(..., backend=backend)``."""
    from .cuda import CudaTarget  # (here: cuda.py imports this module for CTarget)

    targets = {"c": CTarget, "cuda": CudaTarget}
    if backend not in targets:
        raise ValueError(f"tg.export: backend must be one of {', '.join(map(repr, targets))}, got {backend!r}")
    return targets[backend]()

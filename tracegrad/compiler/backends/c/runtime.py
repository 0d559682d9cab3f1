"""The C runtime, split by theme: a program includes the core (``templates/runtime.h.j2``:
headers, failure codes, the BLAS pointers the loader hands over) and only the themes its
kernels call (``templates/runtime/<theme>.h.j2``), each after the themes it needs.

``THEMES`` is the one place that says which runtime functions a theme defines: kernels and
op expressions name a function (``tg_erfinv(x)``, ``tg_gemm_float(...)``), and
``themes_for`` maps every ``tg_*`` identifier of the generated kernels to the theme that
defines it (names ending in ``_`` are families made by a C macro or a template loop:
``tg_lu_solve_`` stands for ``tg_lu_solve_float`` and ``tg_lu_solve_double``; the longest
match wins, so ``tg_lu_factor_float`` is factorizations', not lu's). A kernel that calls a
function no theme lists fails to compile (the registry-driven tests build every op), and
``tests/test_backend_c_runtime.py`` checks that each listed name is spelled in its template.

Adding a runtime helper: put it in the theme file it belongs to (or a new
``runtime/<theme>.h.j2``) and list its name here. Why not scan the templates for
definitions: their names come out of C macros (``tg_lu_##S``) and template loops
(``tg_airy_ai_{{ S }}``), which a scan would have to imitate.

>>> [t for t in themes_for([{"code": "tg_gemm_float(2, 2, 2, a, 2, 1, b, 2, 1, c);"}])]
['gemm']
>>> themes_for([{"code": "x = tg_lu_factor_double(3, 3, a, b);"}])
['lu', 'decompositions', 'factorizations']
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .toolchain import LAPACK_FUNCTIONS, MVEC_FUNCTIONS


@dataclass(frozen=True)
class Theme:
    name: str  # templates/runtime/<name>.h.j2
    provides: tuple  # identifiers it defines (a trailing "_": a family of them)
    needs: tuple = ()  # themes whose functions it calls


THEMES = (
    Theme("integer", ("tg_ipow", "tg_gcd", "tg_lcm", "tg_floor_divide_")),
    Theme("bfloat16", ("tg_bf16_to_float", "tg_bf16_from_float")),
    Theme("gemm", ("tg_gemm_", "tg_blas_one_thread", "tg_blas_threads_restore", "tg_blas_layout")),
    Theme("lu", ("tg_lu_float", "tg_lu_double", "tg_lu_solve_", "tg_cholesky_")),
    Theme("special", ("tg_digamma", "tg_polygamma", "tg_erfinv", "tg_erfcx", "tg_ndtri", "tg_zeta",
                      "tg_bessel_", "tg_igamma", "tg_igammac", "tg_standard_gamma_grad",
                      "tg_dirichlet_grad", "tg_orthogonal_polynomial_", "tg_airy_ai_")),
    Theme("decompositions", ("tg_eigh_", "tg_svd_", "tg_qr_", "tg_pinv_", "tg_jacobi_")),
    Theme("factorizations", ("tg_lu_factor_", "tg_lu_permutation", "tg_slogdet_", "tg_cofactor_",
                             "tg_ldl_"), needs=("lu", "decompositions")),
    # (the hand-written kernels stay as the fallback: exported libraries, blas=False, small n)
    Theme("lapack", ("tg_la_solve_", "tg_la_det_", "tg_la_cholesky_", "tg_set_lapack"), needs=("lu",)),
    Theme("lapack_decompositions", ("tg_la_eigh_", "tg_la_svd_"), needs=("lapack", "decompositions")),
    Theme("sort", ("tg_argsort_",)),
    Theme("random", ("tg_uniform",)),
    Theme("fast_exp", ("tg_exp_core", "tg_expf", "tg_tanhf")),
    Theme("fast_erf", ("tg_erff",), needs=("fast_exp",)),
    Theme("fast_log", ("tg_logf", "tg_log1pf")),
    Theme("collective", ("tg_collective", "tg_set_collective")),  # (tracegrad/distributed/_native.py)
)
_BY_NAME = {t.name: t for t in THEMES}
_IDENTIFIER = re.compile(r"\btg_\w+")
_LIBM_CALL = re.compile(r"\b(" + "|".join(MVEC_FUNCTIONS) + r")f?\(")


def _theme_of(identifier):
    """The theme defining ``identifier``, or None (the core's, or the program's own)."""
    best, length = None, 0
    for theme in THEMES:
        for name in theme.provides:
            hit = identifier == name or (name.endswith("_") and identifier.startswith(name))
            if hit and len(name) > length:
                best, length = theme, len(name)
    return best


def themes_for(kernels):
    """The names of the themes ``kernels`` (plan kernels: dicts) call, each after those it
    needs, in THEMES' order (which is a valid order of inclusion)."""
    wanted = set()
    for identifier in set(_IDENTIFIER.findall(repr(kernels))):
        theme = _theme_of(identifier)
        if theme is not None:
            wanted.add(theme.name)
    todo = list(wanted)
    while todo:
        for need in _BY_NAME[todo.pop()].needs:
            if need not in wanted:
                wanted.add(need)
                todo.append(need)
    return [t.name for t in THEMES if t.name in wanted]


def libm_vector_functions(kernels):
    """The libmvec functions (toolchain.MVEC_FUNCTIONS) ``kernels`` call: only those are
    declared simd (a declaration of each of them in every program was 88 lines)."""
    used = set(_LIBM_CALL.findall(repr(kernels)))
    return tuple(f for f in MVEC_FUNCTIONS if f in used)


def context(plans):
    """What runtime.h.j2 needs to render for the kernels of ``plans``."""
    kernels = [k for plan in plans for k in plan.kernels]
    return {"runtime_themes": [f"runtime/{name}.h.j2" for name in themes_for(kernels)],
            "mvec_functions": libm_vector_functions(kernels), "lapack_functions": LAPACK_FUNCTIONS}

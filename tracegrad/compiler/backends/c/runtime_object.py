"""The runtime object: the runtime themes whose functions take no constant from a program
(``THEMES``: gemm, the BLAS dispatch, packing, batches and the portable product loops),
compiled once per toolchain and linked into each program that calls them, instead of being
compiled again inside every program. Measured with GCC 12 (compiler CPU time): the gemm theme
was ~0.09 s of every program's build, 36% of a 2-layer MLP step's (0.26 -> 0.17 s);
docs/performance.md, "Compile time against depth".

The object is rendered from the same templates as the programs (``runtime_part="object"``:
its functions and BLAS pointers ``TG_RT``, hidden, and the loader's setters ``tg_set_blas`` and
``tg_set_blas_batch`` exported from the program that links it); a program that links it
(``runtime_part="linked"``) declares the theme's functions instead of defining them. Linked
statically, each loaded program still has its own copy of the pointers, as before. The object
is an entry of the compile cache (cache.py: ``<key>.o``, keyed by its source, the compiler and
the flags; checksummed and trust-checked when looked up, like every program).

Programs built without BLAS (``options={"blas": False}``) keep the theme inside: there the
portable loops run, and the product's constant sizes reach them only in the same file. Other
renderings (``tg.export``'s self-contained file, ``dynamic=True``, the batch split's halves)
keep it inside too: ``links`` is asked by ``build`` alone.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

from ...cache import get_or_build, lookup, make_key
from . import toolchain
from .runtime import themes_for

THEMES = ("gemm",)
TEMPLATE = "runtime_object.c.j2"  # (rendered by the package's render_template, with THEMES)


def links(plans: Sequence, options: dict | None) -> bool:
    """Whether a program of ``plans`` built with ``options`` links the runtime object: when
    its kernels call a theme of THEMES, BLAS is allowed and the compile cache is in use (the
    object is kept there)."""
    options = options or {}
    if not options.get("blas", True) or not options.get("cache", True):
        return False
    return any(t in THEMES for t in themes_for([k for plan in plans for k in plan.kernels]))


@functools.lru_cache(maxsize=None)
def _key(text: str, flag_list: tuple[str, ...], cc_version: str) -> str:
    """The cache key of the runtime object of source ``text`` for this compiler and flags."""
    return make_key({"runtime_object": text, "cc": cc_version, "flags": list(flag_list),
                     "cpu": toolchain.cpu_features()})


def path(text: str, flag_list: tuple[str, ...], cc_version: str) -> str:
    """The path of the runtime object of source ``text`` for this compiler and these flags (a
    tuple), built on first use and kept in the compile cache."""
    def build(tmpdir):
        return toolchain.compile_object(text, str(tmpdir), flag_list), {"source": text}

    built, _, _ = get_or_build(_key(text, flag_list, cc_version), build, suffix=".o")
    return str(built)


def compile_linked(source: str, workdir: str, flag_list: tuple[str, ...], cc_version: str,
                   runtime_source: str) -> str:
    """Compile program ``source`` into ``workdir/program.so`` linked with the runtime object
    of ``runtime_source``; returns its path. Where the object is not built yet (the first such
    program of a cache directory), it is built while the program compiles, and the two are
    then linked: on two cores the first program takes about as long as with the theme inside,
    and every later one less."""
    from concurrent.futures import ThreadPoolExecutor

    found = lookup(_key(runtime_source, flag_list, cc_version), suffix=".o")
    if found is not None:
        return toolchain.compile_shared(source, workdir, flag_list, [str(found[0])])
    with ThreadPoolExecutor(1, thread_name_prefix="tracegrad-runtime-object") as pool:
        runtime = pool.submit(path, runtime_source, flag_list, cc_version)
        program = toolchain.compile_object(source, workdir, flag_list, name="program")
        return toolchain.link_shared([program, runtime.result()], workdir, flag_list)

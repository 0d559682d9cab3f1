"""``tg.set_num_threads`` / ``tg.get_num_threads``: how many threads the native code may use.

The count goes to every thread pool tracegrad's work runs on: the OpenMP runtime of compiled
programs (``omp_set_num_threads``, now or when the first program brings the runtime in),
tracegrad's own OpenBLAS (compiled matrix products), NumPy's OpenBLAS (eager products) and the
worker of batch-split programs (one thread: on while the count is 2 or more).
As in PyTorch, OpenMP takes the setting per calling thread: set it from the thread that runs
the compiled functions.
"""
from __future__ import annotations

import ctypes
import os

_count = None


def set_num_threads(n):
    global _count
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n!r}")
    _count = n
    for lib in _loaded(_openmp_names()):
        apply_to_openmp(lib)
    for lib, setter in _blas_setters():
        getattr(lib, setter)(ctypes.c_int(n))
    from .pool import set_threads

    set_threads(n)  # the worker of split programs (backends/c/batch_split.py)


def apply_to_openmp(runtime):
    """Give a (just loaded) OpenMP runtime the count, if one was set."""
    if _count is not None:
        runtime.omp_set_num_threads(ctypes.c_int(_count))


def get_num_threads():
    if _count is not None:
        return _count
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _openmp_names():
    from . import OPENMP_RUNTIMES

    return OPENMP_RUNTIMES


def _loaded(names):
    """Handles of the libraries among ``names`` that are already mapped (none is loaded here)."""
    for name in names:
        try:
            yield ctypes.CDLL(name, mode=getattr(os, "RTLD_NOLOAD", 0) | os.RTLD_NOW)
        except OSError:
            continue


def _blas_setters():
    """(library, name of its thread-count setter) of tracegrad's BLAS (loaded now if it was
    not: the count must hold for the first compiled product too) and NumPy's."""
    from . import toolchain

    toolchain.blas()
    for path, prefix, ilp64, _ in toolchain._blas_candidates():
        for lib in _loaded([path]):
            name = f"{prefix}openblas_set_num_threads{'64_' if ilp64 else ''}"
            if hasattr(lib, name):
                yield lib, name

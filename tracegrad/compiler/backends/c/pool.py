"""The worker thread split programs share (compiler/backends/c/templates/pool.c): built once per cache
directory like a program, loaded once per process and never unloaded (the worker runs its code
between calls, whatever becomes of the programs that used it)."""
from __future__ import annotations

import ctypes

_address = None
_LOADED = []  # the library, referenced for the life of the process


def parallel2_address():
    """The address of pool.c's ``tg_parallel2`` (building and loading the library on first use),
    or None when it cannot be built: split programs then run their halves one after the other."""
    global _address
    if _address is None:
        try:
            _address = _load()
        except Exception as e:  # (any build or load failure: run the halves in turn)
            import warnings

            warnings.warn(f"tracegrad: the worker thread of split programs is unavailable ({e}); "
                          f"they run both halves on the calling thread.", RuntimeWarning, stacklevel=4)
            _address = 0
    return _address or None


def _load():
    from .... import __version__
    from ...cache import get_or_build, make_key
    from . import _templates_dir, threads, toolchain

    source = (_templates_dir() / "pool.c").read_text()
    cc_version, flags = toolchain.toolchain(openmp=False, native=False)
    flags = tuple(flags) + ("-pthread",)

    def build(tmpdir):
        return toolchain.compile_shared(source, str(tmpdir), flags), {"source": source}

    so_path, _, _ = get_or_build(make_key({"pool": source, "cc": cc_version, "flags": list(flags),
                                           "package": __version__}), build)
    lib = ctypes.CDLL(str(so_path))  # (ctypes never unloads it)
    _LOADED.append(lib)
    set_threads(threads.get_num_threads())
    return ctypes.cast(lib.tg_parallel2, ctypes.c_void_p).value


def set_threads(n):
    """Let split programs use the worker only while ``tg.set_num_threads`` allows 2 or more."""
    for lib in _LOADED:
        lib.tg_pool_set_threads(ctypes.c_int(n))


def worker_runs():
    """How many halves the worker thread has run in this process (0 before it is loaded)."""
    if not _LOADED:
        return 0
    _LOADED[0].tg_pool_worker_runs.restype = ctypes.c_long
    return _LOADED[0].tg_pool_worker_runs()

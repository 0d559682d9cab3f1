"""The collectives inside compiled C programs: the C lowering of ``all_reduce`` and ``broadcast``
and the callback that runs them.

A program holding a collective calls ``tg_collective(kind, buf, nbytes, dtype, arg, group)``
(the runtime theme ``templates/runtime/collective.h.j2`` of the C backend), which calls the
function pointer the loader set with ``tg_set_collective`` at load: ``_callback`` below, a cffi
callback into ``_mpi`` (the same code the interpreter and eager mode run, argument check
included). So a cached program holds no MPI at all: no MPI header (MPICH's constants differ
from the MPI-5 ABI's), no MPI symbol; it runs under whichever MPI mpi4py was built with. The
cost over a direct MPI call is a few microseconds a collective (the GIL is taken back for the
callback), against a step of milliseconds.

The numbers the C text carries (the dtype's and the reduction's index in ``DTYPES`` and
``REDUCTIONS``) are part of cached programs: append to those tuples, never reorder them, and
bump the OpDefs' ``version`` (ops/collectives.py) when the emitted C changes.

``register()`` adds the rules and the loader's setter; the distributed API calls it when a
collective is traced (the C backend is not imported before a program is compiled).
"""
from __future__ import annotations

import numpy as np

from ..ops.collectives import ALL_REDUCE, BROADCAST
from . import _mpi

REDUCTIONS = ("sum", "avg", "max", "min", "product")  # (the C text's reduction codes)
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128", "uint16", "uint32", "uint64")  # (the C text's dtype codes)
ALL_REDUCE_KIND, BROADCAST_KIND = 0, 1

_state: dict = {}  # "callback": the cffi callback (kept alive), "registered": True


def _numpy_dtype(code: int):
    name = DTYPES[code]
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _callback(kind, buf, nbytes, dtype, arg, group):
    """``tg_collective``'s target: the collective on the ``nbytes`` at ``buf``, in place.
    Returns 0, or 1 after an error, which is kept in ``last_error`` (the executable reruns the
    graph with the interpreter, which raises that error on every rank)."""
    try:
        ffi = _state["ffi"]
        a = np.frombuffer(ffi.buffer(buf, nbytes), dtype=_numpy_dtype(dtype))
        if kind == ALL_REDUCE_KIND:
            _mpi.allreduce_into(a, REDUCTIONS[arg], group)
        else:
            a[...] = _mpi.broadcast(a, arg, group)
        return 0
    except BaseException as e:  # (nothing may propagate through C; KeyboardInterrupt included)
        _state["last_error"] = e
        return 1


def callback_address() -> int:
    """The address of the C function ``int(int, void *, int64_t, int, int, int64_t)`` that
    programs call for a collective (made once per process, with the C backend's cffi instance,
    which ``register`` stored)."""
    if "callback" not in _state:
        _state["callback"] = _state["ffi"].callback("int(int, void *, int64_t, int, int, int64_t)", _callback)
    return int(_state["ffi"].cast("intptr_t", _state["callback"]))


def _kernel(kind, unsupported):
    def lower_collective(lw, n):
        """Copy the input into the result's buffer, then the collective on it in place."""
        x = n.inputs[0]
        xv, ov = lw.contiguous(x), lw.output_view(n.out)
        name = np.dtype(n.out.dtype.np).name
        if name not in DTYPES:
            raise unsupported(n.op.name, f"no collective for dtype {name}")
        nbytes = int(np.prod(n.out.shape, dtype=np.int64)) * n.out.dtype.itemsize
        arg = REDUCTIONS.index(n.attrs["reduction"]) if kind == ALL_REDUCE_KIND else int(n.attrs["src"])
        src = f"({xv.buf} + {xv.offset})" if xv.offset else xv.buf
        dst = f"({ov.buf} + {ov.offset})" if ov.offset else ov.buf
        code = (f"  if ((const void *){dst} != (const void *){src}) memmove({dst}, {src}, {nbytes});\n"
                f"  if (tg_collective({kind}, {dst}, {nbytes}, {DTYPES.index(name)}, {arg}, "
                f"{int(n.attrs['group'])})) return TG_FAIL_COLLECTIVE;")
        lw.emit({"kind": "raw", "code": code, "comment": n.op.name}, [xv, ov])

    return lower_collective


def register() -> None:
    """Give the C backend its rules for the collectives and the loader its setter (once)."""
    if _state.get("registered"):
        return
    from ..compiler.backends import c  # (c.RULES: backends/c/rules.py's table)

    if ALL_REDUCE not in c.RULES:
        c.RULES.kernel(ALL_REDUCE)(_kernel(ALL_REDUCE_KIND, c.Unsupported))
        c.RULES.kernel(BROADCAST)(_kernel(BROADCAST_KIND, c.Unsupported))
    _state["ffi"] = c._ffi_instance()
    c.LOAD_SETTERS["tg_set_collective"] = callback_address
    _state["registered"] = True

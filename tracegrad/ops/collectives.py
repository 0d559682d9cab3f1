"""Collective primitives: ``all_reduce`` and ``broadcast`` across the ranks of a process group
(``tracegrad.distributed``), so that a compiled training step records its gradient all-reduce in
the IR and runs it inside the one native call.

Both are out of place (the distributed API writes their result back into the user's tensor with
``copy_``). ``effect=True`` marks them as acting outside the program (OpDef.pure is False): the
passes never fold, merge (CSE) or recompute a collective, and the C backend never splits the
batch of a program that holds one; every rank runs the same program, so the
collectives are issued in the same order everywhere. ``group`` is the group's id (an int, part
of the cache key); the world size is not: the program asks the communicator at run time, so one
cached program serves any number of ranks. Not differentiable: DDP reduces gradients under
``no_grad``.
"""
from __future__ import annotations

from .registry import defop

REDUCE_OPS = ("sum", "avg", "max", "min", "product")


def _infer_all_reduce(x, reduction, group):
    if reduction not in REDUCE_OPS:
        raise RuntimeError(f"all_reduce: unknown reduction {reduction!r}; expected one of {', '.join(REDUCE_OPS)}")
    if reduction == "avg" and not x.dtype.is_floating_point:
        raise RuntimeError(f"all_reduce: ReduceOp.AVG needs a floating point tensor, got {x.dtype}")
    return tuple(x.shape), x.dtype


def _all_reduce_impl(x, reduction, group):
    # (lazy: tracegrad.distributed loads on first use, for start-up time (tracegrad/__init__.py),
    # and MPI is initialised by init_process_group, never at import)
    from ..distributed import _mpi

    return _mpi.allreduce(x, reduction, group)


def _infer_broadcast(x, src, group):
    return tuple(x.shape), x.dtype


def _broadcast_impl(x, src, group):
    from ..distributed import _mpi  # (lazy: as _all_reduce_impl's)

    return _mpi.broadcast(x, src, group)


ALL_REDUCE = defop("all_reduce", infer=_infer_all_reduce, impl=_all_reduce_impl, differentiable=False,
                   effect=True, kind="collective")
BROADCAST = defop("broadcast", infer=_infer_broadcast, impl=_broadcast_impl, differentiable=False,
                  effect=True, kind="collective")

"""``tracegrad.distributed``: data-parallel training over MPI (through mpi4py), with
``torch.distributed``'s names.

Launch N ranks with ``python -m tracegrad.distributed.run -n N script.py`` (or
``mpiexec -n N python -m mpi4py script.py``); each calls ``init_process_group("mpi")``.
Collectives work on tensors in place; ``all_reduce`` and ``broadcast`` are captured by
``tg.compile``. ``tg.nn.parallel.DistributedDataParallel`` averages gradients across ranks.
docs/distributed.md is the guide.

Example (every rank runs it)::

    import tracegrad as tg
    import tracegrad.distributed as dist

    dist.init_process_group(backend="mpi")
    t = tg.ones(3) * dist.get_rank()
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
"""
from .process_group import (Backend, GroupMember, ProcessGroup, destroy_process_group, get_backend,
                            get_global_rank, get_group_rank, get_process_group_ranks, get_rank,
                            get_world_size, group, init_process_group, is_available, is_initialized,
                            is_mpi_available, new_group)
from .collectives import (ReduceOp, Work, all_gather, all_gather_into_tensor, all_reduce, barrier, broadcast,
                          gather, reduce_scatter_tensor, scatter)

__all__ = ["Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather", "all_gather_into_tensor",
           "all_reduce", "barrier", "broadcast", "destroy_process_group", "gather", "get_backend",
           "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
           "init_process_group", "is_available", "is_initialized", "is_mpi_available", "new_group",
           "reduce_scatter_tensor", "scatter"]

"""Process groups over MPI: ``init_process_group``, the default group, ``new_group`` and the
rank and size queries, with ``torch.distributed``'s names and answers."""
from __future__ import annotations

import datetime
import enum

from . import _mpi


class Backend(str, enum.Enum):
    """The communication backends; tracegrad has one, MPI (through mpi4py)."""

    MPI = "mpi"


class ProcessGroup:
    """A set of ranks that run collectives together. ``WORLD`` (every rank) is the default;
    ``new_group(ranks)`` makes others. On a rank outside it, ``rank()`` is -1."""

    def __init__(self, gid: int, ranks: list[int] | None):
        self.id = gid
        self.ranks = ranks  # world ranks of its members (None: every rank)
        self.member = _mpi._comms.get(gid) is not None

    def rank(self) -> int:
        return _mpi.rank(self.id) if self.member else -1

    def size(self) -> int:
        return _mpi.size(self.id) if self.member else len(self.ranks or ())

    def name(self) -> str:
        return "mpi"

    def __repr__(self):
        who = "WORLD" if self.id == 0 else f"ranks={self.ranks}"
        return f"ProcessGroup({who})"


class GroupMember:
    """``GroupMember.WORLD`` is the default group once it exists (as in PyTorch)."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = -100


class _WorldGroup:  # (torch.distributed.group.WORLD reads the default group when used)
    @property
    def WORLD(self):
        return GroupMember.WORLD


group = _WorldGroup()


def is_available() -> bool:
    """Whether distributed training can be used here: mpi4py (and so an MPI library) is installed."""
    return _mpi.available()


def is_mpi_available() -> bool:
    return _mpi.available()


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` has not)."""
    return _mpi.initialized()


def init_process_group(backend: str | None = "mpi", init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None, device_id=None) -> None:
    """Join the job's default process group. Rank and world size come from MPI (the launcher:
    ``python -m tracegrad.distributed.run -n 2 script.py`` or ``mpiexec -n 2 python -m mpi4py
    script.py``); ``world_size`` and ``rank``, when given, must agree with it.

    Example (run on every rank)::

        import tracegrad.distributed as dist
        dist.init_process_group(backend="mpi")
        print(dist.get_rank(), "of", dist.get_world_size())
    """
    if backend is not None and str(backend).lower() not in ("mpi", "cpu:mpi"):
        raise ValueError(f"tracegrad.distributed supports backend='mpi' only, got {backend!r}")
    if _mpi.initialized():
        raise ValueError("trying to initialize the default process group twice!")
    _mpi.init_world()
    actual_size, actual_rank = _mpi.size(0), _mpi.rank(0)
    problems = []
    if world_size not in (-1, None) and world_size != actual_size:
        problems.append(f"world_size={world_size} but MPI started {actual_size} ranks")
    if rank not in (-1, None) and rank != actual_rank:
        problems.append(f"rank={rank} but MPI says this is rank {actual_rank}")
    if problems:
        _mpi.free_all()
        raise ValueError("init_process_group: " + "; ".join(problems))
    GroupMember.WORLD = ProcessGroup(0, None)


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Free the default group and every group made from it (or only ``group``)."""
    if group is None or group.id == 0:
        _mpi.free_all()
        GroupMember.WORLD = None
    else:
        c = _mpi._comms.pop(group.id, None)
        if c is not None:
            c.Free()


def resolve(group: ProcessGroup | None) -> ProcessGroup:
    """``group`` or the default group; raises PyTorch's error before initialisation."""
    if group is None:
        _mpi.comm(0)  # (raises "Default process group has not been initialized ...")
        return GroupMember.WORLD
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"expected a ProcessGroup, got {type(group).__name__}")
    return group


def new_group(ranks: list[int] | None = None, timeout: datetime.timedelta | None = None, backend=None,
              pg_options=None, use_local_synchronization: bool = False, group_desc=None) -> ProcessGroup:
    """A group of the world ranks ``ranks`` (every rank when None). Every rank of the default
    group must call it, in the same order, with the same ranks, members or not.

    >>> # sub = dist.new_group([0, 1]); dist.all_reduce(t, group=sub)
    """
    world = resolve(None)
    ranks_l = None if ranks is None else sorted(int(r) for r in ranks)
    n = world.size()
    err = None
    if ranks_l is not None and (len(set(ranks_l)) != len(ranks_l) or any(not 0 <= r < n for r in ranks_l)):
        err = f"ranks {ranks_l} are not distinct ranks of a world of {n}"
    _mpi.agree(_mpi.comm(0), "new_group", ranks_l, err)
    return ProcessGroup(_mpi.add_group(ranks_l), ranks_l)


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (the default group when None); -1 outside it."""
    return resolve(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of ranks in ``group`` (the default group when None)."""
    return resolve(group).size()


def get_backend(group: ProcessGroup | None = None) -> str:
    resolve(group)
    return "mpi"


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The world rank of ``group``'s rank ``group_rank``."""
    return group_rank if group.ranks is None else group.ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """``group``'s rank of world rank ``global_rank``."""
    if group.ranks is None:
        return global_rank
    if global_rank not in group.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return group.ranks.index(global_rank)


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    g = resolve(group)
    return list(range(_mpi.size(0))) if g.ranks is None else list(g.ranks)

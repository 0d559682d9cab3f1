"""The MPI layer under ``tracegrad.distributed``: communicators by group id and the collectives on
NumPy arrays, each preceded by a check that every rank agrees on what it is doing.

It imports nothing of tracegrad, so that the primitives (``tracegrad/ops/collectives.py``), the
interpreter and the C backend's callback can all call it: one implementation of every
collective, whoever runs it.

Why a check before every payload: MPI trusts its callers. Two ranks all-reducing buffers of
different lengths either hang or read past the shorter one, and a wrong dtype gives wrong numbers
without a word. So each collective first all-gathers a small description (what it is, shapes,
dtypes, root, a local error if this rank already knows its arguments are wrong); if the ranks
disagree, every rank raises the same ``RuntimeError`` naming each rank's arguments, and nothing
hangs.
"""
from __future__ import annotations

import numpy as np

# group id -> mpi4py communicator (None on ranks outside the group); 0 is the default group
_comms: dict = {}
_next_group = 1

REDUCE_OPS = ("sum", "avg", "max", "min", "product")


def mpi():
    """mpi4py's MPI module (importing it initialises MPI)."""
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise RuntimeError("tracegrad.distributed needs mpi4py and an MPI library: "
                           "pip install 'tracegrad[distributed]' (mpi4py and mpich)") from e
    return MPI


def available() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def init_world():
    _comms[0] = mpi().COMM_WORLD.Dup()  # a communicator of our own: user MPI traffic cannot collide


def initialized() -> bool:
    return 0 in _comms


def comm(group: int):
    try:
        c = _comms[group]
    except KeyError:
        if group == 0:  # (a ValueError, as PyTorch's)
            raise ValueError("Default process group has not been initialized, please make sure to call "
                               "init_process_group.") from None
        raise RuntimeError(f"process group {group} has been destroyed") from None
    if c is None:
        raise RuntimeError("this rank is not a member of the process group it was given")
    return c


def add_group(ranks):
    """A communicator over the world ranks ``ranks`` (collective over the default group)."""
    global _next_group
    world = comm(0)
    gid = _next_group
    _next_group += 1
    if ranks is None:
        _comms[gid] = world.Dup()
    else:
        new = world.Create_group(world.Get_group().Incl(list(ranks)))
        _comms[gid] = None if new == mpi().COMM_NULL else new
    return gid


def free_all():
    for c in _comms.values():
        if c is not None:
            c.Free()
    _comms.clear()


def _describe(a):
    return None if a is None else (tuple(int(s) for s in a.shape), str(a.dtype))


def agree(c, what: str, meta, local_error: str | None = None):
    """Raise the same RuntimeError on every rank of ``c`` when any rank reports ``local_error`` or
    the ranks' ``meta`` differ. ``meta`` must be equal on every rank for the collective to be
    well formed."""
    gathered = c.allgather((meta, local_error))
    errors = [(r, e) for r, (_, e) in enumerate(gathered) if e]
    if errors:
        raise RuntimeError(f"{what}: " + "; ".join(f"rank {r}: {e}" for r, e in errors))
    metas = [m for m, _ in gathered]
    if any(m != metas[0] for m in metas[1:]):
        listing = "; ".join(f"rank {r}: {_fmt(m)}" for r, m in enumerate(metas))
        raise RuntimeError(f"{what}: the ranks disagree on the collective's arguments ({listing})")


def _fmt(meta):
    """'float32 [2, 3], sum' for the description of a collective's arguments."""
    if isinstance(meta, tuple) and len(meta) == 2 and isinstance(meta[1], str) and isinstance(meta[0], tuple) \
            and all(isinstance(s, int) for s in meta[0]):
        return f"{meta[1]} {list(meta[0])}"
    if isinstance(meta, tuple):
        return ", ".join(_fmt(m) for m in meta)
    return str(meta)


# MPI has no float16/bfloat16 sums and no arithmetic on C bools: those reduce in a wider type
def _wire(a):
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    if a.dtype.kind == "f" and a.dtype.itemsize < 4 or a.dtype.name == "bfloat16":
        return a.astype(np.float32)
    return np.asarray(a, order="C")  # (not ascontiguousarray: it makes a 0-d array 1-d)


def _mpi_op(op: str):
    MPI = mpi()
    return {"sum": MPI.SUM, "avg": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "product": MPI.PROD}[op]


def _check_avg(op, a):
    if op == "avg" and a.dtype.kind not in "fc":
        return f"ReduceOp.AVG needs a floating point tensor, got {a.dtype}"
    return None


def allreduce(a: np.ndarray, op: str, group: int = 0, what: str = "all_reduce") -> np.ndarray:
    """The elementwise reduction ``op`` of ``a`` over the ranks of ``group``, a new array."""
    c = comm(group)
    agree(c, what, (_describe(a), op), _check_avg(op, a))
    buf = _wire(a).copy()
    c.Allreduce(mpi().IN_PLACE, buf, op=_mpi_op(op))
    if op == "avg":
        buf /= c.Get_size()
    return buf.astype(a.dtype, copy=False)


def allreduce_into(buf: np.ndarray, op: str, group: int) -> None:
    """``allreduce`` in place on a contiguous array (the compiled programs' callback): MPI
    reduces ``buf`` itself unless its dtype travels widened (float16, bool), the same
    arithmetic as ``allreduce`` (AVG: the sum, then one division)."""
    wire = _wire(buf)
    if wire is not buf:
        buf[...] = allreduce(buf, op, group)
        return
    c = comm(group)
    agree(c, "all_reduce", (_describe(buf), op), _check_avg(op, buf))
    c.Allreduce(mpi().IN_PLACE, buf, op=_mpi_op(op))
    if op == "avg":
        buf /= c.Get_size()


def broadcast(a: np.ndarray, src: int, group: int = 0, what: str = "broadcast") -> np.ndarray:
    """Rank ``src``'s ``a`` (``src`` a rank of ``group``) on every rank, a new array."""
    c = comm(group)
    err = None if 0 <= src < c.Get_size() else f"src {src} is not a rank of a group of {c.Get_size()}"
    agree(c, what, (_describe(a), src), err)
    buf = _wire(a).copy()
    c.Bcast(buf, root=src)
    return buf.astype(a.dtype, copy=False)


def allgather(a: np.ndarray, group: int = 0, what: str = "all_gather") -> np.ndarray:
    """Every rank's ``a`` stacked on a new leading axis (rank order)."""
    c = comm(group)
    agree(c, what, _describe(a))
    src = _wire(a)
    out = np.empty((c.Get_size(),) + src.shape, src.dtype)
    c.Allgather(src, out)
    return out.astype(a.dtype, copy=False)


def reduce_scatter(a: np.ndarray, op: str, group: int = 0, what: str = "reduce_scatter_tensor") -> np.ndarray:
    """Reduce ``a`` (leading axis: one slice per rank) across ranks; this rank's slice of the result."""
    c = comm(group)
    n = c.Get_size()
    err = _check_avg(op, a) or (None if a.ndim and a.shape[0] == n else
                                f"input of shape {list(a.shape)} does not split into {n} equal parts")
    agree(c, what, (_describe(a), op), err)
    full = allreduce(a, op, group, what)  # (one extra check, no hand-rolled Reduce_scatter counts)
    return np.array(full[c.Get_rank()], order="C")


def gather(a: np.ndarray, dst: int, group: int = 0, what: str = "gather"):
    """Every rank's ``a`` stacked on rank ``dst``; None elsewhere."""
    c = comm(group)
    err = None if 0 <= dst < c.Get_size() else f"dst {dst} is not a rank of a group of {c.Get_size()}"
    agree(c, what, (_describe(a), dst), err)
    src = _wire(a)
    out = np.empty((c.Get_size(),) + src.shape, src.dtype) if c.Get_rank() == dst else None
    c.Gather(src, out, root=dst)
    return None if out is None else out.astype(a.dtype, copy=False)


def scatter(parts, like: np.ndarray, src: int, group: int = 0, what: str = "scatter", local_error=None):
    """Rank ``src`` sends ``parts[r]`` (stacked, leading axis = ranks) to rank r; returns this
    rank's part, shaped and typed like ``like``."""
    c = comm(group)
    err = local_error or (None if 0 <= src < c.Get_size() else f"src {src} is not a rank of a group of {c.Get_size()}")
    agree(c, what, (_describe(like), src), err)
    out = np.empty_like(_wire(like))
    c.Scatter(None if parts is None else _wire(parts), out, root=src)
    return out.astype(like.dtype, copy=False)


def barrier(group: int = 0) -> None:
    comm(group).Barrier()


def rank(group: int = 0) -> int:
    return comm(group).Get_rank()


def size(group: int = 0) -> int:
    return comm(group).Get_size()


def world_rank_of(group: int, group_rank: int) -> int:
    c = comm(group)
    return mpi().Group.Translate_ranks(c.Get_group(), [group_rank], comm(0).Get_group())[0]


def group_rank_of(group: int, world_rank: int) -> int:
    """The rank in ``group`` of world rank ``world_rank``; raises when it is not a member."""
    c = comm(group)
    r = mpi().Group.Translate_ranks(comm(0).Get_group(), [world_rank], c.Get_group())[0]
    if r < 0:
        raise ValueError(f"Global rank {world_rank} is not part of group")
    return r

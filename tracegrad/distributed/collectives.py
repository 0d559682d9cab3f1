"""Collectives on tensors with ``torch.distributed``'s signatures and in-place semantics.

Each one checks first that every rank of the group agrees on its arguments (shapes, dtypes,
root, reduction) and raises the same ``RuntimeError`` on every rank when they do not
(``_mpi.agree``), so a mistake is an error, never a hang or a wrong number. Results land in the
caller's tensors through ``copy_`` under ``no_grad``, which bumps their version counters as
PyTorch's collectives do.

``all_reduce`` and ``broadcast`` are primitives (``tracegrad/ops/collectives.py``): inside
``tg.compile`` they are recorded in the program and run in its native call. The others break the
graph with that reason (the function then runs eagerly; ``fullgraph=True`` raises).
"""
from __future__ import annotations

import enum

import numpy as np

from ..autograd.grad_mode import no_grad
from ..core import tracing
from ..core.tensor import Tensor
from ..ops.collectives import ALL_REDUCE, BROADCAST
from . import _mpi
from .process_group import ProcessGroup, get_group_rank, resolve


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and ``reduce_scatter_tensor`` combine the ranks' values."""

    SUM = "sum"
    AVG = "avg"  # (floating point tensors only)
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"

    def __repr__(self):
        return f"<ReduceOp.{self.name}>"


class Work:
    """The handle an ``async_op=True`` collective returns. tracegrad's collectives complete
    before they return, so ``wait()`` returns at once."""

    def __init__(self, tensors=()):
        self._tensors = list(tensors)

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def result(self) -> list:
        return self._tensors


def _done(async_op, *tensors):
    return Work(tensors) if async_op else None


def _op_name(op) -> str:
    if isinstance(op, ReduceOp):
        return op.value
    if isinstance(op, str) and op.lower() in _mpi.REDUCE_OPS:
        return op.lower()
    raise ValueError(f"unsupported reduce op {op!r}; tracegrad supports ReduceOp.SUM, AVG, PRODUCT, MIN, MAX")


def _check_tensor(t, what, arg="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: {arg} must be a tensor, got {type(t).__name__}")


def _not_traced(what):
    tracing.graph_break(f"tracegrad.distributed.{what} is not captured by tg.compile (only all_reduce "
                        "and broadcast are)")


def _lowering_when_traced() -> None:
    """Inside tg.compile: give the C backend its lowering of the collectives (_native.py) before
    the graph is built. (Not at import: the C backend loads on first use.)"""
    if tracing.current_tracer() is not None:
        from . import _native

        _native.register()


def _array(t) -> np.ndarray:
    return t.detach().numpy()


def _write(t: Tensor, value) -> None:
    with no_grad():
        t.copy_(value if isinstance(value, Tensor) else _from(value))


def _from(a: np.ndarray) -> Tensor:
    from ..core.creation import from_numpy

    return from_numpy(np.asarray(a, order="C"))


def _member(group: ProcessGroup | None) -> ProcessGroup | None:
    """The resolved group, or None on a rank outside it (PyTorch: the call does nothing there)."""
    g = resolve(group)
    return g if g.member else None


def _root(g: ProcessGroup, rank, group_rank, what, arg) -> int:
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{what}: pass {arg} or group_{arg}, not both")
        return int(group_rank)
    return get_group_rank(g, int(rank if rank is not None else 0))


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` across every rank of ``group``, in place on every rank.

    Example (2 ranks)::

        t = tg.tensor([1.0, 2.0]) * (dist.get_rank() + 1)
        dist.all_reduce(t)                        # t == [3., 6.] on both ranks
        dist.all_reduce(t, op=dist.ReduceOp.AVG)  # mean over ranks
    """
    _check_tensor(tensor, "all_reduce")
    g = _member(group)
    if g is not None:
        _lowering_when_traced()
        _write(tensor, ALL_REDUCE(tensor.detach(), reduction=_op_name(op), group=g.id))
    return _done(async_op, tensor)


def broadcast(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank of ``group`` (``src`` is a
    world rank; ``group_src`` a rank of ``group``).

    >>> # dist.broadcast(params, src=0)   # every rank now holds rank 0's values
    """
    _check_tensor(tensor, "broadcast")
    g = _member(group)
    if g is not None:
        root = _root(g, src, group_src, "broadcast", "src")
        _lowering_when_traced()
        _write(tensor, BROADCAST(tensor.detach(), src=root, group=g.id))
    return _done(async_op, tensor)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Fill ``tensor_list`` (one tensor per rank, each shaped like ``tensor``) with every rank's
    ``tensor``.

    >>> # out = [tg.empty(3) for _ in range(dist.get_world_size())]; dist.all_gather(out, t)
    """
    _check_tensor(tensor, "all_gather")
    _not_traced("all_gather")
    g = _member(group)
    if g is None:
        return _done(async_op)
    c, n = _mpi.comm(g.id), g.size()
    err = None
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != n:
        err = f"tensor_list must hold {n} tensors (one per rank), got {_len(tensor_list)}"
    else:
        for i, t in enumerate(tensor_list):
            if not isinstance(t, Tensor) or tuple(t.shape) != tuple(tensor.shape) or t.dtype != tensor.dtype:
                err = (f"tensor_list[{i}] must be a {tensor.dtype} tensor of shape {list(tensor.shape)} "
                       f"like the input, got {_desc(t)}")
                break
    _mpi.agree(c, "all_gather", None, err)
    stacked = _mpi.allgather(_array(tensor), g.id, "all_gather")
    for t, part in zip(tensor_list, stacked):
        _write(t, part)
    return _done(async_op, *tensor_list)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: ProcessGroup | None = None,
                           async_op: bool = False) -> Work | None:
    """Gather every rank's ``input_tensor`` into ``output_tensor``: concatenated on dim 0
    (shape ``(world_size * n, ...)``) or stacked (shape ``(world_size, n, ...)``)."""
    _check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    _check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    _not_traced("all_gather_into_tensor")
    g = _member(group)
    if g is None:
        return _done(async_op)
    n = g.size()
    err = _sized(output_tensor, input_tensor, n, "output_tensor", "input_tensor")
    _mpi.agree(_mpi.comm(g.id), "all_gather_into_tensor", None, err)
    stacked = _mpi.allgather(_array(input_tensor), g.id, "all_gather_into_tensor")
    _write(output_tensor, stacked.reshape(tuple(output_tensor.shape)))
    return _done(async_op, output_tensor)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,
                          group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduce ``input`` (``world_size`` parts along dim 0, or stacked) across ranks and leave part
    ``rank`` of the result in ``output``."""
    _check_tensor(output, "reduce_scatter_tensor", "output")
    _check_tensor(input, "reduce_scatter_tensor", "input")
    _not_traced("reduce_scatter_tensor")
    g = _member(group)
    if g is None:
        return _done(async_op)
    n = g.size()
    err = _sized(input, output, n, "input", "output")
    _mpi.agree(_mpi.comm(g.id), "reduce_scatter_tensor", None, err)
    parts = _array(input).reshape((n,) + tuple(output.shape))
    _write(output, _mpi.reduce_scatter(parts, _op_name(op), g.id))
    return _done(async_op, output)


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
           group: ProcessGroup | None = None, async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Collect every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (None elsewhere)."""
    _check_tensor(tensor, "gather")
    _not_traced("gather")
    g = _member(group)
    if g is None:
        return _done(async_op)
    root = _root(g, dst, group_dst, "gather", "dst")
    n, me = g.size(), g.rank()
    err = None
    if me == root:
        err = _list_error(gather_list, tensor, n, "gather_list")
    elif gather_list:
        err = "gather_list must be None on non-dst ranks"
    _mpi.agree(_mpi.comm(g.id), "gather", None, err)
    stacked = _mpi.gather(_array(tensor), root, g.id)
    if stacked is not None:
        for t, part in zip(gather_list, stacked):
            _write(t, part)
    return _done(async_op, *(gather_list or ()))


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
            group: ProcessGroup | None = None, async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Rank ``src`` sends ``scatter_list[r]`` to rank r, which receives it into ``tensor``."""
    _check_tensor(tensor, "scatter")
    _not_traced("scatter")
    g = _member(group)
    if g is None:
        return _done(async_op)
    root = _root(g, src, group_src, "scatter", "src")
    n, me = g.size(), g.rank()
    err = None
    parts = None
    if me == root:
        err = _list_error(scatter_list, tensor, n, "scatter_list")
        if err is None:
            parts = np.stack([_array(t) for t in scatter_list])
    elif scatter_list:
        err = "scatter_list must be None on non-src ranks"
    _write(tensor, _mpi.scatter(parts, _array(tensor), root, g.id, local_error=err))
    return _done(async_op, tensor)


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids=None) -> Work | None:
    """Wait until every rank of ``group`` has reached this call."""
    g = _member(group)
    if g is not None:
        _mpi.barrier(g.id)
    return _done(async_op)


def _len(x):
    try:
        return len(x)
    except TypeError:
        return type(x).__name__


def _desc(t):
    return f"a {t.dtype} tensor of shape {list(t.shape)}" if isinstance(t, Tensor) else type(t).__name__


def _list_error(lst, like, n, name):
    if not isinstance(lst, (list, tuple)) or len(lst) != n:
        return f"{name} must hold {n} tensors (one per rank) on the root, got {_len(lst)}"
    for i, t in enumerate(lst):
        if not isinstance(t, Tensor) or tuple(t.shape) != tuple(like.shape) or t.dtype != like.dtype:
            return f"{name}[{i}] must be a {like.dtype} tensor of shape {list(like.shape)}, got {_desc(t)}"
    return None


def _sized(big, small, n, big_name, small_name):
    """The error of a (big = world_size x small) pair, or None."""
    if big.dtype != small.dtype:
        return f"{big_name} is {big.dtype} but {small_name} is {small.dtype}"
    concat = (n * small.shape[0],) + tuple(small.shape[1:]) if small.ndim else (n,)
    stacked = (n,) + tuple(small.shape)
    if tuple(big.shape) not in (concat, stacked):
        return (f"{big_name} of shape {list(big.shape)} must be {list(concat)} or {list(stacked)} for "
                f"{small_name} of shape {list(small.shape)} over {n} ranks")
    return None

"""Index primitives (index, index_add, index_put, gather, scatter_add, argsort, nonzero) and the
public functions built on them: gather, scatter_add, index_select, index_add_, sort, topk,
argsort, nonzero. Advanced indexing (``t[int_tensor]``, ``t[mask]``, ``t[idx] = v``) lives in
``tracegrad._api.indexing`` and lowers to ``index`` / ``index_put``.

Index inputs of the primitives are int64 tensors and never receive gradients. ``index``,
``index_add`` and ``index_put`` work along one ``dim`` with an index tensor of any shape: the
index's dims replace ``dim`` (``np.take`` semantics; negative indices count from the end).

>>> import tracegrad as tg
>>> x = tg.tensor([[1., 2.], [3., 4.], [5., 6.]])
>>> x[tg.tensor([2, 0])]
tensor([[5., 6.],
        [1., 2.]])
>>> tg.sort(tg.tensor([3., 1., 2.]), descending=True).indices
tensor([0, 2, 1])
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core import creation
from ..core import dtypes as _dt
from ..core import tracing as trace
from ..core.tensor import Tensor
from . import helpers as H
from .movement import COPY, UNSLICE
from .registry import defop
from .shapes import wrap_dim

sort_result = namedtuple("sort", ["values", "indices"])
topk_result = namedtuple("topk", ["values", "indices"])


# ----------------------------------------------------------------------------- primitives
def _int_index(idx, what):
    if idx.dtype is not _dt.int64:
        raise RuntimeError(f"{what}(): Expected dtype int64 for index, got {idx.dtype}")


def _check_bounds(idx, size, dim, allow_negative=True, error=IndexError):
    """Raise PyTorch's error for the first index outside the dimension: IndexError for the
    ops behind ``x[idx]``, RuntimeError for gather and the scatters (``error``)."""
    if idx.size == 0:
        return
    low = -size if allow_negative else 0
    bad = idx[(idx < low) | (idx >= size)]
    if bad.size:
        raise error(f"index {int(bad.flat[0])} is out of bounds for dimension {dim} with size {size}")


# ----------------------------------------------------------------------------- check_index
# The public functions check their index inputs with PyTorch's own rule and message: which
# values are legal (index_select, embedding and class targets take no negative index, x[idx]
# does) and what the error says differ per function, so the check is an op of its own that a
# function puts in front of the primitive it calls. The primitives keep their own checks, the
# last line of defence for memory safety in C. Elementwise, so that a compiled program fuses
# it into the loop that reads the index and a failure sets the program's tg_fail flag
# (function.c.j2 returns right after that loop, before anything is written into a user's
# tensor: lower.py defers such writes past every kernel that may fail); the interpreter,
# re-run on the failed call's inputs, then raises the message below.
#   error -> (exception, message); {value} the first bad index, {pos} its flat position,
#   {size} the bound, {dim} the dimension
BOUNDS_ERRORS = {
    "select": (IndexError, "index out of range in self"),
    "dim": (IndexError, "index {value} is out of bounds for dimension {dim} with size {size}"),
    "dim_runtime": (RuntimeError, "index {value} is out of bounds for dimension {dim} with size {size}"),
    "index_copy": (IndexError, "index_copy_(): index {value} is out of bounds for dimension {dim} "
                               "with size {size}"),
    "target": (IndexError, "Target {value} is out of bounds."),
    "take": (IndexError, "out of range: tried to access index {value} on a tensor of {size} elements."),
    "bag": (RuntimeError, "Index {pos} of input takes value {value} which is not in the valid range "
                          "[0, {size})"),
    "one_hot": (RuntimeError, "Class values must be smaller than num_classes."),
}


def _check_index_impl(idx, low, high, dim, error):
    bad = np.flatnonzero((idx < low) | (idx >= high)) if idx.size else ()
    if len(bad):
        value = int(idx.flat[bad[0]])
        if error == "one_hot" and (idx < 0).any():  # (PyTorch checks the minimum first)
            raise RuntimeError("Class values must be non-negative.")
        exc, message = BOUNDS_ERRORS[error]
        raise exc(message.format(value=value, pos=int(bad[0]), size=high, dim=dim))
    return idx


def _infer_check_index(idx, low, high, dim, error):
    _int_index(idx, "check_index")
    if error not in BOUNDS_ERRORS:
        raise ValueError(f"check_index: unknown error kind {error!r}")
    return tuple(idx.shape), idx.dtype


_CHECK_C = "((({0} < {low}) | ({0} >= {high})) ? (tg_fail = TG_FAIL_INDEX, {0}) : {0})"

CHECK_INDEX = defop("check_index", infer=_infer_check_index, impl=_check_index_impl,
                    c=_CHECK_C, c_int=_CHECK_C, kind="elementwise", differentiable=False,
                    sample=lambda: [((("index", (4, 3), 5),), {"low": 0, "high": 5, "dim": 0,
                                                               "error": "select"}),
                                    ((("index", (6,), 3),), {"low": -3, "high": 3, "dim": 1,
                                                             "error": "dim"})])


def check_index(index, size, dim=0, error="dim", negative=False):
    """``index`` once every value is a valid index into a dimension of ``size`` (from
    ``-size`` when ``negative``), else PyTorch's error ``error`` (BOUNDS_ERRORS): eagerly at
    once, compiled when the program runs."""
    return CHECK_INDEX(index, low=-size if negative else 0, high=int(size), dim=int(dim), error=error)


def _taken_shape(x_shape, idx_shape, dim):
    return tuple(x_shape[:dim]) + tuple(idx_shape) + tuple(x_shape[dim + 1:])


def _infer_index(x, idx, dim):
    _int_index(idx, "index")
    wrap_dim(dim, len(x.shape))
    return _taken_shape(x.shape, idx.shape, dim), x.dtype


def _index_impl(x, idx, dim):
    _check_bounds(idx, x.shape[dim], dim)
    return np.take(x, idx, axis=dim)


def _zeros(shape, dtype):
    return creation.zeros(tuple(shape), dtype=dtype)


INDEX = defop("index", infer=_infer_index, impl=_index_impl, save=(1,), nondiff_inputs=(1,),
              kind="index",
              vjp=lambda ctx, g: (INDEX_ADD(_zeros(ctx.shapes[0], g.dtype), ctx.input(1), g,
                                            dim=ctx.dim), None),
              jvp=lambda ctx, t, _: INDEX(t, ctx.input(1), dim=ctx.dim),
              sample=lambda: [(("any", ("index", (5,), 3)), {"dim": 0}),
                              (("any", ("index", (2, 3), 4)), {"dim": 1})])


def _infer_scatter_along(what):
    def infer(x, idx, src, dim):
        _int_index(idx, what)
        wrap_dim(dim, len(x.shape))
        want = _taken_shape(x.shape, idx.shape, dim)
        if tuple(src.shape) != want:
            raise RuntimeError(f"{what}(): source has shape {list(src.shape)}, expected {list(want)} "
                               f"for self {list(x.shape)} and index {list(idx.shape)} at dim {dim}")
        if src.dtype is not x.dtype:
            raise TypeError(f"{what}(): self and source must have the same dtype, got "
                            f"{x.dtype} and {src.dtype}")
        return tuple(x.shape), x.dtype

    return infer


def _along(out, idx, src, dim):
    """``out`` viewed with ``dim`` first and ``src`` arranged to match ``idx.ravel()``."""
    k = idx.ndim
    outm = np.moveaxis(out, dim, 0)
    srcm = np.moveaxis(src, tuple(range(dim, dim + k)), tuple(range(k)))
    return outm, idx.ravel(), srcm.reshape((idx.size,) + outm.shape[1:])


def _index_add_impl(x, idx, src, dim):
    _check_bounds(idx, x.shape[dim], dim)
    out = np.array(x, copy=True)
    outm, flat, srcm = _along(out, idx, src, dim)
    np.add.at(outm, flat, srcm)
    return out


def _index_put_impl(x, idx, src, dim):
    _check_bounds(idx, x.shape[dim], dim)
    out = np.array(x, copy=True)
    outm, flat, srcm = _along(out, idx, src, dim)
    outm[flat] = srcm  # with repeated indices the last write wins (PyTorch leaves it undefined)
    return out


def _or_zeros(t, shape, dtype):
    return t if t is not None else _zeros(shape, dtype)


INDEX_ADD = defop(
    "index_add", infer=_infer_scatter_along("index_add"), impl=_index_add_impl, save=(1,),
    nondiff_inputs=(1,), kind="index",
    vjp=lambda ctx, g: (g, None, INDEX(g, ctx.input(1), dim=ctx.dim)
                        if ctx.needs_input_grad[2] else None),
    jvp=lambda ctx, tx, _, ts: INDEX_ADD(_or_zeros(tx, ctx.shapes[0], ctx.dtypes[0]), ctx.input(1),
                                         _or_zeros(ts, ctx.shapes[2], ctx.dtypes[2]), dim=ctx.dim),
    sample=lambda: [(("any", ("index", (5,), 3), ("any", (5, 4))), {"dim": 0}),
                    (("any", ("index", (2, 2), 4), ("any", (3, 2, 2))), {"dim": 1})])


def _index_put_vjp(ctx, g):
    idx = ctx.input(1)
    gx = gs = None
    if ctx.needs_input_grad[0]:
        gx = INDEX_PUT(g, idx, _zeros(ctx.shapes[2], g.dtype), dim=ctx.dim)
    if ctx.needs_input_grad[2]:
        gs = INDEX(g, idx, dim=ctx.dim)
    return gx, None, gs


INDEX_PUT = defop(
    "index_put", infer=_infer_scatter_along("index_put"), impl=_index_put_impl, save=(1,),
    nondiff_inputs=(1,), kind="index", vjp=_index_put_vjp,
    jvp=lambda ctx, tx, _, ts: INDEX_PUT(_or_zeros(tx, ctx.shapes[0], ctx.dtypes[0]), ctx.input(1),
                                         _or_zeros(ts, ctx.shapes[2], ctx.dtypes[2]), dim=ctx.dim),
    sample=lambda: [(("any", ("unique_index", (2,), 3), ("any", (2, 4))), {"dim": 0}),
                    (("any", ("unique_index", (2, 1), 4), ("any", (3, 2, 1))), {"dim": 1})])


def _check_gather_shapes(what, x, idx, dim, src=None):
    xs, ix = tuple(x.shape), tuple(idx.shape)
    if len(ix) != len(xs):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    wrap_dim(dim, len(xs))
    for d in range(len(xs)):
        if d != dim and ix[d] > xs[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(ix)} to "
                               f"be no larger than self {list(xs)} apart from dimension {dim}")
        if src is not None and ix[d] > src.shape[d]:
            raise RuntimeError(f"Expected index {list(ix)} to be no larger than self {list(xs)} apart "
                               f"from dimension {dim} and to be no larger size than src "
                               f"{list(src.shape)}")


def _infer_gather(x, idx, dim):
    _int_index(idx, "gather")
    _check_gather_shapes("gather", x, idx, dim)
    return tuple(idx.shape), x.dtype


def _grid(idx, dim):
    """Full index arrays addressing ``idx``'s positions, with ``idx`` itself along ``dim``."""
    grids = list(np.ix_(*[np.arange(s) for s in idx.shape])) if idx.ndim else []
    grids[dim] = idx
    return tuple(grids)


def _gather_impl(x, idx, dim):
    if x.ndim == 0:
        _check_bounds(idx, 1, 0, allow_negative=False, error=RuntimeError)
        return np.broadcast_to(x, idx.shape).copy()
    _check_bounds(idx, x.shape[dim], dim, allow_negative=False, error=RuntimeError)
    return x[_grid(idx, dim)]


def _infer_scatter(what):
    """The shape rule of the scatters (scatter_add here, scatter and scatter_reduce in
    ops/scatter.py): gather's geometry, ``src`` at least as large as ``index``."""
    def infer(x, idx, src, dim, **_):
        _int_index(idx, what)
        if src.dtype is not x.dtype:
            raise RuntimeError(f"{what}(): Expected self.dtype to be equal to src.dtype, got "
                               f"{x.dtype} and {src.dtype}")
        if len(src.shape) != len(idx.shape):
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        _check_gather_shapes(what, x, idx, dim, src)
        return tuple(x.shape), x.dtype

    return infer


def _scatter_add_impl(x, idx, src, dim):
    out = np.array(x, copy=True)
    if x.ndim == 0:
        _check_bounds(idx, 1, 0, allow_negative=False, error=RuntimeError)
        return out + src.sum() if idx.size else out
    _check_bounds(idx, x.shape[dim], dim, allow_negative=False, error=RuntimeError)
    np.add.at(out, _grid(idx, dim), src[tuple(slice(0, s) for s in idx.shape)])
    return out


def _pad_to(t, shape):
    """Zero-pad ``t`` at the end of each dim up to ``shape`` (src larger than index)."""
    if tuple(t.shape) == tuple(shape):
        return t
    return UNSLICE(t, shape=tuple(shape), index=tuple((0, s, 1) for s in t.shape))


GATHER = defop(
    "gather", infer=_infer_gather, impl=_gather_impl, save=(1,), nondiff_inputs=(1,), kind="index",
    version=2,  # 2: PyTorch's RuntimeError out of bounds
    vjp=lambda ctx, g: (SCATTER_ADD(_zeros(ctx.shapes[0], g.dtype), ctx.input(1), g, dim=ctx.dim),
                        None),
    jvp=lambda ctx, t, _: GATHER(t, ctx.input(1), dim=ctx.dim),
    sample=lambda: [(("any", ("index", (3, 4), 3)), {"dim": 0}),
                    (("any", ("index", (2, 6), 4)), {"dim": 1})])

SCATTER_ADD = defop(
    "scatter_add", infer=_infer_scatter("scatter_add"), impl=_scatter_add_impl, save=(1,), nondiff_inputs=(1,),
    kind="index", version=2,  # 2: PyTorch's RuntimeError out of bounds
    vjp=lambda ctx, g: (g, None, _pad_to(GATHER(g, ctx.input(1), dim=ctx.dim), ctx.shapes[2])
                        if ctx.needs_input_grad[2] else None),
    jvp=lambda ctx, tx, _, ts: SCATTER_ADD(_or_zeros(tx, ctx.shapes[0], ctx.dtypes[0]),
                                           ctx.input(1), _or_zeros(ts, ctx.shapes[2], ctx.dtypes[2]),
                                           dim=ctx.dim),
    sample=lambda: [(("any", ("index", (3, 4), 3), "any"), {"dim": 0}),
                    ((("any", (3, 5)), ("index", (2, 3), 5), ("any", (2, 3))), {"dim": 1})])


def _argsort_impl(x, dim, descending, stable):
    if x.ndim == 0:
        return np.zeros((), np.int64)
    if not descending:
        return np.argsort(x, axis=dim, kind="stable").astype(np.int64)
    # descending and stable: sort the reversed array ascending, reverse the order back, and
    # map positions of the reversed array to original ones (NaN counts as largest, like torch)
    n = x.shape[dim]
    rev = np.flip(np.argsort(np.flip(x, dim), axis=dim, kind="stable"), dim)
    return (n - 1 - rev).astype(np.int64)


ARGSORT = defop("argsort", infer=lambda x, dim, descending, stable: (tuple(x.shape), _dt.int64),
                impl=_argsort_impl, differentiable=False, kind="index",
                sample=lambda: [(("any",), {"dim": 1, "descending": False, "stable": True}),
                                (("any",), {"dim": 0, "descending": True, "stable": True})])


def _infer_nonzero(x):
    value = x._value if hasattr(x, "_value") else None
    if hasattr(value, "to_host"):  # a cuda tensor: its count is read on the host (as PyTorch syncs)
        value = value.to_host()
    if not isinstance(value, np.ndarray):
        raise RuntimeError("nonzero: the output shape depends on the data; it cannot be traced")
    return (int(np.count_nonzero(value)), value.ndim), _dt.int64


NONZERO = defop("nonzero", infer=_infer_nonzero,
                impl=lambda x: np.argwhere(x).astype(np.int64).reshape(-1, x.ndim),
                differentiable=False, kind="index", sample=lambda: [(("bool",), {})])


# ----------------------------------------------------------------------------- public functions
def _as_index(index, what):
    """An int64 index tensor from a Tensor / list / ndarray; int32 is accepted and widened."""
    if not isinstance(index, Tensor):
        index = H.to_tensor(index) if not isinstance(index, (list, tuple)) or index else \
            H.to_tensor(np.zeros(0, np.int64))
    if index.dtype is _dt.int32:
        index = H.cast(index, _dt.int64)
    if index.dtype is not _dt.int64:
        raise RuntimeError(f"{what}(): Expected dtype int32/int64 for index, got {index.dtype}")
    return index


def gather(x, dim, index, *, sparse_grad=False):
    """``out[i][j] = x[index[i][j]][j]`` for dim 0 (PyTorch's gather).

    >>> import tracegrad as tg
    >>> tg.gather(tg.tensor([[1, 2], [3, 4]]), 1, tg.tensor([[0, 0], [1, 0]]))
    tensor([[1, 1],
            [4, 3]])
    """
    index = _as_index(index, "gather")
    # (wrap_dim checks dim on a 0-d tensor too, as PyTorch: its dims are 0 and -1)
    return GATHER(x, index, dim=wrap_dim(dim, x.ndim))


def scatter_add(x, dim, index, src):
    """Out of place ``x.scatter_add_(dim, index, src)``: ``out[index[i][j]][j] += src[i][j]``."""
    index = _as_index(index, "scatter_add")
    src = H.to_tensor(src, x.dtype)
    return SCATTER_ADD(x, index, src, dim=wrap_dim(dim, x.ndim))


def _vector_index(index, what):
    index = _as_index(index, what)
    if index.ndim > 1:
        raise IndexError(f"{what}(): Index is supposed to be a vector, but got dim: {index.ndim} "
                         f"and size: {list(index.shape)}")
    return index.reshape(-1) if index.ndim == 0 else index


def index_select(x, dim, index):
    """The slices of ``x`` along ``dim`` at ``index`` (a vector), in that order."""
    index = _vector_index(index, "index_select")
    d = wrap_dim(dim, x.ndim)
    index = check_index(index, x.shape[d] if x.ndim else 1, d, "select")  # (no negative index)
    if x.ndim == 0:
        return INDEX(x.reshape(1), index, dim=0).reshape(())
    return INDEX(x, index, dim=d)


def index_add(x, dim, index, source, *, alpha=1):
    """Out of place ``index_add_``: ``out[index[i]] += alpha * source[i]`` along ``dim``."""
    index = _vector_index(index, "index_add_")
    d = wrap_dim(dim, x.ndim)
    source = H.to_tensor(source, x.dtype)
    if alpha != 1:
        source = H.mul(source, alpha)
    n = source.shape[d] if source.ndim else 1
    if index.shape[0] != n:
        raise IndexError(f"index_add_(): Number of indices ({index.shape[0]}) should be equal to "
                         f"source.size(dim): ({n}), for dim: {d}")
    # (PyTorch's RuntimeError, no negative index: the primitive takes them, for x[idx]'s gradient)
    index = check_index(index, x.shape[d] if x.ndim else 1, d, "dim_runtime")
    want = tuple(x.shape[:d]) + (n,) + tuple(x.shape[d + 1:])
    if (tuple(source.shape) != want) if x.ndim else source.ndim:  # (a 0-d x takes a 0-d source)
        raise RuntimeError(f"source tensor shape must match self tensor shape, "
                           f"excluding the specified dimension. Got self.shape = {list(x.shape)} "
                           f"source.shape = {list(source.shape)}")
    if x.ndim == 0:
        return INDEX_ADD(x.reshape(1), index, source.reshape(1), dim=0).reshape(())
    return INDEX_ADD(x, index, source, dim=d)


def index_add_(x, dim, index, source, *, alpha=1):
    """In place ``index_add``; bumps ``x._version`` and rebases its autograd history."""
    # (in the function: core.views stands on this module's floor, so a module-level import
    # would lift ops.index, and everything above it, one floor; see tests/import_graph.py)
    from ..core.views import _inplace_source, assign

    src = _inplace_source(x, source)
    return assign(x, index_add(src, dim, index, source, alpha=alpha))


def scatter_add_(x, dim, index, src):
    # (in the function: core.views stands on this module's floor, so a module-level import
    # would lift ops.index, and everything above it, one floor; see tests/import_graph.py)
    from ..core.views import _inplace_source, assign

    base = _inplace_source(x, src)
    return assign(x, scatter_add(base, dim, index, src))


def argsort(x, dim=-1, descending=False, stable=False):
    """Indices that sort ``x`` along ``dim``. Ties keep their order (stable) in every mode."""
    return ARGSORT(x, dim=wrap_dim(dim, x.ndim), descending=bool(descending),
                   stable=bool(stable))


def sort(x, dim=-1, descending=False, stable=False):
    """``(values, indices)`` sorted along ``dim``; gradients flow to ``x`` through the values.

    >>> import tracegrad as tg
    >>> tg.sort(tg.tensor([[2., 1., 3.]])).values
    tensor([[1., 2., 3.]])
    """
    idx = argsort(x, dim, descending, stable)
    d = wrap_dim(dim, x.ndim)
    return sort_result(GATHER(x, idx, dim=d), idx)


def topk(x, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (or smallest) elements along ``dim`` as ``(values, indices)``."""
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    idx = argsort(x, d, descending=largest, stable=True)
    idx = H.narrow(idx, d, 0, k) if x.ndim else idx
    idx = _copy(idx)  # a tensor of its own, not a view into the full argsort
    return topk_result(GATHER(x, idx, dim=d), idx)


def _copy(t):
    return COPY(t)


def nonzero(x, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) tensor, or one vector per dim.
    The shape depends on the data, so tracing breaks the graph here."""
    trace.graph_break("nonzero / boolean mask indexing (the output shape depends on the data)")
    if not isinstance(x, Tensor):
        raise TypeError(f"nonzero(): argument 'input' must be Tensor, not {type(x).__name__}")
    out = NONZERO(x if x.ndim else x.reshape(1))
    if not as_tuple:
        return out if x.ndim else out[:, :0]
    if x.ndim == 0:
        return (out[:, 0],)
    return tuple(_copy(out[:, i]) for i in range(x.ndim))


def argwhere(x):
    return nonzero(x)

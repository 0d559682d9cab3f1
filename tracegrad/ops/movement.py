"""Movement primitives: reshape, permute, expand, slice (and its transpose unslice), flip,
cat, copy. In eager mode reshape/permute/expand/slice return NumPy views, which is what makes
tensor views share storage.
"""
from __future__ import annotations

import numpy as np

from ..core import creation
from .registry import defop
from .shapes import numel


def _infer_reshape(x, shape):
    if numel(shape) != numel(x.shape):
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel(x.shape)}")
    return tuple(shape), x.dtype


# (the impls call the ndarray methods that np.reshape / np.transpose forward to, without
# NumPy's Python-level wrapper)
RESHAPE = defop("reshape", infer=_infer_reshape, impl=lambda x, shape: x.reshape(shape),
                save=(), kind="movement",
                vjp=lambda ctx, g: (g.reshape(ctx.shapes[0]),),
                jvp=lambda ctx, t: t.reshape(ctx.shape),
                sample=lambda: [(("any",), {"shape": (4, 3)})])


def _infer_permute(x, dims):
    if sorted(dims) != list(range(len(x.shape))):
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {len(x.shape)} is "
            f"not equal to len(dims) = {len(dims)}" if len(dims) != len(x.shape)
            else f"permute(): dims {list(dims)} must be a permutation of 0..{len(x.shape) - 1}"
        )
    return tuple(x.shape[d] for d in dims), x.dtype


def _inverse(dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


PERMUTE = defop("permute", infer=_infer_permute, impl=lambda x, dims: x.transpose(dims),
                save=(), kind="movement",
                vjp=lambda ctx, g: (g.permute(_inverse(ctx.dims)),),
                jvp=lambda ctx, t: t.permute(ctx.dims),
                sample=lambda: [(("any",), {"dims": (1, 0)})])


def _infer_expand(x, shape):
    xs = tuple(x.shape)
    if len(shape) < len(xs):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(shape)}) must be greater or equal to the "
            f"number of dimensions in the tensor ({len(xs)})"
        )
    lead = len(shape) - len(xs)
    for i, s in enumerate(xs):
        if s != 1 and s != shape[lead + i]:
            raise RuntimeError(
                f"The expanded size of the tensor ({shape[lead + i]}) must match the existing size "
                f"({s}) at non-singleton dimension {lead + i}.  Target sizes: {list(shape)}.  "
                f"Tensor sizes: {list(xs)}"
            )
    return tuple(shape), x.dtype


EXPAND = defop("expand", infer=_infer_expand, impl=lambda x, shape: np.broadcast_to(x, shape),
               save=(), kind="movement",
               vjp=lambda ctx, g: (g,),  # fix_grad sums back to the input shape
               jvp=lambda ctx, t: t.expand(ctx.shape),
               sample=lambda: [((("any", (1, 4)),), {"shape": (3, 4)})])


def _slices(index):
    return tuple(slice(a, b, c) for a, b, c in index)


def _sliced_len(start, stop, step):
    return max(0, (stop - start + step - 1) // step)


def _infer_slice(x, index):
    if len(index) != len(x.shape):
        raise RuntimeError(f"slice expects one (start, stop, step) per dim, got {len(index)} "
                           f"for shape {list(x.shape)}")
    return tuple(_sliced_len(*ix) for ix in index), x.dtype


SLICE = defop("slice", infer=_infer_slice, impl=lambda x, index: x[_slices(index)], save=(),
              kind="movement",
              vjp=lambda ctx, g: (_unslice(g, ctx.shapes[0], ctx.index),),
              jvp=lambda ctx, t: _slice(t, ctx.index),
              sample=lambda: [(("any",), {"index": ((1, 3, 1), (0, 4, 2))})])


def _unslice_impl(g, shape, index):
    out = np.zeros(shape, dtype=g.dtype)
    out[_slices(index)] = g
    return out


UNSLICE = defop("unslice", infer=lambda g, shape, index: (tuple(shape), g.dtype),
                impl=_unslice_impl, save=(), kind="movement",
                vjp=lambda ctx, g: (_slice(g, ctx.index),),
                jvp=lambda ctx, t: _unslice(t, ctx.shape, ctx.index),
                sample=lambda: [((("any", (2, 2)),), {"shape": (3, 4), "index": ((1, 3, 1), (0, 4, 2))})])


def _slice(x, index):
    return SLICE(x, index=tuple(index))


def _unslice(g, shape, index):
    return UNSLICE(g, shape=tuple(shape), index=tuple(index))


FLIP = defop("flip", infer=lambda x, dims: (tuple(x.shape), x.dtype),
             impl=lambda x, dims: np.flip(x, dims).copy(), save=(), kind="movement",
             vjp=lambda ctx, g: (g.flip(ctx.dims),), jvp=lambda ctx, t: t.flip(ctx.dims),
             sample=lambda: [(("any",), {"dims": (0,)})])


def _infer_cat(*xs, dim):
    if not xs:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    ref = tuple(xs[0].shape)
    for i, x in enumerate(xs):
        s = tuple(x.shape)
        if x.dtype is not xs[0].dtype:
            raise TypeError(f"cat primitive expects equal dtypes, got {xs[0].dtype} and {x.dtype}")
        if len(s) != len(ref) or any(a != b for j, (a, b) in enumerate(zip(s, ref)) if j != dim):
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {dim}. Expected size "
                f"{list(ref)} but got size {list(s)} for tensor number {i} in the list."
            )
    out = list(ref)
    out[dim] = sum(x.shape[dim] for x in xs)
    return tuple(out), xs[0].dtype


def _cat_vjp(ctx, g):
    grads, start = [], 0
    for shape in ctx.shapes:
        stop = start + shape[ctx.dim]
        index = [(0, s, 1) for s in g.shape]
        index[ctx.dim] = (start, stop, 1)
        grads.append(_slice(g, index))
        start = stop
    return tuple(grads)


def _cat_jvp(ctx, *ts):
    parts = [t if t is not None else creation.zeros(s, dtype=d)
             for t, s, d in zip(ts, ctx.shapes, ctx.dtypes)]
    return CAT(*parts, dim=ctx.dim)


CAT = defop("cat", infer=_infer_cat, impl=lambda *xs, dim: np.concatenate(xs, axis=dim), save=(),
            kind="movement", vjp=_cat_vjp, jvp=_cat_jvp,
            sample=lambda: [(("any", ("any", (2, 4))), {"dim": 0})])

# ``order``: "K" keeps the source's memory order (clone preserves strides, as PyTorch's), "C" is
# what contiguous() promises; only eager calls pass it (a traced contiguous() is the identity).
COPY = defop("copy", infer=lambda x, order="K": (tuple(x.shape), x.dtype),
             impl=lambda x, order="K": np.array(x, copy=True, order=order),
             save=(), kind="elementwise", vjp=lambda ctx, g: (g,), jvp=lambda ctx, t: t, c="{0}",
             sample=lambda: [(("any",), {})])

"""Matrix product primitive. ``matmul`` here takes operands with at least two dims and
broadcasts the batch dims; 1-D operands are handled in ``tracegrad.functional.matmul`` by
unsqueeze/squeeze, so this one rule serves mm, bmm, matmul and ``@``.
"""
from __future__ import annotations

import numpy as np

from .registry import defop
from .shapes import broadcast_shapes


def _infer_matmul(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sa) < 2 or len(sb) < 2:
        raise RuntimeError(f"matmul primitive needs 2-D or batched operands, got {list(sa)} and {list(sb)}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype.name} != {b.dtype.name}")
    if sa[-1] != sb[-2]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, sa[-2:]))} and "
            f"{'x'.join(map(str, sb[-2:]))}); operands have shapes {list(sa)} and {list(sb)}"
        )
    try:
        batch = broadcast_shapes(sa[:-2], sb[:-2])
    except RuntimeError:
        raise RuntimeError(
            f"matmul: batch dimensions of {list(sa)} and {list(sb)} cannot be broadcast"
        ) from None
    return batch + (sa[-2], sb[-1]), a.dtype


def _mT(x):
    n = x.ndim
    return x.permute(tuple(range(n - 2)) + (n - 1, n - 2))


def _matmul_vjp(ctx, g):
    a, b = ctx.input(0), ctx.input(1)
    ga = MATMUL(g, _mT(b)) if ctx.needs_input_grad[0] else None
    gb = MATMUL(_mT(a), g) if ctx.needs_input_grad[1] else None
    return ga, gb


def _matmul_jvp(ctx, ta, tb):
    a, b = ctx.input(0), ctx.input(1)
    res = None if ta is None else MATMUL(ta, b)
    if tb is not None:
        part = MATMUL(a, tb)
        res = part if res is None else res + part
    return res


MATMUL = defop("matmul", infer=_infer_matmul, impl=np.matmul, save=(0, 1), kind="linalg",
               vjp=_matmul_vjp, jvp=_matmul_jvp,
               sample=lambda: [((("any", (3, 4)), ("any", (4, 5))), {}),
                               ((("any", (2, 3, 4)), ("any", (1, 4, 2))), {})])

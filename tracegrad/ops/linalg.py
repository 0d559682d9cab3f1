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


# ----------------------------------------------------------------------------- inverse, det, solve
# Batched over leading dims (NumPy's LAPACK stacks). Their rules are written with these ops, so
# they differentiate again. No C lowering: a compiled program holding one runs on the
# interpreter, with the warning compiler._build gives.
def _square(name, x):
    s = tuple(x.shape)
    if len(s) < 2 or s[-1] != s[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are "
                           f"{' by '.join(map(str, s[-2:])) or 'a scalar'} matrices")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{name}: Expected a floating point tensor as input. Got {x.dtype.name}")
    return s


def _lapack(name, fn):
    def impl(*arrays, **attrs):
        try:
            return fn(*arrays, **attrs)
        except np.linalg.LinAlgError:
            raise RuntimeError(f"linalg.{name}: The input matrix is singular, so it has no inverse "
                               "(or the system has no unique solution)") from None

    return impl


def _well_conditioned(shape=(3, 3)):
    return ("well_conditioned", shape)


def _inv_vjp(ctx, g):
    out_t = _mT(ctx.out)
    return (-MATMUL(MATMUL(out_t, g), out_t),)


INV = defop("linalg_inv", infer=lambda a: (_square("inv", a), a.dtype), impl=_lapack("inv", np.linalg.inv),
            save=("out",), kind="linalg", vjp=_inv_vjp,
            jvp=lambda ctx, t: -MATMUL(MATMUL(ctx.out, t), ctx.out),
            sample=lambda: [((_well_conditioned(),), {}), ((_well_conditioned((2, 4, 4)),), {})])


def _det_vjp(ctx, g):
    scale = (g * ctx.out).reshape(tuple(g.shape) + (1, 1))
    return (scale * _mT(INV(ctx.input(0))),)


def _det_jvp(ctx, t):
    return ctx.out * (_mT(INV(ctx.input(0))) * t).sum((-2, -1))


DET = defop("linalg_det", infer=lambda a: (_square("det", a)[:-2], a.dtype), impl=np.linalg.det,
            save=(0, "out"), kind="linalg", vjp=_det_vjp, jvp=_det_jvp,
            sample=lambda: [((_well_conditioned(),), {}), ((_well_conditioned((2, 3, 3)),), {})])


def _infer_solve(a, b):
    n = _square("solve", a)[-1]
    sb = tuple(b.shape)
    if len(sb) < 2 or sb[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({'x'.join(map(str, a.shape[-2:]))} and {'x'.join(map(str, sb[-2:]))})")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {a.dtype.name} and B of type {b.dtype.name} instead")
    return broadcast_shapes(tuple(a.shape)[:-2], sb[:-2]) + sb[-2:], a.dtype


def _solve_vjp(ctx, g):
    gb = SOLVE(_mT(ctx.input(0)), g)
    ga = -MATMUL(gb, _mT(ctx.out)) if ctx.needs_input_grad[0] else None
    return ga, gb


def _solve_jvp(ctx, ta, tb):
    rhs = tb
    if ta is not None:
        part = -MATMUL(ta, ctx.out)
        rhs = part if rhs is None else rhs + part
    return SOLVE(ctx.input(0), rhs)


SOLVE = defop("linalg_solve", infer=_infer_solve, impl=_lapack("solve", np.linalg.solve),
              save=(0, "out"), kind="linalg", vjp=_solve_vjp, jvp=_solve_jvp,
              sample=lambda: [((_well_conditioned(), ("any", (3, 2))), {}),
                              ((_well_conditioned((2, 3, 3)), ("any", (1, 3, 4))), {})])

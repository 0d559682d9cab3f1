"""C kernels of the LU, determinant and LDL^T primitives (ops/lu.py, ops/determinant.py,
ops/ldl.py): one call of a runtime function (compiler/backends/c/templates/factorizations.h.j2) per matrix
of the batch. A kernel returns a failure code (runtime.h.j2 TG_FAIL_*) where the interpreter
must raise PyTorch's error (a singular matrix for ``lu_factor``, a pivot out of range)."""
from __future__ import annotations

from ....ops import determinant as DET
from ....ops import ldl as LDL
from ....ops import lu as LU
from .kernels import _block, _loops, _matrix_loops, _prod, _ptr, _raw
from .lower import ctype_of
from .rules import RULES
from .views import View


def _batch_loops(batch, operands):
    """Loops over ``batch`` (the leading dims every operand shares, no broadcasting) and each
    operand's C pointer expression there: operands are (contiguous view, elements per item)."""
    loops = [(f"b{i}", s) for i, s in enumerate(batch)]
    flat = "(" + (" + ".join(f"b{i}*{_prod(batch[i + 1:])}" for i in range(len(batch))) or "0") + ")"
    return loops, [f"{_ptr(view)} + {flat}*{elems}" for view, elems in operands]


def _work_view(buffer, count):
    return View(buffer.name, 0, (max(count, 1),), (1,))


def _matrix_start(lw, n):
    """What the one-input kernels share: (the input's contiguous view, the output view, the
    input's batch dims, its matrices' (rows, cols), C type), or None when the output is empty
    (nothing to run)."""
    x = n.inputs[0]
    xv, ov = lw.contiguous(x), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return None
    return xv, ov, tuple(x.shape[:-2]), tuple(x.shape[-2:]), ctype_of(x.dtype)


@RULES.kernel(LU.LU_FACTOR)
def linalg_lu_factor(lw, n):
    start = _matrix_start(lw, n)
    if start is None:
        return
    xv, ov, batch, (rows, cols), ct = start
    loops, (src, dst) = _batch_loops(batch, [(xv, rows * cols), (ov, (rows + 1) * cols)])
    call = f"tg_lu_factor_{ct}({rows}, {cols}, {src}, {dst})"
    body = [f"if ({call} && {int(bool(n.attrs['check']))}) return TG_FAIL_MATRIX;"]
    _raw(lw, _block(_loops(loops, body)), [xv, ov], "linalg_lu_factor")


@RULES.kernel(LU.LU_PERMUTATION)
def lu_permutation(lw, n):
    pivots = n.inputs[0]
    pv, ov = lw.contiguous(pivots), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    k, m = pivots.shape[-1], n.attrs["m"]
    loops, (src, dst) = _batch_loops(tuple(pivots.shape[:-1]), [(pv, k), (ov, m)])
    body = [f"if (!tg_lu_permutation({k}, {m}, {src}, {dst})) return TG_FAIL_INDEX;"]
    _raw(lw, _block(_loops(loops, body)), [pv, ov], "lu_permutation")


@RULES.kernel(DET.SLOGDET)
def linalg_slogdet(lw, n):
    start = _matrix_start(lw, n)
    if start is None:
        return
    xv, ov, batch, (_, size), ct = start
    lu = lw._work(ct, max(size * size, 1), n.inputs[0].dtype.itemsize)
    perm = lw._work("int64_t", max(size, 1), 8)
    loops, (src, dst) = _batch_loops(batch, [(xv, size * size), (ov, 2)])
    body = [f"tg_slogdet_{ct}({size}, {src}, {dst}, {lu.name}, {perm.name});"]
    _raw(lw, _block(_loops(loops, body)), [xv, ov, _work_view(lu, size * size), _work_view(perm, size)],
         "linalg_slogdet")


@RULES.kernel(DET.COFACTOR)
def linalg_cofactor(lw, n):
    start = _matrix_start(lw, n)
    if start is None:
        return
    xv, ov, batch, (_, size), ct = start
    count = 3 * size * size + 2 * size
    work = lw._work("double", count, 8)
    perm = lw._work("int64_t", size, 8)
    loops, (src, dst) = _batch_loops(batch, [(xv, size * size), (ov, size * size)])
    body = [f"tg_cofactor_{ct}({size}, {src}, {dst}, {work.name}, {perm.name});"]
    _raw(lw, _block(_loops(loops, body)), [xv, ov, _work_view(work, count), _work_view(perm, size)],
         "linalg_cofactor")


@RULES.kernel(LDL.LDL_FACTOR)
def linalg_ldl_factor(lw, n):
    start = _matrix_start(lw, n)
    if start is None:
        return
    xv, ov, batch, (_, size), ct = start
    loops, (src, dst) = _batch_loops(batch, [(xv, size * size), (ov, (size + 1) * size)])
    _raw(lw, _block(_loops(loops, [f"tg_ldl_factor_{ct}({size}, {src}, {dst});"])), [xv, ov],
         "linalg_ldl_factor")


@RULES.kernel(LDL.LDL_SOLVE)
def linalg_ldl_solve(lw, n):
    """Per matrix of the broadcast batch (TG_FAIL_PIVOTS when the pivots are not ldl_factor's)."""
    ld, pivots, b = n.inputs
    views = [lw.contiguous(v) for v in n.inputs]
    ov = lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    size, cols, ct = b.shape[-2], b.shape[-1], ctype_of(b.dtype)
    loops, (lsrc, psrc, bsrc, dst) = _matrix_loops(n, [(views[0], ld.shape[:-2], size * size),
                                                       (views[1], pivots.shape[:-1], size),
                                                       (views[2], b.shape[:-2], size * cols),
                                                       (ov, n.out.shape[:-2], size * cols)])
    call = f"tg_ldl_solve_{ct}_{ctype_of(pivots.dtype)[:-2]}({size}, {cols}, {lsrc}, {psrc}, {bsrc}, {dst})"
    _raw(lw, _block(_loops(loops, [f"if (!{call}) return TG_FAIL_PIVOTS;"])), [*views, ov], "linalg_ldl_solve")

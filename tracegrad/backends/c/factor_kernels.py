"""C kernels of the LU and determinant primitives (ops/lu.py, ops/determinant.py): one call of
a runtime function (codegen_templates/factorizations.h.j2) per matrix of the batch. A kernel
returns 1 where the interpreter must raise PyTorch's error (a singular matrix for
``lu_factor``, a pivot out of range)."""
from __future__ import annotations

from .kernels import _block, _loops, _prod, _ptr, _raw
from .lower import ctype_of
from .views import View


def _batch_loops(batch, operands):
    """Loops over ``batch`` (the leading dims every operand shares, no broadcasting) and each
    operand's C pointer expression there: operands are (contiguous view, elements per item)."""
    loops = [(f"b{i}", s) for i, s in enumerate(batch)]
    flat = "(" + (" + ".join(f"b{i}*{_prod(batch[i + 1:])}" for i in range(len(batch))) or "0") + ")"
    return loops, [f"{_ptr(view)} + {flat}*{elems}" for view, elems in operands]


def _work_view(buffer, count):
    return View(buffer.name, 0, (max(count, 1),), (1,))


def linalg_lu_factor(lw, n):
    x = n.inputs[0]
    xv, ov = lw.contiguous(x), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    rows, cols = x.shape[-2:]
    ct = ctype_of(x.dtype)
    loops, (src, dst) = _batch_loops(tuple(x.shape[:-2]), [(xv, rows * cols), (ov, (rows + 1) * cols)])
    call = f"tg_lu_factor_{ct}({rows}, {cols}, {src}, {dst})"
    body = [f"if ({call} && {int(bool(n.attrs['check']))}) return 1;"]
    _raw(lw, _block(_loops(loops, body)), [xv, ov], "linalg_lu_factor")


def lu_permutation(lw, n):
    pivots = n.inputs[0]
    pv, ov = lw.contiguous(pivots), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    k, m = pivots.shape[-1], n.attrs["m"]
    loops, (src, dst) = _batch_loops(tuple(pivots.shape[:-1]), [(pv, k), (ov, m)])
    body = [f"if (!tg_lu_permutation({k}, {m}, {src}, {dst})) return 1;"]
    _raw(lw, _block(_loops(loops, body)), [pv, ov], "lu_permutation")


def linalg_slogdet(lw, n):
    x = n.inputs[0]
    xv, ov = lw.contiguous(x), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    size, ct = x.shape[-1], ctype_of(x.dtype)
    lu = lw._work(ct, max(size * size, 1), x.dtype.itemsize)
    perm = lw._work("int64_t", max(size, 1), 8)
    loops, (src, dst) = _batch_loops(tuple(x.shape[:-2]), [(xv, size * size), (ov, 2)])
    body = [f"tg_slogdet_{ct}({size}, {src}, {dst}, {lu.name}, {perm.name});"]
    _raw(lw, _block(_loops(loops, body)), [xv, ov, _work_view(lu, size * size), _work_view(perm, size)],
         "linalg_slogdet")


def linalg_cofactor(lw, n):
    x = n.inputs[0]
    xv, ov = lw.contiguous(x), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    size, ct = x.shape[-1], ctype_of(x.dtype)
    count = 3 * size * size + 2 * size
    work = lw._work("double", count, 8)
    perm = lw._work("int64_t", size, 8)
    loops, (src, dst) = _batch_loops(tuple(x.shape[:-2]), [(xv, size * size), (ov, size * size)])
    body = [f"tg_cofactor_{ct}({size}, {src}, {dst}, {work.name}, {perm.name});"]
    _raw(lw, _block(_loops(loops, body)), [xv, ov, _work_view(work, count), _work_view(perm, size)],
         "linalg_cofactor")

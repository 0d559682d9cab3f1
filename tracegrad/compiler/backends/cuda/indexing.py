"""CUDA kernels of the index ops: gather, index (``x[idx]``), check_index, the scatters
(scatter_add, scatter, scatter_reduce, index_add, index_put); and the two movement ops that
write into slices of their result: unslice (a slice's gradient) and cat.

An index read from device memory is checked before it is used, as the C backend's: one out of
range sets the launcher's failure flag (``Lowerer.fail_flag``) and reads or writes nothing, and
the caller then raises PyTorch's error (``CudaExecutable``). No kernel here reads or writes
memory through an unchecked index.

The scatters are deterministic without atomics: one thread per position of the index with the
scattered dim left out, each walking that dim in order. Two threads never share a target
element (they differ in a dim other than ``dim``, which the target is indexed by directly), and
each element sees its updates in the order the C backend (and NumPy) applies them.
"""
from __future__ import annotations

import numpy as np

from ....ops import index as I
from ....ops import movement as MV
from ....ops import scatter as SC
from ..c.kernels import _SCATTERS as C_SCATTERS  # the update statements: one place for both
from ..c.lower import literal_c
from .lower import BLOCK, MAX_GRID, index_expr, unravel
from .rules import RULES, Unsupported


def _grid_stride(total, body):
    """A grid-stride loop over ``total`` positions ``i`` running ``body`` (lines), with its grid."""
    lines = [f"for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < {total}; "
             "i += (int64_t)gridDim.x * blockDim.x) {", *["  " + b for b in body], "}"]
    return "\n".join(lines), f"dim3({min((total + BLOCK - 1) // BLOCK, MAX_GRID)})"


def _target(view, names, dim, index_var):
    """``view``'s element offset at the index variables ``names`` with ``dim`` read from
    ``index_var`` (a 0-dim target has one element)."""
    if not view.shape:
        return str(view.offset)
    return index_expr(view, [index_var if d == dim else v for d, v in enumerate(names)])


@RULES.kernel(I.GATHER)
def gather(lw, n):
    x, idx = n.inputs[0], n.inputs[1]
    dim = n.attrs["dim"]
    total = int(np.prod(idx.shape, dtype=np.int64))
    xv, iv = lw.resolve(x), lw.resolve(idx)
    ov = lw.output_view(n.out)  # contiguous, of the index's shape: element i
    if total == 0:
        return
    flag = lw.fail_flag()
    size = x.shape[dim] if x.shape else 1
    lines, names = unravel("i", idx.shape, "p")
    body = [*lines,
            f"const int64_t t = {iv.buf}[{index_expr(iv, names)}];",
            f"if (t < 0 || t >= {size}) {{ {flag}[0] = 1; continue; }}",
            f"{ov.buf}[i] = {xv.buf}[{_target(xv, names, dim, 't')}];"]
    source, grid = _grid_stride(total, body)
    lw.kernel(source, [xv.buf, iv.buf, ov.buf, flag], grid, f"dim3({BLOCK})")


@RULES.kernel(I.SCATTER_ADD, SC.SCATTER, SC.SCATTER_REDUCE)
def scatter(lw, n):
    x, idx, src = n.inputs
    dim = n.attrs["dim"]
    key = n.attrs["reduce"] if n.op is SC.SCATTER_REDUCE else n.op
    if key not in C_SCATTERS:
        raise Unsupported(n.op.name, f"reduce={key!r} is not in the CUDA backend yet")
    ov = lw.output_view(n.out)
    lw.copy(lw.resolve(x), ov, x.dtype)
    iv, sv = lw.resolve(idx), lw.resolve(src)  # (src may be larger than the index: read by its strides)
    ishape = tuple(idx.shape)
    total = int(np.prod(ishape, dtype=np.int64))
    if total == 0:
        return
    flag = lw.fail_flag()
    size = x.shape[dim] if x.shape else 1
    # a thread per position of the other dims (``i`` over them), walking ``dim`` in order
    others = [e for d, e in enumerate(ishape) if d != dim]
    lines, onames = unravel("i", others, "q")
    names = list(onames)
    if ishape:
        names.insert(dim, "k")
    update = C_SCATTERS[key].format(t=f"{ov.buf}[{_target(ov, names, dim, 't')}]",
                                    v=f"{sv.buf}[{index_expr(sv, names)}]", ct=n.out.dtype.c_type)
    walk = [f"const int64_t t = {iv.buf}[{index_expr(iv, names)}];",
            f"if (t < 0 || t >= {size}) {{ {flag}[0] = 1; continue; }}",
            update]
    if ishape:
        walk = [f"for (int64_t k = 0; k < {ishape[dim]}; k++) {{", *["  " + w for w in walk], "}"]
    source, grid = _grid_stride(total // (ishape[dim] if ishape else 1), [*lines, *walk])
    lw.kernel(source, [iv.buf, sv.buf, ov.buf, flag], grid, f"dim3({BLOCK})")


@RULES.kernel(MV.UNSLICE)
def unslice(lw, n):
    ov = lw.output_view(n.out)
    ct = n.out.dtype.c_type
    lw._emit_elementwise(ov.shape, [], [("t0", ct, literal_c(0, n.out.dtype))], [(ov, "t0")])
    lw.copy(lw.resolve(n.inputs[0]), ov.slice(n.attrs["index"]), n.out.dtype)


@RULES.kernel(I.CHECK_INDEX)
def check_index(lw, n):
    """The index, copied, with every value checked against [low, high) (ops/index.py): a
    kernel of its own rather than a fused expression, since it sets the failure flag, which
    only kernels are handed."""
    idx = n.inputs[0]
    total = int(np.prod(idx.shape, dtype=np.int64))
    iv = lw.resolve(idx)
    ov = lw.output_view(n.out)
    if total == 0:
        return
    flag = lw.fail_flag()
    lines, names = unravel("i", idx.shape, "p")
    low, high = int(n.attrs["low"]), int(n.attrs["high"])
    body = [*lines, f"const int64_t t = {iv.buf}[{index_expr(iv, names)}];",
            f"if (t < {low} || t >= {high}) {flag}[0] = 1;",
            f"{ov.buf}[i] = t;"]
    source, grid = _grid_stride(total, body)
    lw.kernel(source, [iv.buf, ov.buf, flag], grid, f"dim3({BLOCK})")


def _along(x, dim, idx):
    """(outer, size, inner, m): ``x`` as (outer, size, inner) around ``dim``, and the
    number of indices ``m`` (the index is flat, negative values count from the end)."""
    prod = lambda s: int(np.prod(s, dtype=np.int64))
    return prod(x.shape[:dim]), x.shape[dim], prod(x.shape[dim + 1:]), prod(idx.shape)


@RULES.kernel(I.INDEX)
def index(lw, n):
    x, idx = n.inputs
    outer, size, inner, m = _along(x, n.attrs["dim"], idx)
    xv, iv = lw.contiguous(x), lw.contiguous(idx)
    ov = lw.output_view(n.out)  # contiguous (outer, m, inner)
    if outer * m * inner == 0:
        return
    flag = lw.fail_flag()
    body = [f"const int64_t o = i / {m * inner}, j = (i / {inner}) % {m}, e = i % {inner};",
            f"int64_t t = {iv.buf}[{iv.offset} + j];",
            f"if (t < -{size} || t >= {size}) {{ {flag}[0] = 1; continue; }}",
            f"if (t < 0) t += {size};",
            f"{ov.buf}[i] = {xv.buf}[{xv.offset} + (o*{size} + t)*{inner} + e];"]
    source, grid = _grid_stride(outer * m * inner, body)
    lw.kernel(source, [xv.buf, iv.buf, ov.buf, flag], grid, f"dim3({BLOCK})")


@RULES.kernel(I.INDEX_ADD, I.INDEX_PUT)
def index_add(lw, n):
    """A thread per (outer, inner) position walking the indices in order: repeated indices
    add (or overwrite) in the C backend's order, and no two threads share an element."""
    x, idx, src = n.inputs
    outer, size, inner, m = _along(x, n.attrs["dim"], idx)
    ov = lw.output_view(n.out)
    lw.copy(lw.resolve(x), ov, x.dtype)
    iv, sv = lw.contiguous(idx), lw.contiguous(src)
    if outer * m * inner == 0:
        return
    flag = lw.fail_flag()
    op = "+=" if n.op is I.INDEX_ADD else "="
    body = [f"const int64_t o = i / {inner}, e = i % {inner};",
            f"for (int64_t j = 0; j < {m}; j++) {{",
            f"  int64_t t = {iv.buf}[{iv.offset} + j];",
            f"  if (t < -{size} || t >= {size}) {{ {flag}[0] = 1; break; }}",
            f"  if (t < 0) t += {size};",
            f"  {ov.buf}[(o*{size} + t)*{inner} + e] {op} {sv.buf}[{sv.offset} + (o*{m} + j)*{inner} + e];",
            "}"]
    source, grid = _grid_stride(outer * inner, body)
    lw.kernel(source, [iv.buf, sv.buf, ov.buf, flag], grid, f"dim3({BLOCK})")


@RULES.kernel(MV.CAT)
def cat(lw, n):
    """Each input copied into its slice of the result (a strided copy each)."""
    dim = n.attrs["dim"]
    ov = lw.output_view(n.out)
    start = 0
    for x in n.inputs:
        index = [(0, s, 1) for s in n.out.shape]
        index[dim] = (start, start + x.shape[dim], 1)
        lw.copy(lw.resolve(x), ov.slice(index), n.out.dtype)
        start += x.shape[dim]

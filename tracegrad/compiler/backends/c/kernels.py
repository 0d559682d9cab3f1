"""Kernels that are not loop nests: matmul (BLAS or loops), arg-reductions, index, nn and
concatenation primitives, each registered as its op's C rule (rules.RULES, by the OpDef).
Each function takes the Lowerer and the node, resolves operand views, allocates the result and
appends a kernel; on bad indices a kernel returns 1 (the executable then re-runs the graph in
the interpreter, which raises PyTorch's error).
"""
from __future__ import annotations

import numpy as np

from ....ops import decompositions as D
from ....ops import deferred
from ....ops import scan as S
from ....ops import determinant as DET
from ....ops import index as I
from ....ops import linalg as LA
from ....ops import movement as MV
from ....ops import nn as NN
from ....ops import reduce as R
from ....ops import scatter as SC
from .lower import BLAS_SERIAL_WORK, ctype_of, literal_c
from .rules import RULES, Unsupported
from .views import View, contiguous_strides


def _ptr(view):
    return f"({view.buf} + {view.offset})" if view.offset else view.buf


def _prod(shape):
    return int(np.prod(shape, dtype=np.int64))


def _raw(lw, code, views, comment=""):
    lw.emit({"kind": "raw", "code": code, "comment": comment}, views)


def _loops(vars_extents, body, indent="    ", parallel=None):
    """Nested C for-loops around ``body`` (a list of lines); ``parallel``, a pragma line
    (Lowerer.parallel_for), goes before the outermost."""
    lines = [indent + parallel] if parallel else []
    for depth, (v, e) in enumerate(vars_extents):
        lines.append(f"{indent}{'  ' * depth}for (int64_t {v} = 0; {v} < {e}; {v}++) {{")
    pad = indent + "  " * len(vars_extents)
    lines += [pad + b for b in body]
    for depth in reversed(range(len(vars_extents))):
        lines.append(f"{indent}{'  ' * depth}}}")
    return lines


def _block(lines):
    return "  {\n" + "\n".join(lines) + "\n  }"


def _idx(terms):
    parts = [f"{v}*{s}" if s != 1 else v for v, s in terms if s != 0]
    return " + ".join(parts) or "0"


# ----------------------------------------------------------------------------- matmul
def _merged_row_stride(view, nbatch):
    """The one stride that walks the rows of every item of ``view`` (batch dims, then rows,
    then columns) in order, so that the batch and row dims read as one dim of rows; None when
    the layout has no such stride. Dims of extent 1 do not count."""
    dims = [(e, st) for e, st in zip(view.shape[:nbatch + 1], view.strides[:nbatch + 1]) if e != 1]
    if not dims:
        return view.strides[nbatch]
    for (_, outer), (extent, inner) in zip(dims, dims[1:]):
        if outer != extent * inner:
            return None
    return dims[-1][1]


@RULES.kernel(LA.MATMUL)
def matmul(lw, n):
    a, b = n.inputs
    out = n.out
    M, K = a.shape[-2:]
    N = b.shape[-1]
    batch = out.shape[:-2]
    av = lw.resolve(a).broadcast_to(batch + (M, K))
    bv = lw.resolve(b).broadcast_to(batch + (K, N))
    nd = len(out.shape)
    swap = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    users = lw.consumers.get(id(out), [])
    if (users and all(u.op is MV.PERMUTE and tuple(u.attrs["dims"]) == swap for u in users)
            and all(v is not out for v in lw.out_values)):
        # only read transposed (a weight gradient feeding an update of W[out, in]): compute
        # out^T = b^T a^T so that readers walk it contiguously; straight into the output slot
        # when that transpose is returned (the ``.grad`` of W: no copy out at the end)
        returned = [u.out for u in users if any(u.out is v for v in lw.out_values)]
        store = lw._alloc(returned[0]) if returned else lw._alloc_work_for_shape(batch + (N, M), out.dtype)
        lw.views[id(out)] = store.permute(swap)
        av, bv, ov = bv.permute(swap), av.permute(swap), store
        M, N = N, M
    else:
        ov = lw.output_view(out)
        if batch and not any(bv.strides[:-2]) and _prod(batch) > 1:
            # one matrix B for every item (x @ W.T on a (B, T, C) input, a Linear's input
            # gradient): the items' rows are the rows of one product, one GEMM of B*T rows
            # instead of B small calls, when A walks them with one stride (after one copy for
            # small products, where the calls' overhead outweighs it)
            rs = _merged_row_stride(av, len(batch))
            if rs is None and M * N * K < BLAS_SERIAL_WORK and _prod(a.shape[:-2]) == _prod(batch):
                av = lw.contiguous(a).broadcast_to(batch + (M, K))
                rs = _merged_row_stride(av, len(batch))
            if rs is not None:
                rows = _prod(batch) * M
                av = View(av.buf, av.offset, (rows, K), (rs, av.strides[-1]))
                bv = View(bv.buf, bv.offset, (K, N), bv.strides[-2:])
                ov = View(ov.buf, ov.offset, (rows, N), (N, 1))
                M, batch = rows, ()
    ct = ctype_of(out.dtype)
    bvars = [(f"b{d}", e) for d, e in enumerate(batch)]
    a_off = " + ".join([str(av.offset)] + [f"{v}*{s}" for (v, _), s in zip(bvars, av.strides[:-2]) if s])
    b_off = " + ".join([str(bv.offset)] + [f"{v}*{s}" for (v, _), s in zip(bvars, bv.strides[:-2]) if s])
    o_off = " + ".join(["0"] + [f"{v}*{s}" for (v, _), s in zip(bvars, ov.strides[:-2]) if s])
    ars, acs = av.strides[-2:]
    brs, bcs = bv.strides[-2:]
    if ct in ("float", "double"):
        body = [f"tg_gemm_{ct}({M}, {N}, {K}, {av.buf} + {a_off}, {ars}, {acs}, "
                f"{bv.buf} + {b_off}, {brs}, {bcs}, {ov.buf} + {o_off});"]
    else:  # integer and bool products: plain loops (NumPy semantics: bool is logical or/and)
        acc = "int64_t"
        upd = "acc = acc || (A[i*%d + k*%d] && B[k*%d + j*%d]);" if out.dtype.short == "b8" else \
              "acc += (int64_t)A[i*%d + k*%d] * (int64_t)B[k*%d + j*%d];"
        body = [f"const {ct} *A = {av.buf} + {a_off}; const {ct} *B = {bv.buf} + {b_off}; "
                f"{ct} *C = {ov.buf} + {o_off};",
                f"for (int64_t i = 0; i < {M}; i++) for (int64_t j = 0; j < {N}; j++) {{",
                f"  {acc} acc = 0;",
                f"  for (int64_t k = 0; k < {K}; k++) " + upd % (ars, acs, brs, bcs),
                f"  C[i*{N} + j] = ({ct})acc;", "}"]
    # products small enough for one BLAS thread each (a convolution's, one per sample) run
    # side by side on OpenMP's threads; larger ones use BLAS's own
    batches = _prod(batch)
    small = M * N * K < BLAS_SERIAL_WORK
    parallel = lw.parallel_for(batches * M * N * K, batches) if small else None
    if (small and batches > 1 and ct in ("float", "double") and not parallel
            and batches * M * N * K >= BLAS_SERIAL_WORK and not lw.options.get("one_blas_thread")):
        # a batch of small products worth BLAS's threads together (attention's, per batch item
        # and head, in a program whose large products use BLAS's threads): one batched call
        # that shares the items out over them (gemm.h.j2: TG_GEMM_BATCH), not a loop of calls
        # on one core; the operands' batch strides go as arrays, so any view is read in place
        arrays = ", ".join(f"tg_{name}[] = {{{', '.join(str(x) for x in values)}}}" for name, values in
                           (("bd", batch), ("sa", av.strides[:-2]), ("sb", bv.strides[:-2]),
                            ("sc", ov.strides[:-2])))
        call = (f"tg_gemm_{ct}_batch({len(batch)}, tg_bd, tg_sa, tg_sb, tg_sc, {M}, {N}, {K}, "
                f"{av.buf} + {av.offset}, {ars}, {acs}, {bv.buf} + {bv.offset}, {brs}, {bcs}, {ov.buf} + {ov.offset});")
        _raw(lw, _block([f"    const int64_t {arrays};", f"    {call}"]), [av, bv, ov], "matmul")
        return
    if parallel and len(bvars) > 1:
        parallel += f" collapse({len(bvars)})"
    lines = _loops(bvars, body, parallel=parallel)
    if small and batches > 1 and ct in ("float", "double"):
        # a batch of small products (attention's, per batch item and head): BLAS goes to one
        # thread once around the whole loop, for every thread when OpenMP shares the items out,
        # instead of a switch of its thread count before and after each product
        scope = "_all" if parallel else ""
        lines = ([f"    const int tg_prev = tg_blas_one_thread{scope}();"]
                 + [ln.replace(f"tg_gemm_{ct}(", f"tg_gemm_{ct}_serial(") for ln in lines]
                 + [f"    tg_blas_threads_restore{scope}(tg_prev);"])
    _raw(lw, _block(lines), [av, bv, ov], "matmul")


# ----------------------------------------------------------------------------- argmax / argmin
@RULES.kernel(R.ARGMAX, R.ARGMIN)
def arg_reduce(lw, n):
    x = n.inputs[0]
    dim = n.attrs["dim"]
    xv = lw.contiguous(x)
    ov = lw.output_view(n.out)
    shape = x.shape
    if dim is None:
        outer, size, inner = 1, _prod(shape), 1
    else:
        outer, size, inner = _prod(shape[:dim]), shape[dim], _prod(shape[dim + 1:])
    cmp = ">" if n.op is R.ARGMAX else "<"
    ct = ctype_of(x.dtype)
    if x.ndim == 0:
        _raw(lw, f"  {ov.buf}[0] = 0;", [xv, ov], n.op.name)
        return
    if inner == 1:
        body = [f"const {ct} *p = {_ptr(xv)} + o*{size};",
                f"{ct} best = p[0]; int64_t bi = 0;",
                f"for (int64_t k = 1; k < {size}; k++) {{",
                "  if (best != best) break;",
                f"  const {ct} v = p[k];",
                f"  if (v != v || v {cmp} best) {{ best = v; bi = k; }}",
                "}",
                f"{ov.buf}[o] = bi;"]
        _raw(lw, _block(_loops([("o", outer)], body)), [xv, ov], n.op.name)
        return
    # Reducing a dim with others inside it (max-pooling's window, a column argmax): walk the
    # reduced dim outside and the contiguous inner dim inside, keeping each position's best so
    # far in the workspace, so that the inner loop is a vectorizable select instead of a
    # strided scalar search per output (measured: a CNN step's pooling argmax 8 -> 1 cycle an
    # element). The same rule: the first NaN wins, else the first strict extremum.
    best = lw._work(ct, inner, x.dtype.itemsize)
    bv = View(best.name, 0, (inner,), (1,))
    body = [f"const {ct} *p = {_ptr(xv)} + o*{size * inner}; int64_t *r = {ov.buf} + o*{inner};",
            "#pragma omp simd",
            f"for (int64_t i = 0; i < {inner}; i++) {{ {best.name}[i] = p[i]; r[i] = 0; }}",
            f"for (int64_t k = 1; k < {size}; k++) {{",
            "  #pragma omp simd",
            f"  for (int64_t i = 0; i < {inner}; i++) {{",
            f"    const {ct} v = p[k*{inner} + i], b = {best.name}[i];",
            f"    const int take = (b == b) & ((v != v) | (v {cmp} b));",
            f"    {best.name}[i] = take ? v : b;",
            "    r[i] = take ? k : r[i];",
            "  }",
            "}"]
    _raw(lw, _block(_loops([("o", outer)], body)), [xv, ov, bv], n.op.name)


# ----------------------------------------------------------------------------- index family
def _check_index(idx_ptr, m, size, allow_negative=True):
    low = f"-{size}" if allow_negative else "0"
    return [f"for (int64_t j = 0; j < {m}; j++) {{",
            f"  const int64_t t = {idx_ptr}[j];",
            f"  if (t < {low} || t >= {size}) return TG_FAIL_INDEX;",
            "}"]


@RULES.kernel(I.INDEX)
def index(lw, n):
    x, idx = n.inputs
    dim = n.attrs["dim"]
    xv, iv = lw.contiguous(x), lw.contiguous(idx)
    ov = lw.output_view(n.out)
    outer, size, inner = _prod(x.shape[:dim]), x.shape[dim], _prod(x.shape[dim + 1:])
    m = _prod(idx.shape)
    body = _check_index(_ptr(iv), m, size) + _loops(
        [("o", outer), ("j", m)],
        [f"int64_t t = {_ptr(iv)}[j]; if (t < 0) t += {size};",
         f"for (int64_t i = 0; i < {inner}; i++) "
         f"{ov.buf}[(o*{m} + j)*{inner} + i] = {_ptr(xv)}[(o*{size} + t)*{inner} + i];"], "")
    _raw(lw, _block(body), [xv, iv, ov], "index")


def _scatter_along(lw, n, op):
    x, idx, src = n.inputs
    dim = n.attrs["dim"]
    ov = lw.output_view(n.out)
    lw._emit_copy(x, ov)
    iv, sv = lw.contiguous(idx), lw.contiguous(src)
    outer, size, inner = _prod(x.shape[:dim]), x.shape[dim], _prod(x.shape[dim + 1:])
    m = _prod(idx.shape)
    body = _check_index(_ptr(iv), m, size) + _loops(
        [("o", outer), ("j", m)],
        [f"int64_t t = {_ptr(iv)}[j]; if (t < 0) t += {size};",
         f"for (int64_t i = 0; i < {inner}; i++) "
         f"{ov.buf}[(o*{size} + t)*{inner} + i] {op} {_ptr(sv)}[(o*{m} + j)*{inner} + i];"], "")
    _raw(lw, _block(body), [iv, sv, ov], n.op.name)


@RULES.kernel(I.INDEX_ADD)
def index_add(lw, n):
    _scatter_along(lw, n, "+=")


@RULES.kernel(I.INDEX_PUT)
def index_put(lw, n):
    _scatter_along(lw, n, "=")


# scatters: the C statement combining the target element ``t`` with the source element ``v``
# (NaN propagates through the extremes: once ``t`` is NaN no comparison replaces it)
_SCATTERS = {  # (by the reduce attribute of scatter_reduce, else the op)
    I.SCATTER_ADD: "{t} += {v};",
    SC.SCATTER: "{t} = {v};",
    "prod": "{t} *= {v};",
    "amax": "{{ const {ct} v = {v}; if (v != v || v > {t}) {t} = v; }}",
    "amin": "{{ const {ct} v = {v}; if (v != v || v < {t}) {t} = v; }}",
}


def _gather_like(lw, n, scatter):
    x, idx = n.inputs[0], n.inputs[1]
    dim = n.attrs["dim"]
    iv = lw.contiguous(idx)
    ishape = idx.shape
    vars_ = [(f"p{d}", e) for d, e in enumerate(ishape)]
    iflat = _idx(zip([v for v, _ in vars_], contiguous_strides(ishape)))
    if scatter:
        ov = lw.output_view(n.out)
        lw._emit_copy(x, ov)
        sv = lw.contiguous(n.inputs[2])
        target, tstrides = ov, contiguous_strides(x.shape)
        src_idx = _idx(zip([v for v, _ in vars_], contiguous_strides(n.inputs[2].shape)))
        views = [iv, sv, ov]
    else:
        xv = lw.contiguous(x)
        ov = lw.output_view(n.out)
        target, tstrides = xv, contiguous_strides(x.shape)
        views = [xv, iv, ov]
    size = x.shape[dim] if x.ndim else 1
    terms = [(v, s) for d, ((v, _), s) in enumerate(zip(vars_, tstrides)) if d != dim]
    rest = _idx(terms)
    tstride = tstrides[dim] if x.ndim else 0
    body = [f"const int64_t t = {_ptr(iv)}[{iflat}];",
            f"if (t < 0 || t >= {size}) return TG_FAIL_INDEX;"]
    where = f"{rest} + t*{tstride}" if x.ndim else "0"
    if scatter:
        update = _SCATTERS[n.attrs["reduce"] if n.op is SC.SCATTER_REDUCE else n.op]
        body.append(update.format(t=f"{_ptr(target)}[{where}]", v=f"{_ptr(sv)}[{src_idx}]",
                                  ct=ctype_of(x.dtype)))
    else:
        body.append(f"{ov.buf}[{iflat}] = {_ptr(target)}[{where}];")
    _raw(lw, _block(_loops(vars_, body)), views, n.op.name)


@RULES.kernel(I.GATHER)
def gather(lw, n):
    _gather_like(lw, n, scatter=False)


@RULES.kernel(I.SCATTER_ADD, SC.SCATTER, SC.SCATTER_REDUCE)
def scatter_add(lw, n):
    _gather_like(lw, n, scatter=True)




@RULES.kernel(deferred.BACKWARD_ERROR)
def backward_error(lw, n):
    """Zeros (ops/deferred.py: program.CompiledBackward raises the recorded error before a
    backward that needs this gradient runs)."""
    lw._emit_fill(lw.output_view(n.out), literal_c(0, n.out.dtype))


@RULES.kernel(I.ARGSORT)
def argsort(lw, n):
    x = n.inputs[0]
    dim, desc = n.attrs["dim"], bool(n.attrs["descending"])
    xv = lw.contiguous(x)
    ov = lw.output_view(n.out)
    if x.ndim == 0:
        _raw(lw, f"  {ov.buf}[0] = 0;", [xv, ov], "argsort")
        return
    outer, size, inner = _prod(x.shape[:dim]), x.shape[dim], _prod(x.shape[dim + 1:])
    tmp = lw._work("int64_t", 2 * max(size, 1), 8)
    tv = View(tmp.name, 0, (2 * size,), (1,))
    body = [f"tg_argsort_{ctype_of(x.dtype)}({_ptr(xv)} + o*{size * inner} + i, {size}, {inner}, "
            f"{ov.buf} + o*{size * inner} + i, {inner}, {int(desc)}, {tmp.name});"]
    _raw(lw, _block(_loops([("o", outer), ("i", inner)], body)), [xv, ov, tv], "argsort")


# scans: (the accumulator's start, the C statement folding one input ``v`` into ``acc``).
# NaN propagates through the extremes: once ``acc`` is NaN no comparison replaces it.
_SCANS = {
    S.CUMSUM: ("0", "acc += v;"),
    S.CUMPROD: ("1", "acc *= v;"),
    S.CUMMAX: (None, "acc = (v != v || v >= acc) ? v : acc;"),
    S.CUMMIN: (None, "acc = (v != v || v <= acc) ? v : acc;"),
    # log(exp(acc) + exp(v)) from the larger of the two; -inf and +inf are their own results
    S.LOGCUMSUMEXP: ("-INFINITY", "{ const double hi = acc > v ? acc : v, lo = acc > v ? v : acc; "
                                  "acc = isinf(hi) ? hi : hi + log1p(exp(lo - hi)); }"),
}


@RULES.kernel(S.CUMSUM, S.CUMPROD, S.CUMMAX, S.CUMMIN, S.LOGCUMSUMEXP)
def scan(lw, n):
    """Running sums, products, extremes and log-sum-exps along ``dim``, in sequence like
    NumPy's, accumulated in double for floats (int64 for integer sums and products; the
    extremes in the input's type), as PyTorch's CPU kernels do: the scanned dim outside, the
    contiguous dims after it inside, each row's accumulators kept in a workspace row (one
    vectorized update per row). The extremes start from the first element."""
    x = n.inputs[0]
    dim = n.attrs["dim"]
    start, update = _SCANS[n.op]
    xv = lw.contiguous(x)
    ov = lw.output_view(n.out)
    outer, size, inner = _prod(x.shape[:dim]), x.shape[dim], _prod(x.shape[dim + 1:])
    if outer * size * inner == 0:
        return
    ct = ctype_of(n.out.dtype)
    acc = ct if start is None else "double" if n.out.dtype.is_floating_point else "int64_t"
    run = lw._work(acc, inner, 8)
    first = "p[i]" if start is None else start
    body = [f"const {ctype_of(x.dtype)} *p = {_ptr(xv)} + o*{size * inner}; "
            f"{ct} *r = {ov.buf} + o*{size * inner};",
            "#pragma omp simd",
            f"for (int64_t i = 0; i < {inner}; i++) {run.name}[i] = {first};",
            f"for (int64_t k = 0; k < {size}; k++) {{",
            "  #pragma omp simd",
            f"  for (int64_t i = 0; i < {inner}; i++) {{",
            f"    {acc} acc = {run.name}[i]; const {acc} v = ({acc})p[k*{inner} + i];",
            f"    {update}",
            f"    {run.name}[i] = acc; r[k*{inner} + i] = ({ct})acc;",
            "  }",
            "}"]
    _raw(lw, _block(_loops([("o", outer)], body)), [xv, ov, View(run.name, 0, (inner,), (1,))], n.op.name)




# ----------------------------------------------------------------------------- movement kernels
@RULES.kernel(MV.CAT)
def cat(lw, n):
    dim = n.attrs["dim"]
    ov = lw.output_view(n.out)
    start = 0
    for x in n.inputs:
        stop = start + x.shape[dim]
        index = [(0, s, 1) for s in n.out.shape]
        index[dim] = (start, stop, 1)
        lw._emit_copy(x, ov.slice(index))
        start = stop


@RULES.kernel(MV.UNSLICE)
def unslice(lw, n):
    ov = lw.output_view(n.out)
    lw._emit_fill(ov, literal_c(0, n.out.dtype))
    lw._emit_copy(n.inputs[0], ov.slice(n.attrs["index"]))


# ----------------------------------------------------------------------------- nn
def _window_rows(x_shape, a, cols_shape):
    """im2col by rows: loops over (n, c, kernel row i, kernel col j, out row y), and per row
    the column offset ``col``, the pixel ``pix`` of out col z = 0 (``pix + z*sw``, row clamped
    into the image) and the out cols ``[zlo, zhi)`` that read inside the image (an empty range
    where the row is in the padding). Splitting each row at its edges instead of testing every
    pixel leaves a plain strided loop, which vectorizes. Timed alone in C on the Zen 4, the fold
    of a 3x3 convolution's columns (64 x 16 x 9 x 196): 1.5-2.0 -> 0.55-0.8 M cycles; inside a
    small CNN's step the unfold went 1.28 -> 0.94 M cycles, while the fold stays bound by
    reading columns that the product before it left in memory."""
    from ....ops.nn import _geometry

    (kh, kw), (sh, sw), ((pt, _pb), (pl, _pr)), (dh, dw) = a["kernel"], a["stride"], a["padding"], a["dilation"]
    N, C, H, W = x_shape
    L = cols_shape[2]
    oh, ow = _geometry(H, W, a["kernel"], a["stride"], a["padding"], a["dilation"])
    loops = [("n", N), ("c", C), ("i", kh), ("j", kw), ("y", oh)]
    pre = [f"const int64_t h = y*{sh} - {pt} + i*{dh}, w0 = j*{dw} - {pl};  /* pixel of z = 0 */",
           f"const int64_t col = ((n*{C} + c)*{kh * kw} + i*{kw} + j)*{L} + y*{ow};",
           f"const int64_t pix = ((n*{C} + c)*{H} + (h >= 0 && h < {H} ? h : 0))*{W} + w0;",
           f"const int64_t first = w0 >= 0 ? 0 : (-w0 + {sw - 1}) / {sw};  /* w >= 0 from here */",
           f"const int64_t end = {W} - w0 <= 0 ? 0 : ({W} - w0 + {sw - 1}) / {sw};  /* w < {W} below */",
           f"const int64_t zlo = h >= 0 && h < {H} && first < {ow} ? first : {ow};",
           f"const int64_t zhi = end < zlo ? zlo : (end > {ow} ? {ow} : end);"]
    return loops, pre, ow, sw


@RULES.kernel(NN.UNFOLD2D)
def unfold2d(lw, n):
    x = n.inputs[0]
    a = n.attrs
    xv = lw.contiguous(x)
    ov = lw.output_view(n.out)
    loops, pre, ow, sw = _window_rows(x.shape, a, n.out.shape)
    pad = literal_c(a.get("pad_value", 0.0), x.dtype)
    body = pre + [f"for (int64_t z = 0; z < zlo; z++) {ov.buf}[col + z] = {pad};",
                  "#pragma omp simd",
                  f"for (int64_t z = zlo; z < zhi; z++) {ov.buf}[col + z] = {_ptr(xv)}[pix + z*{sw}];",
                  f"for (int64_t z = zhi; z < {ow}; z++) {ov.buf}[col + z] = {pad};"]
    parallel = lw.parallel_for(_prod(n.out.shape), loops[0][1])  # an image per iteration
    _raw(lw, _block(_loops(loops, body, parallel=parallel)), [xv, ov], "unfold2d")


@RULES.kernel(NN.FOLD2D)
def fold2d(lw, n):
    cols = n.inputs[0]
    a = n.attrs
    cv = lw.contiguous(cols)
    ov = lw.output_view(n.out)
    lw._emit_fill(ov, literal_c(0, n.out.dtype))
    loops, pre, _ow, sw = _window_rows(n.out.shape, a, cols.shape)
    # the pixels of one row are distinct, so its adds are independent
    body = pre + ["#pragma omp simd",
                  f"for (int64_t z = zlo; z < zhi; z++) {ov.buf}[pix + z*{sw}] += {_ptr(cv)}[col + z];"]
    parallel = lw.parallel_for(_prod(cols.shape), loops[0][1])  # an image per iteration
    _raw(lw, _block(_loops(loops, body, parallel=parallel)), [cv, ov], "fold2d")


@RULES.kernel(NN.DROPOUT_MASK)
def dropout_mask(lw, n):
    seed = n.inputs[0]
    sv = lw.contiguous(seed)
    ov = lw.output_view(n.out)
    p = float(n.attrs["p"])
    dt = n.out.dtype
    scale = literal_c(np.float64(1.0 / (1.0 - p)).astype(dt.np), dt)
    zero = literal_c(0, dt)
    total = _prod(n.out.shape)
    body = [f"const int64_t seed = {_ptr(sv)}[0];",
            f"for (int64_t e = 0; e < {total}; e++) "
            f"{ov.buf}[e] = tg_uniform(seed, e) >= {p!r} ? {scale} : {zero};"]
    _raw(lw, _block(["    " + b for b in body]), [sv, ov], "dropout_mask")


@RULES.kernel(NN.UNIFORM_NOISE)
def uniform_noise(lw, n):
    seed = n.inputs[0]
    sv = lw.contiguous(seed)
    ov = lw.output_view(n.out)
    low, high = float(n.attrs["low"]), float(n.attrs["high"])
    total = _prod(n.out.shape)
    body = [f"const int64_t seed = {_ptr(sv)}[0];",
            f"for (int64_t e = 0; e < {total}; e++) {ov.buf}[e] = "
            f"({ctype_of(n.out.dtype)})({low!r} + {high - low!r} * tg_uniform(seed, e));"]
    _raw(lw, _block(["    " + b for b in body]), [sv, ov], "uniform_noise")


@RULES.kernel(I.NONZERO)
def nonzero(lw, n):
    raise Unsupported("nonzero", "its output shape depends on the data")


# ----------------------------------------------------------------------------- dense linear algebra
def _matrix_loops(n, operands):
    """Loops over the output's batch dims: ``(loops, offsets)`` where ``offsets[k]`` is the C
    expression of operand k's matrix offset (``operands``: (view, matrix elements) pairs; a
    batch dim of size 1 broadcasts), the output last."""
    batch = tuple(n.out.shape[:-2])
    loops = [(f"b{i}", s) for i, s in enumerate(batch)]
    offsets = []
    for view, shape, elems in operands:
        own = (1,) * (len(batch) - len(shape)) + tuple(shape)
        stride, terms = elems, []
        for i in reversed(range(len(batch))):
            terms.append((f"b{i}", 0 if own[i] == 1 else stride))
            stride *= own[i]
        offsets.append(f"{_ptr(view)} + {_idx(terms)}")
    return loops, offsets


def _lu_start(lw, n, cols=0):
    """What the LU kernels share: (n, LU buffer, permutation buffer, the first input's
    contiguous view, output view, C type) for the first input's n x n matrices, or None when
    the output is empty (nothing to run). The LU buffer (runtime theme lapack: tg_la_solve)
    holds n x n, then ``cols`` right-hand sides in column-major order."""
    x = n.inputs[0]
    xv, ov = lw.contiguous(x), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return None
    size = x.shape[-1]
    lu = lw._work(ctype_of(x.dtype), max(size * (size + cols), 1), x.dtype.itemsize)
    return size, lu, lw._work("int64_t", max(size, 1), 8), xv, ov, ctype_of(x.dtype)


def _work_views(lu, perm, size, cols=0):
    return View(lu.name, 0, (max(size * (size + cols), 1),), (1,)), View(perm.name, 0, (max(size, 1),), (1,))


@RULES.kernel(LA.INV)
def linalg_inv(lw, n):
    """Each matrix's inverse: LU, then a solve against the identity (TG_FAIL_MATRIX when singular:
    the interpreter then raises the error)."""
    x = n.inputs[0]
    start = _lu_start(lw, n, cols=x.shape[-1])
    if start is None:
        return
    size, lu, perm, xv, ov, ct = start
    loops, (src, dst) = _matrix_loops(n, [(xv, x.shape[:-2], size * size),
                                              (ov, n.out.shape[:-2], size * size)])
    body = [f"if (!tg_la_solve_{ct}({size}, {size}, {src}, 0, {dst}, {lu.name}, {perm.name})) "
            "return TG_FAIL_MATRIX;"]
    _raw(lw, _block(_loops(loops, body)), [xv, ov, *_work_views(lu, perm, size, size)], "linalg_inv")


@RULES.kernel(DET.DET)
def linalg_det(lw, n):
    """Each matrix's determinant: the permutation's sign times the LU diagonal's product (0
    when a pivot is exactly zero), as LAPACK-based NumPy computes it."""
    start = _lu_start(lw, n)
    if start is None:
        return
    size, lu, perm, xv, ov, ct = start
    batch = tuple(n.out.shape)
    loops = [(f"b{i}", s) for i, s in enumerate(batch)]
    flat = _idx([(f"b{i}", _prod(batch[i + 1:])) for i in range(len(batch))])
    body = [f"{_ptr(ov)}[{flat}] = tg_la_det_{ct}({size}, {_ptr(xv)} + ({flat})*{size * size}, "
            f"{lu.name}, {perm.name});"]
    _raw(lw, _block(_loops(loops, body)), [xv, ov, *_work_views(lu, perm, size)], "linalg_det")


@RULES.kernel(LA.SOLVE)
def linalg_solve(lw, n):
    """``X = A^-1 B`` per matrix pair (batches broadcast): LU of A, then substitution for each
    column of B (TG_FAIL_MATRIX when A is singular)."""
    a, b = n.inputs
    cols = n.out.shape[-1]
    start = _lu_start(lw, n, cols)
    if start is None:
        return
    size, lu, perm, av, ov, ct = start
    bv = lw.contiguous(b)
    loops, (asrc, bsrc, dst) = _matrix_loops(n, [(av, a.shape[:-2], size * size),
                                                     (bv, b.shape[:-2], size * cols),
                                                     (ov, n.out.shape[:-2], size * cols)])
    body = [f"if (!tg_la_solve_{ct}({size}, {cols}, {asrc}, {bsrc}, {dst}, {lu.name}, {perm.name})) "
            "return TG_FAIL_MATRIX;"]
    _raw(lw, _block(_loops(loops, body)), [av, bv, ov, *_work_views(lu, perm, size, cols)], "linalg_solve")


@RULES.kernel(LA.CHOLESKY)
def linalg_cholesky(lw, n):
    """Each matrix's Cholesky factor ``L`` (lower, zeros above) of its symmetric part (the
    primitive's reading, ops/linalg.py), column by column into the output (with ``check``,
    TG_FAIL_MATRIX when a pivot is not positive: the interpreter then raises the error;
    without, NaN from that pivot on)."""
    x = n.inputs[0]
    xv, ov = lw.contiguous(x), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    size, ct = x.shape[-1], ctype_of(x.dtype)
    loops, (src, dst) = _matrix_loops(n, [(xv, x.shape[:-2], size * size),
                                              (ov, n.out.shape[:-2], size * size)])
    call = f"tg_la_cholesky_{ct}({size}, {src}, {dst})"
    body = [f"if ({call}) return TG_FAIL_MATRIX;" if n.attrs.get("check", True) else f"(void){call};"]
    _raw(lw, _block(_loops(loops, body)), [xv, ov], "linalg_cholesky")


@RULES.kernel(D.EIGH)
def linalg_eigh(lw, n):
    """Each matrix's packed eigendecomposition (ops/decompositions.py: eigenvalues, then
    eigenvectors) of its symmetric part by cyclic Jacobi in double (runtime.h.j2 tg_eigh; NaN
    gives NaN, as LAPACK; TG_FAIL_MATRIX if it does not converge: the interpreter then runs)."""
    x = n.inputs[0]
    xv, ov = lw.contiguous(x), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    size, ct = x.shape[-1], ctype_of(x.dtype)
    # (runtime theme lapack: TG_LA_EIGH_WORK, TG_LA_EIGH_IWORK; the Jacobi fallback needs less)
    count, icount = 3 * size * size + 7 * size + 1, 5 * size + 3
    work = lw._work("double", count, 8)
    order = lw._work("int64_t", icount, 8)
    loops, (src, dst) = _matrix_loops(n, [(xv, x.shape[:-2], size * size),
                                              (ov, n.out.shape[:-2], (size + 1) * size)])
    body = [f"if (!tg_la_eigh_{ct}({size}, {src}, {dst}, {work.name}, {order.name})) return TG_FAIL_MATRIX;"]
    views = [xv, ov, View(work.name, 0, (count,), (1,)), View(order.name, 0, (icount,), (1,))]
    _raw(lw, _block(_loops(loops, body)), views, "linalg_eigh")


@RULES.kernel(D.SVD)
def linalg_svd(lw, n):
    """Each matrix's packed reduced SVD (ops/decompositions.py: U, S, V) by one-sided Jacobi
    in double (runtime.h.j2 tg_svd; TG_FAIL_MATRIX on NaN or inf, as if it did not converge: the interpreter
    then raises)."""
    x = n.inputs[0]
    xv, ov = lw.contiguous(x), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    rows, cols = x.shape[-2:]
    k, big, ct = min(rows, cols), max(rows, cols), ctype_of(x.dtype)
    # gesdd's workspace for jobz 'S' (LAPACK 3.7's bound, 3k + max(big, 4k^2 + 4k), and older
    # releases' 4k^2 + 7k, with room for blocking); then the layout of tg_la_svd (runtime theme
    # lapack), which holds the Jacobi fallback's (big + k) k + k too
    lwork = 3 * k + max(big, 4 * k * k + 7 * k) + 64 * (big + k)
    size = rows * cols + k + 2 * big * k + lwork
    work = lw._work("double", size, 8)
    order = lw._work("int64_t", 8 * k, 8)
    loops, (src, dst) = _matrix_loops(n, [(xv, x.shape[:-2], rows * cols),
                                              (ov, n.out.shape[:-2], (rows + 1 + cols) * k)])
    body = [f"if (!tg_la_svd_{ct}({rows}, {cols}, {src}, {dst}, {work.name}, {lwork}, {order.name})) "
            "return TG_FAIL_MATRIX;"]
    views = [xv, ov, View(work.name, 0, (size,), (1,)), View(order.name, 0, (8 * k,), (1,))]
    _raw(lw, _block(_loops(loops, body)), views, "linalg_svd")


@RULES.kernel(D.QR)
def linalg_qr(lw, n):
    """Each matrix's packed QR (ops/decompositions.py: Q, then R) by Householder reflections
    in double with LAPACK's sign conventions (runtime.h.j2 tg_qr)."""
    x = n.inputs[0]
    xv, ov = lw.contiguous(x), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    rows, cols = x.shape[-2:]
    k = min(rows, cols)
    kq = rows if n.attrs["complete"] else k
    size = rows * cols + k + rows * kq
    work = lw._work("double", max(size, 1), 8)
    loops, (src, dst) = _matrix_loops(n, [(xv, x.shape[:-2], rows * cols),
                                              (ov, n.out.shape[:-2], _prod(n.out.shape[-2:]))])
    body = [f"tg_qr_{ctype_of(x.dtype)}({rows}, {cols}, {kq}, {src}, {dst}, {work.name});"]
    _raw(lw, _block(_loops(loops, body)), [xv, ov, View(work.name, 0, (max(size, 1),), (1,))], "linalg_qr")


@RULES.kernel(D.PINV)
def linalg_pinv(lw, n):
    """Each matrix's pseudo-inverse from its one-sided Jacobi SVD (hermitian: its Jacobi
    eigendecomposition), runtime.h.j2 tg_pinv (TG_FAIL_MATRIX on non-finite input to the SVD: the
    interpreter then raises)."""
    x = n.inputs[0]
    xv, ov = lw.contiguous(x), lw.output_view(n.out)
    if _prod(n.out.shape) == 0:
        return
    rows, cols = x.shape[-2:]
    big = max(rows, cols)
    size = rows * cols + (rows + 1 + cols) * big + 2 * big * big + big
    work = lw._work("double", size, 8)
    order = lw._work("int64_t", big, 8)
    a = n.attrs
    loops, (src, dst) = _matrix_loops(n, [(xv, x.shape[:-2], rows * cols),
                                              (ov, n.out.shape[:-2], rows * cols)])
    body = [f"if (!tg_pinv_{ctype_of(x.dtype)}({rows}, {cols}, {src}, {dst}, {float(a['atol'])!r}, "
            f"{float(a['rtol'])!r}, {int(bool(a['hermitian']))}, {work.name}, {order.name})) return TG_FAIL_MATRIX;"]
    views = [xv, ov, View(work.name, 0, (size,), (1,)), View(order.name, 0, (big,), (1,))]
    _raw(lw, _block(_loops(loops, body)), views, "linalg_pinv")


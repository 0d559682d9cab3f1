"""Lowering for CUDA: an IR Graph -> device buffers, kernels and the host launcher's steps.

The plan, in one pass over the nodes in program order (the C lowering's shape, simpler):

- movement primitives are views (``c.views.View``): no kernel, readers use index arithmetic;
- consecutive elementwise nodes of one output shape form a *group*, one grid-stride kernel;
  a value leaves the group (is stored) only when something outside it, or the caller, reads
  it; a group is emitted the moment anything outside it needs one of its values, or a node of
  another shape arrives;
- a reduction over some dims is a kernel of its own: one block per output row, each thread
  accumulating a strided part of the row in a fixed order, then a tree in shared memory and a
  last warp-shuffle step; the order never depends on timing, so results are deterministic;
- matmul is a tiled shared-memory kernel (kernels.py).

Every buffer is its own device allocation (no memory plan yet: docs/cuda.md). Inputs and
constants are copied to the device at the start of a call, results back at its end: tensors
are host tensors in this version.
"""
from __future__ import annotations

import numpy as np

from ..c.lower import _reduce_init, literal_c
from ..c.views import View, coalesce, contiguous_strides
from .rules import BOOL_VALUED, RULES, Unsupported

BLOCK = 256  # threads of an elementwise or reduction block (a multiple of the warp, 32)
MAX_GRID = 1024  # blocks of a grid-stride kernel: enough to fill a GPU, few to emulate
SHORT_ROW = 64  # a reduction over rows of at most this many elements: a thread a row
_DTYPES = ("f32", "f64", "i64", "i32", "i16", "i8", "u8", "b8")


class Buffer:
    def __init__(self, name, ctype, count, itemsize, kind, slot=None):
        self.name, self.ctype, self.count, self.itemsize = name, ctype, count, itemsize
        self.kind = kind  # input | const | output | work
        self.slot = slot  # args[] index (input, const, output)

    @property
    def nbytes(self):
        return self.count * self.itemsize


class Group:
    def __init__(self, shape):
        self.shape = tuple(shape)
        self.members = []
        self.values = set()
        self.closed = False


class Plan:
    def __init__(self):
        self.buffers = []
        self.kernels = []  # {"source": kernel text, "launch": host statement}
        self.out_specs = []  # (shape, numpy dtype) per output slot
        self.n_inputs = 0
        self.consts = []
        self.fail = None  # the index-failure flag's Buffer, when a kernel checks indices


def is_view(op):
    rule = RULES.lookup(op)
    return rule is not None and rule.kind == "view"


def index_expr(view, loop_vars):
    """``view``'s element offset at ``loop_vars`` (one C variable per dim, or None for 0)."""
    terms = [str(view.offset)] if view.offset else []
    for var, st in zip(loop_vars, view.strides):
        if var is None or st == 0:
            continue
        terms.append(var if st == 1 else f"{var}*{st}" if st > 0 else f"{var}*({st})")
    return " + ".join(terms) or "0"


def unravel(flat, shape, prefix):
    """C statements splitting ``flat`` into one index variable per dim of ``shape``
    (row-major); returns (statements, variable names)."""
    names = [f"{prefix}{d}" for d in range(len(shape))]
    if not shape:
        return [], names
    lines = [f"int64_t {prefix}r = {flat};"]
    for d in range(len(shape) - 1, 0, -1):
        lines.append(f"const int64_t {names[d]} = {prefix}r % {shape[d]}; {prefix}r /= {shape[d]};")
    lines.append(f"const int64_t {names[0]} = {prefix}r;")
    return lines, names


def expression(node, args):
    """The CUDA C expression of an elementwise node (``args``: its operands' expressions)."""
    op, out = node.op, node.out
    ct = out.dtype.c_type
    rule = RULES.rule_for(op)
    if rule.kind == "fold":  # a reduction over no dims: the identity, with its dtype
        return f"(({ct}){args[0]})"
    expr = rule.fn(node, args, ct) if rule.fn is not None else None
    if expr is None:
        template = op.c_int if op.c_int is not None and out.dtype.category == 1 else op.c
        if template is None:
            raise Unsupported(op.name, "elementwise op without a C expression for this dtype")
        if "tg_" in template:
            raise Unsupported(op.name, "its C expression calls the C backend's runtime, which "
                                       "CUDA programs do not have")
        expr = template.format(*args, ctype=ct, **node.attrs)
    if out.dtype.short == "b8" and op not in BOOL_VALUED:
        expr = f"(({expr}) != 0)"
    return expr


class Lowerer:
    def __init__(self, graph):
        self.g = graph
        self.plan = Plan()
        self.views = {}  # id(value) -> View of its device data
        self.group_of = {}
        self.group = None  # the open group
        self.consumers = {}
        for n in graph.nodes:
            for v in n.inputs:
                self.consumers.setdefault(id(v), []).append(n)
        self.out_values = list(graph.outputs) + [v for v, _ in graph.writebacks]
        self.out_home = set()  # output positions some kernel writes directly
        self._count = 0

    # ------------------------------------------------------------------ buffers
    def _buffer(self, dtype, count, kind, slot=None):
        self._count += 1
        prefix = {"input": "in", "const": "k", "output": "out", "work": "w", "flag": "fail"}[kind]
        b = Buffer(f"{prefix}{self._count}", dtype.c_type, int(count), dtype.itemsize, kind, slot)
        self.plan.buffers.append(b)
        return b

    def _alloc(self, v):
        """A fresh contiguous home for ``v``: its output slot when returned, else work."""
        for pos, ov in enumerate(self.out_values):
            if ov is v and pos not in self.out_home:
                self.out_home.add(pos)
                return View(self._out_bufs[pos].name, 0, v.shape, contiguous_strides(v.shape))
        return self.work_view(v.shape, v.dtype)

    def work_view(self, shape, dtype):
        b = self._buffer(dtype, int(np.prod(shape, dtype=np.int64)), "work")
        return View(b.name, 0, shape, contiguous_strides(shape))

    def fail_flag(self):
        """The name of the program's index-failure flag (one int of device memory, zero at the
        start of a call): a kernel that finds an index out of range sets it to 1 and skips that
        element; the launcher then returns TG_FAIL_INDEX (``render``)."""
        if self.plan.fail is None:
            from ....core.dtypes import int32

            self.plan.fail = self._buffer(int32, 1, "flag")
        return self.plan.fail.name

    def output_view(self, v):
        dst = self._alloc(v)
        self.views[id(v)] = dst
        return dst

    # ------------------------------------------------------------------ driver
    def run(self):
        g, plan = self.g, self.plan
        for v in [*g.inputs, *g.constants(), *(n.out for n in g.nodes)]:
            if v.dtype.short not in _DTYPES:
                raise Unsupported(v.node.op.name if v.kind == "node" else "input",
                                  f"dtype {v.dtype.name} is not supported by the CUDA backend yet")
        slot = 0
        for v in g.inputs:
            b = self._buffer(v.dtype, int(np.prod(v.shape, dtype=np.int64)), "input", slot)
            self.views[id(v)] = View(b.name, 0, v.shape, contiguous_strides(v.shape))
            slot += 1
        plan.n_inputs = slot
        for c in g.constants():
            b = self._buffer(c.dtype, int(np.prod(c.shape, dtype=np.int64)), "const", slot)
            plan.consts.append(np.ascontiguousarray(c.data, dtype=c.dtype.np))
            self.views[id(c)] = View(b.name, 0, c.shape, contiguous_strides(c.shape))
            slot += 1
        self._out_bufs = []
        for v in self.out_values:
            b = self._buffer(v.dtype, int(np.prod(v.shape, dtype=np.int64)), "output", slot)
            self._out_bufs.append(b)
            plan.out_specs.append((tuple(v.shape), v.dtype.np))
            slot += 1
        for n in g.nodes:
            self._node(n)
        if self.group is not None:
            self._close(self.group)
        for pos, v in enumerate(self.out_values):  # results no kernel wrote directly
            if pos not in self.out_home:
                dst = View(self._out_bufs[pos].name, 0, v.shape, contiguous_strides(v.shape))
                if v.kind == "literal":
                    self._emit_elementwise(v.shape, [], [("t0", v.dtype.c_type, literal_c(v.data, v.dtype))],
                                           [(dst, "t0")])
                else:
                    self.copy(self.resolve(v), dst, v.dtype)
        return plan

    def _node(self, n):
        rule = RULES.rule_for(n.op)  # (raises Unsupported naming the op when it has none)
        if rule.kind == "view":
            return
        if rule.kind == "expression" or (rule.kind == "fold" and not n.attrs["dim"]):
            return self._join(n)
        if rule.kind == "fold":
            return self._reduce(n, rule.data)
        rule.fn(self, n)

    # ------------------------------------------------------------------ values
    def resolve(self, v):
        """A View of ``v``'s device data (emits the open group that computes it, if any)."""
        got = self.views.get(id(v))
        if got is not None:
            return got
        if v.kind == "literal":
            dst = self.work_view(v.shape, v.dtype)
            self._emit_elementwise(v.shape, [], [("t0", v.dtype.c_type, literal_c(v.data, v.dtype))],
                                   [(dst, "t0")])
            self.views[id(v)] = dst
            return dst
        group = self.group_of.get(id(v))
        if group is not None:
            assert not group.closed, f"{v.ref()} was computed in an emitted group but not stored"
            self._close(group)
            return self.views[id(v)]
        n = v.node
        if n is None or not is_view(n.op):
            raise AssertionError(f"no storage for {v.ref()}")
        view = RULES.lookup(n.op).fn(self, n, self.resolve(n.inputs[0]))
        self.views[id(v)] = view
        return view

    def _materialize(self, v, view):
        """A contiguous copy of ``view`` (the values of ``v``); the C view rules call this."""
        dst = self.work_view(v.shape, v.dtype)
        self.copy(view, dst, v.dtype)
        return dst

    def contiguous(self, v):
        view = self.resolve(v)
        return view if view.is_contiguous else self._materialize(v, view)

    def copy(self, src, dst, dtype):
        self._emit_elementwise(dst.shape, [("a0", src, dtype.c_type)], [], [(dst, "a0")])

    # ------------------------------------------------------------------ elementwise groups
    def _join(self, n):
        shape = tuple(n.out.shape)
        g = self.group
        if g is not None and g.shape != shape:
            self._close(g)
            g = None
        for v in n.inputs:  # operands from outside: resolved now (may emit the group)
            if v.kind != "literal" and not (g is not None and not g.closed and id(v) in g.values):
                self.resolve(v)
        if g is None or g.closed:
            g = self.group = Group(shape)
        g.members.append(n)
        g.values.add(id(n.out))
        self.group_of[id(n.out)] = g

    def _close(self, g):
        if g.closed:
            return
        g.closed = True
        if self.group is g:
            self.group = None
        members = {id(m) for m in g.members}
        outs = {id(v) for v in self.out_values}
        local, loads, stmts, stores = {}, [], [], []

        def operand(v):
            if v.kind == "literal":
                return literal_c(v.data, v.dtype)
            if id(v) not in local:
                local[id(v)] = f"a{len(loads)}"
                loads.append((local[id(v)], self.resolve(v).broadcast_to(g.shape), v.dtype.c_type))
            return local[id(v)]

        for m in g.members:
            expr = expression(m, [operand(v) for v in m.inputs])
            var = f"t{len(stmts)}"
            stmts.append((var, m.out.dtype.c_type, expr))
            local[id(m.out)] = var
            if id(m.out) in outs or any(id(c) not in members for c in self.consumers.get(id(m.out), ())):
                dst = self._alloc(m.out)
                self.views[id(m.out)] = dst
                stores.append((dst, var))
        self._emit_elementwise(g.shape, loads, stmts, stores)

    def _emit_elementwise(self, shape, loads, stmts, stores):
        """One grid-stride kernel over ``shape``: loads, statements, stores."""
        total = int(np.prod(shape, dtype=np.int64))
        if total == 0 or not stores:
            return
        views = [vw for _, vw, _ in loads] + [vw for vw, _ in stores]
        lshape, lstrides, _ = coalesce(list(shape), [list(vw.strides) for vw in views])
        lines, names = unravel("i", lshape, "i")
        idx = [index_expr(View(vw.buf, vw.offset, lshape, st), names) for vw, st in zip(views, lstrides)]
        body = list(lines)
        for (var, vw, ct), ix in zip(loads, idx):
            body.append(f"const {ct} {var} = {vw.buf}[{ix}];")
        for var, ct, expr in stmts:
            body.append(f"const {ct} {var} = {expr};")
        for (vw, var), ix in zip(stores, idx[len(loads):]):
            body.append(f"{vw.buf}[{ix}] = {var};")
        grid = min((total + BLOCK - 1) // BLOCK, MAX_GRID)
        self.kernel(
            "for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < {total}; "
            "i += (int64_t)gridDim.x * blockDim.x) {{\n{body}\n}}".format(
                total=total, body="\n".join("  " + b for b in body)),
            [vw.buf for vw in views], f"dim3({grid})", f"dim3({BLOCK})")

    # ------------------------------------------------------------------ reductions
    def _reduce(self, n, kind):
        x = n.inputs[0]
        dims = sorted(d % max(len(x.shape), 1) for d in n.attrs["dim"])
        src = self.resolve(x)
        kept = [d for d in range(len(x.shape)) if d not in dims]
        row_view = View(src.buf, src.offset, [x.shape[d] for d in kept], [src.strides[d] for d in kept])
        col_view = View(src.buf, 0, [x.shape[d] for d in dims], [src.strides[d] for d in dims])
        rows = int(np.prod(row_view.shape, dtype=np.int64))
        cols = int(np.prod(col_view.shape, dtype=np.int64))
        dst = self.output_view(n.out)  # contiguous: row r of the kept dims is element r
        dtype = n.out.dtype
        if rows == 0:
            return
        if dtype.is_floating_point:
            # sums and products accumulate in double, as the C backend's; max and min are exact
            acc = dtype.c_type if kind in ("max", "min") else "double"
        else:
            acc = "int64_t" if kind in ("sum", "prod") else dtype.c_type
        nan = dtype.is_floating_point
        combine = {
            "sum": "({a} + {b})", "prod": "({a} * {b})",
            # NaN propagates (once the accumulator is NaN, no comparison replaces it)
            "max": "(({b} > {a} || {b} != {b}) ? {b} : {a})" if nan else "({b} > {a} ? {b} : {a})",
            "min": "(({b} < {a} || {b} != {b}) ? {b} : {a})" if nan else "({b} < {a} ? {b} : {a})",
        }[kind]
        rl, rnames = unravel("row", row_view.shape, "r")
        cl, cnames = unravel("c", col_view.shape, "c")
        row_ix, col_ix = index_expr(row_view, rnames), index_expr(col_view, cnames)
        init = _reduce_init(kind, dtype)
        c = lambda a, b: combine.format(a=a, b=b)
        if cols <= SHORT_ROW:
            # short rows (a bias gradient: a sum over a small batch): one thread a row, in
            # order; a block per row would leave most of its threads idle
            body = [
                f"for (int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; row < {rows}; "
                "row += (int64_t)gridDim.x * blockDim.x) {",
                *["  " + s for s in rl],
                f"  const int64_t base = {row_ix};",
                f"  {acc} acc = ({acc})({init});",
                f"  for (int64_t c = 0; c < {cols}; c++) {{",
                *["    " + s for s in cl],
                f"    const {acc} v = ({acc}){src.buf}[base + {col_ix}];",
                f"    acc = {c('acc', 'v')};",
                "  }",
                f"  {dst.buf}[row] = ({dtype.c_type})acc;",
                "}",
            ]
            grid = min((rows + BLOCK - 1) // BLOCK, MAX_GRID)
            return self.kernel("\n".join(body), [src.buf, dst.buf], f"dim3({grid})", f"dim3({BLOCK})")
        body = [
            f"__shared__ {acc} part[{BLOCK}];",
            f"for (int64_t row = blockIdx.x; row < {rows}; row += gridDim.x) {{",
            *["  " + s for s in rl],
            f"  const int64_t base = {row_ix};",
            f"  {acc} acc = ({acc})({init});",
            f"  for (int64_t c = threadIdx.x; c < {cols}; c += blockDim.x) {{",
            *["    " + s for s in cl],
            f"    const {acc} v = ({acc}){src.buf}[base + {col_ix}];",
            f"    acc = {c('acc', 'v')};",
            "  }",
            "  part[threadIdx.x] = acc;",
            "  __syncthreads();",
            "  // a tree down to one warp, then shuffles: the same order on every run",
            f"  for (unsigned s = {BLOCK // 2}; s >= 32; s >>= 1) {{",
            f"    if (threadIdx.x < s) part[threadIdx.x] = {c('part[threadIdx.x]', 'part[threadIdx.x + s]')};",
            "    __syncthreads();",
            "  }",
            "  if (threadIdx.x < 32) {",
            f"    {acc} w = part[threadIdx.x];",
            "    for (int off = 16; off > 0; off >>= 1) {",
            f"      const {acc} o = __shfl_down_sync(0xffffffffu, w, off);",
            f"      w = {c('w', 'o')};",
            "    }",
            f"    if (threadIdx.x == 0) {dst.buf}[row] = ({dtype.c_type})w;",
            "  }",
            "  __syncthreads();  // part[] is reused by this block's next row",
            "}",
        ]
        self.kernel("\n".join(body), [src.buf, dst.buf], f"dim3({min(rows, MAX_GRID)})", f"dim3({BLOCK})")

    # ------------------------------------------------------------------ kernels
    def kernel(self, body, bufs, grid, block):
        """Add a kernel whose parameters are the device buffers ``bufs`` (by name)."""
        k = len(self.plan.kernels)
        names = list(dict.fromkeys(bufs))
        by_name = {b.name: b for b in self.plan.buffers}
        # (every value has a buffer of its own and no kernel writes what it reads: restrict holds)
        params = ", ".join(f"{by_name[b].ctype} *__restrict__ {b}" for b in names)
        source = f"__global__ void tg_k{k}({params}) {{\n{body}\n}}\n"
        launch = f"TG_LAUNCH(tg_k{k}, {grid}, {block}, {', '.join(names)});"
        self.plan.kernels.append({"source": source, "launch": launch})


def lower(graph):
    """Plan ``graph`` for CUDA; raises Unsupported naming the first op without a lowering."""
    return Lowerer(graph).run()

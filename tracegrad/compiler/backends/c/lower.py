"""Lowering: an IR Graph -> a list of kernels over planned buffers, ready for the templates.

The plan, in one pass over the nodes in program order:

- movement primitives (reshape of a contiguous value, permute, expand, slice, flip) are views:
  no code, consumers read them by index arithmetic (``views.View``);
- elementwise nodes of one output shape join the open *loop nest* of that shape, and so do the
  reductions (sum, prod, amax, amin) whose input has that shape: one loop computes the whole
  chain and accumulates the reductions; a value leaves the loop (is stored) only when something
  outside the nest, or the caller, reads it;
- a nest is emitted (closed) the moment anything outside it needs one of its values, so the
  order of kernels always respects the data flow;
- matmul, index, nn and concatenation primitives are kernels of their own;
- every stored value lives in an output array (when the caller receives it) or in the one
  workspace of the program, at an offset chosen by ``memory.plan`` from the liveness of values;
- write-backs the caller may point at the user's own storage (option ``inplace``: parameters,
  optimizer state, .grad) are written only after the last read of the input that storage
  also is, else computed into the workspace and copied in at the end (``_hazards``).

Each node is lowered by its rule in ``rules.RULES``, found by the op object (views, folded
reductions and elementwise expressions are registered in this file, kernels in kernels.py and
factor_kernels.py); an op without one raises ``Unsupported`` naming it (the caller falls back
to the interpreter).
"""
from __future__ import annotations

import math
import re

import numpy as np

from ....ops import elementwise as E
from ....ops import movement as M
from ....ops import reduce as R
from ...passes.simplify import uniform_value
from . import memory
from .half import compute_half_in_float
from .rules import RULES, Unsupported
from .views import View, coalesce, contiguous_strides

PARALLEL_MIN_WORK = 1 << 15  # elements: below this a loop is not worth an OpenMP team
# multiply-adds: a product below this runs on one BLAS thread (waking BLAS's threads costs more
# than the product itself there); runtime.h.j2's TG_BLAS_SERIAL_WORK is rendered from it
BLAS_SERIAL_WORK = 1 << 21


def matmul_work(node):
    """(how many products, multiply-adds of each) of a matmul node: its batch of
    ``(m x k) @ (k x n)`` products, each one call of a BLAS gemm; one product of all the rows
    when the right operand is one matrix for the whole batch (kernels.matmul merges them)."""
    (m, k), cols = node.inputs[0].shape[-2:], node.inputs[1].shape[-1]
    count = int(np.prod(node.out.shape[:-2], dtype=np.int64))
    if count > 1 and int(np.prod(node.inputs[1].shape[:-2], dtype=np.int64)) == 1:
        return 1, count * m * k * cols
    return count, m * k * cols


__all__ = ["Unsupported", "lower"]  # (Unsupported: defined with the rules, raised from here)


def is_view(op):
    """Whether ``op`` lowers to no code, a view of its input (its rule's kind)."""
    rule = RULES.lookup(op)
    return rule is not None and rule.kind == "view"


def ctype_of(dtype):
    return dtype.c_type


def local_ctype(dtype):
    """The C type of a value computed inside a loop: its storage type, except that a bool is
    held as int32_t. Every bool expression yields 0 or 1 either way (c_expression), but GCC does
    not vectorize a loop that narrows a comparison to a byte and widens it again to a float
    (``grad * (x > 0)``, ReLU's backward: measured 2.9 -> 0.5 cycles an element); a bool
    stored to memory is still a byte."""
    return "int32_t" if dtype.short == "b8" else dtype.c_type


def literal_c(value, dtype):
    """A C literal of ``dtype`` for a Python/NumPy scalar (exact for floats; a bfloat16's bits)."""
    if dtype.short == "bf16":
        return f"((uint16_t){int(np.asarray(value, dtype=dtype.np).view(np.uint16))})"
    if dtype.short == "b8":
        return "1" if bool(value) else "0"
    if dtype.category == 1:
        return f"INT64_C({int(value)})" if dtype.short == "i64" else f"(({dtype.c_type}){int(value)})"
    f = float(value)
    if math.isnan(f):
        return f"(({dtype.c_type})NAN)"
    if math.isinf(f):
        return f"(({dtype.c_type}){'-' if f < 0 else ''}INFINITY)"
    return f"(({dtype.c_type}){f!r})"


class Buffer:
    """A typed pointer in the generated function: an argument slot or a workspace block."""

    def __init__(self, name, ctype, nbytes, kind, slot=None):
        self.name = name
        self.ctype = ctype
        self.nbytes = nbytes
        self.kind = kind  # input | const | output | work
        self.slot = slot  # args[] index for input/const/output
        self.offset = None  # workspace offset for work buffers
        self.first = None  # kernel index of the first write (work buffers)
        self.last = None  # kernel index of the last read


class Nest:
    """An open loop nest: elementwise members of one shape plus reductions over it."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.members = []  # elementwise nodes, in order
        self.reductions = []  # reduce nodes whose input has self.shape
        self.red_dims = None  # the reduced dims shared by all reductions
        self.values = set()  # id of every elementwise value the nest produces (readable in-loop)
        self.reduced = set()  # id of every reduction result (ready only after the nest)
        self.closed = False


class Plan:
    """Everything the templates need: buffers, kernels, slots and the workspace size."""

    def __init__(self, graph):
        self.graph = graph
        self.buffers = []
        self.kernels = []
        self.n_inputs = len(graph.inputs)
        self.consts = []  # ndarrays passed after the inputs
        self.out_specs = []  # (shape, numpy dtype) per output slot
        self.workspace = 0
        self.inplace = []  # (output slot position, paired input index or -1): see lower()
        self.deferred = ()  # in-place positions copied in at the end (a read-after-write hazard)
        self.fast_math = True  # the vectorized math functions of runtime.h.j2 (option fast_math)
        # per kernel, the IR nodes it computes ([] for copies of results): what a profile
        # (compiler/profile/) names each kernel's time after
        self.kernel_nodes = []


class Lowerer:
    def __init__(self, graph, options=None, deferred=()):
        self.g = graph
        self.deferred = frozenset(deferred)  # output positions only the final copies may write
        self._io = []  # per kernel: [(buffer name, "r" | "w" | "a" | "?", index or None)]
        self.options = options or {}
        self.plan = Plan(graph)
        self.plan.fast_math = bool(self.options.get("fast_math", True))
        self.views = {}  # id(value) -> View (materialized or a view of a materialized value)
        self.nest_of = {}  # id(value) -> Nest that computes it
        self.open = {}  # shape -> open Nest
        self.consumers = {}
        self.out_values = list(graph.outputs) + [v for v, _ in graph.writebacks]
        self.out_home = {}  # output position -> True when a kernel writes it directly
        self._names = 0
        self._origin = []  # the nodes whose code is being emitted (Plan.kernel_nodes)
        for n in graph.nodes:
            for v in n.inputs:
                self.consumers.setdefault(id(v), []).append(n)
        self.producer = {id(n.out): n for n in graph.nodes}

    # ------------------------------------------------------------------ buffers
    def _name(self, prefix):
        self._names += 1
        return f"{prefix}{self._names}"

    def _buffer(self, ctype, nbytes, kind, slot=None):
        b = Buffer(self._name({"input": "in", "const": "k", "output": "out", "work": "w"}[kind]),
                   ctype, nbytes, kind, slot)
        self.plan.buffers.append(b)
        return b

    def _touch(self, view):
        """Record that the kernel being emitted reads or writes ``view``'s buffer."""
        b = self._buf_by_name[view.buf]
        k = len(self.plan.kernels)
        if b.first is None:
            b.first = k
        b.last = k

    def _alloc(self, v):
        """A fresh contiguous home for value ``v``: an output slot it is returned in, else work."""
        for pos, ov in enumerate(self.out_values):
            if ov is v and pos not in self.out_home and pos not in self.deferred:
                self.out_home[pos] = True
                return View(self._out_bufs[pos].name, 0, v.shape, contiguous_strides(v.shape))
        nbytes = int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize
        b = self._buffer(ctype_of(v.dtype), nbytes, "work")
        self._buf_by_name[b.name] = b
        return View(b.name, 0, v.shape, contiguous_strides(v.shape))

    def _work(self, ctype, count, itemsize):
        b = self._buffer(ctype, count * itemsize, "work")
        self._buf_by_name[b.name] = b
        return b

    # ------------------------------------------------------------------ driver
    def run(self):
        g, plan = self.g, self.plan
        self._buf_by_name = {}
        slot = 0
        self._in_names = []
        for v in g.inputs:
            b = self._buffer(ctype_of(v.dtype), 0, "input", slot)
            self._buf_by_name[b.name] = b
            self._in_names.append(b.name)
            self.views[id(v)] = View(b.name, 0, v.shape, contiguous_strides(v.shape))
            slot += 1
        for c in g.constants():
            b = self._buffer(ctype_of(c.dtype), 0, "const", slot)
            self._buf_by_name[b.name] = b
            data = np.ascontiguousarray(c.data, dtype=c.dtype.np)
            plan.consts.append(data)
            # one value throughout (the zeros a backward formula starts from): read it broadcast
            # from the first element, so that a writable copy is a fill, not a copy of memory
            uniform = data.size > 1 and uniform_value(data) is not None
            strides = (0,) * len(c.shape) if uniform else contiguous_strides(c.shape)
            self.views[id(c)] = View(b.name, 0, c.shape, strides)
            slot += 1
        self._out_bufs = []
        for v in self.out_values:
            b = self._buffer(ctype_of(v.dtype), 0, "output", slot)
            self._buf_by_name[b.name] = b
            self._out_bufs.append(b)
            plan.out_specs.append((tuple(v.shape), v.dtype.np))
            slot += 1
        for n in g.nodes:
            self._node(n)
        for nest in list(self.open.values()):
            self._close(nest)
        for pos, v in enumerate(self.out_values):  # outputs no kernel wrote directly
            if pos not in self.out_home and pos not in self.deferred:
                dst = View(self._out_bufs[pos].name, 0, v.shape, contiguous_strides(v.shape))
                self._emit_copy(v, dst)
        self._copy_deferred()
        for k in plan.kernels:  # (function.c.j2 returns right after a kernel that raised the flag)
            k["sets_fail"] = "tg_fail =" in repr(k)
        plan.workspace = memory.plan([b for b in plan.buffers if b.kind == "work"],
                                     reuse=self.options.get("reuse_memory", True))
        return plan

    def _copy_deferred(self):
        """Deferred in-place outputs, last: a value that is (a view of) an input is first
        staged in the workspace, then all are copied out, so that no copy into a user's buffer
        comes before a read of any input (other outputs and the workspace hold final values)."""
        staged = []
        for pos in sorted(self.deferred):
            v = self.out_values[pos]
            src = None if v.kind == "literal" else self.resolve(v)
            if src is not None and self._buf_by_name[src.buf].kind == "input":
                src = self._materialize(v, src)
            staged.append((pos, v, src))
        for pos, v, src in staged:
            dst = View(self._out_bufs[pos].name, 0, v.shape, contiguous_strides(v.shape))
            if src is None:
                self._emit_fill(dst, literal_c(v.data, v.dtype))
            else:
                self._emit_loop(v.shape, (), [("a", src, ctype_of(v.dtype))], [], [(dst, "a")], [])

    def _hazards(self, pairs):
        """In-place positions (``pairs``: position -> input index) whose output buffer is
        written before the last read of its paired input, i.e. wrong when both are one array.
        The one allowed overlap: a loop kernel that reads the input and writes the output at
        the same index in the same iteration (an update ``p - lr * g``), every loop variable in
        that index (no element is visited twice)."""
        assert len(self._io) == len(self.plan.kernels)
        # A failed call (an index out of bounds, a singular matrix: runtime.h.j2 TG_FAIL_*) must
        # leave the user's tensors as they were, so no kernel up to the last one that may fail
        # writes into their storage: such positions are deferred too.
        fails = [i for i, kernel in enumerate(self.plan.kernels) if may_fail(kernel)]
        last_fail = fails[-1] if fails else -1
        bad = set()
        for pos, k in pairs.items():
            out_b = self._out_bufs[pos].name
            writes = [i for i, io in enumerate(self._io) if any(b == out_b for b, _, _ in io)]
            if writes and writes[0] <= last_fail:
                bad.add(pos)
                continue
            if k < 0:
                continue  # the target is not an input: the call checks it overlaps none
            in_b = self._in_names[k]
            reads = [i for i, io in enumerate(self._io) if any(b == in_b for b, _, _ in io)]
            if not writes or not reads or writes[0] > reads[-1]:
                continue
            if writes[0] < reads[-1] or not self._same_index_only(writes[0], in_b, out_b):
                bad.add(pos)
        return bad

    def _same_index_only(self, kid, in_b, out_b):
        kernel, io = self.plan.kernels[kid], self._io[kid]
        if kernel["kind"] != "loop":
            return False
        idx = {(role, ix) for b, role, ix in io if b in (in_b, out_b)}
        roles = {r for r, _ in idx}
        if not roles <= {"r", "w"} or len({ix for _, ix in idx}) != 1:
            return False
        ix = next(iter(idx))[1]
        used = set(re.findall(r"\bi\d+\b", ix))
        return all(l["var"] in used or l["extent"] == 1 for l in kernel["loops"])

    def _node(self, n):
        rule = RULES.rule_for(n.op)  # (raises Unsupported, naming the op, when it has none)
        if rule.kind == "view":
            return  # resolved lazily by the first consumer that needs it
        if rule.kind == "expression" or (rule.kind == "fold" and not n.attrs["dim"]):
            return self._join_elementwise(n)
        if rule.kind == "fold":
            return self._join_reduction(n)
        self._origin = [n]
        rule.fn(self, n)
        self._origin = []

    # ------------------------------------------------------------------ values and views
    def _base(self, v):
        """The value whose storage ``v`` views (follows chains of view ops)."""
        while v.kind == "node" and is_view(v.node.op):
            v = v.node.inputs[0]
        return v

    def resolve(self, v):
        """A View of ``v``'s data, materializing whatever is needed (closes nests)."""
        got = self.views.get(id(v))
        if got is not None:
            return got
        if v.kind == "literal":
            dst = self._alloc_work_for(v)
            self._emit_fill(dst, literal_c(v.data, v.dtype))
            self.views[id(v)] = dst
            return dst
        nest = self.nest_of.get(id(v))
        if nest is not None:
            if nest.closed:
                raise AssertionError(f"{v.ref()} was computed inside a closed loop nest but not stored")
            self._close(nest)
            return self.views[id(v)]
        n = v.node
        if n is None or not is_view(n.op):
            raise AssertionError(f"no storage for {v.ref()}")
        src = self.resolve(n.inputs[0])
        view = RULES.lookup(n.op).fn(self, n, src)
        self.views[id(v)] = view
        return view

    def _alloc_work_for_shape(self, shape, dtype):
        nbytes = max(int(np.prod(shape, dtype=np.int64)), 1) * dtype.itemsize
        b = self._buffer(ctype_of(dtype), nbytes, "work")
        self._buf_by_name[b.name] = b
        return View(b.name, 0, shape, contiguous_strides(shape))

    def _alloc_work_for(self, v):
        nbytes = max(int(np.prod(v.shape, dtype=np.int64)), 1) * v.dtype.itemsize
        b = self._buffer(ctype_of(v.dtype), nbytes, "work")
        self._buf_by_name[b.name] = b
        return View(b.name, 0, v.shape, contiguous_strides(v.shape))

    def _materialize(self, v, view):
        dst = self._alloc_work_for(v)
        self._emit_loop(v.shape, (), [("a", view, ctype_of(v.dtype))], [], [(dst, "a")], [])
        return dst

    def contiguous(self, v):
        """A C-contiguous View of ``v`` (a copy only when its view is strided)."""
        view = self.resolve(v)
        if view.is_contiguous:
            return view
        return self._materialize(v, view)

    # ------------------------------------------------------------------ nests
    def _external_nests(self, n, nest):
        """Open nests (other than ``nest``'s direct values) that node ``n`` reads from."""
        out = []
        for v in n.inputs:
            if nest is not None and id(v) in nest.values:
                continue
            if v.kind == "literal":
                continue
            b = self._base(v)
            other = self.nest_of.get(id(b))
            if other is not None and not other.closed and other not in out:
                out.append(other)
        return out

    def _prepare(self, n, shape):
        nest = self.open.get(shape)
        ext = self._external_nests(n, nest)
        if nest is not None and nest in ext:  # reads its own nest through a view: start anew
            self._close(nest)
            nest = None
            ext = self._external_nests(n, None)
        for other in ext:
            self._close(other)
        if nest is None or nest.closed:
            nest = Nest(shape)
            self.open[shape] = nest
        for v in n.inputs:  # resolve external operands now, while their producers are final
            if id(v) not in nest.values and v.kind != "literal":
                self.resolve(v)
        return nest

    def _join_elementwise(self, n):
        nest = self._prepare(n, n.out.shape)
        nest.members.append(n)
        nest.values.add(id(n.out))
        self.nest_of[id(n.out)] = nest

    def _join_reduction(self, n):
        x = n.inputs[0]
        shape = tuple(x.shape)
        dims = tuple(n.attrs["dim"])
        nest = self.open.get(shape)
        if nest is not None and nest.red_dims is not None and nest.red_dims != dims:
            self._close(nest)
        nest = self._prepare(n, shape)
        nest.red_dims = dims
        nest.reductions.append(n)
        nest.reduced.add(id(n.out))
        self.nest_of[id(n.out)] = nest

    def _close(self, nest):
        if nest.closed:
            return
        nest.closed = True
        if self.open.get(nest.shape) is nest:
            del self.open[nest.shape]
        origin, self._origin = self._origin, nest.members + nest.reductions
        shape = nest.shape
        red = set(nest.red_dims or ())
        members = set(id(m) for m in nest.members) | set(id(r) for r in nest.reductions)
        out_ids = {id(v) for v in self.out_values}
        local = {}  # id(value) -> C variable name inside the loop
        loads, stmts, stores, reductions = [], [], [], []

        def operand(v):
            if v.kind == "literal":
                return literal_c(v.data, v.dtype)
            if id(v) in local:
                return local[id(v)]
            name = f"a{len(loads)}"
            loads.append((name, self.resolve(v).broadcast_to(shape), ctype_of(v.dtype)))
            local[id(v)] = name
            return name

        for m in nest.members:
            args = [operand(v) for v in m.inputs]
            var = f"t{len(stmts)}"
            stmts.append((var, local_ctype(m.out.dtype),
                          c_expression(m, args, self.plan.fast_math)))
            local[id(m.out)] = var
            outside = any(id(c) not in members for c in self.consumers.get(id(m.out), ()))
            if outside or id(m.out) in out_ids:
                dst = self._alloc(m.out)
                self.views[id(m.out)] = dst
                stores.append((dst.broadcast_to(shape), var))
        for r in nest.reductions:
            src = operand(r.inputs[0])
            dst = self._alloc(r.out)
            self.views[id(r.out)] = dst
            kept = [d for d in range(len(shape)) if d not in red]
            strides = [0] * len(shape)
            cs = contiguous_strides(tuple(shape[d] for d in kept))
            for d, st in zip(kept, cs):
                strides[d] = st
            out_view = View(dst.buf, dst.offset, shape, strides)
            reductions.append((RULES.lookup(r.op).data, src, out_view, r.out.dtype))
        self._emit_loop(shape, tuple(sorted(red)), loads, stmts, stores, reductions)
        self._origin = origin

    # ------------------------------------------------------------------ loop kernels
    def _emit_loop(self, shape, red_dims, loads, stmts, stores, reductions):
        """Emit one loop nest over ``shape`` (``red_dims`` innermost, accumulated)."""
        # Reducing over outer dims with the innermost dim kept (a bias gradient: sum over the
        # batch): walk memory in order and accumulate into the output in place, so the inner
        # loop is contiguous and vectorizes, instead of a strided inner reduction loop.
        inplace = bool(red_dims) and shape and (len(shape) - 1) not in red_dims and shape[-1] > 1
        if inplace:
            for kind, _src, rv, dtype in reductions:
                kept = [d for d in range(len(shape)) if d not in red_dims]
                dst = View(rv.buf, rv.offset, [shape[d] for d in kept], [rv.strides[d] for d in kept])
                self._emit_loop(dst.shape, (), [], [("t0", ctype_of(dtype), _reduce_init(kind, dtype))],
                                [(dst, "t0")], [])
        views = [lv for _, lv, _ in loads] + [sv for sv, _ in stores] + [rv for _, _, rv, _ in reductions]
        for vw in views:
            self._touch(vw)
        order = list(range(len(shape))) if inplace else \
            [d for d in range(len(shape)) if d not in red_dims] + list(red_dims)
        groups = [0 if inplace or d not in red_dims else 1 for d in order]
        lshape, lstrides, lgroups = coalesce([shape[d] for d in order],
                                             [[vw.strides[d] for d in order] for vw in views], groups)
        loop_vars = [f"i{d}" for d in range(len(lshape))]
        idx = [_index(vw, st, loop_vars) for vw, st in zip(views, lstrides)]
        nl = len(loads)
        ns = len(stores)
        self._io.append([(vw.buf, "r" if k < nl else "w" if k < nl + ns else "a", ix)
                         for k, (vw, ix) in enumerate(zip(views, idx))])
        work = int(np.prod(shape, dtype=np.int64))
        loops = [{"var": v, "extent": e, "reduce": bool(gp)} for v, e, gp in zip(loop_vars, lshape, lgroups)]
        n_kept = sum(1 for l in loops if not l["reduce"])
        accs = []
        for k, (kind, src, rv, dtype) in enumerate(reductions):
            # sums and products accumulate floats in double; max and min are exact in the type
            # itself. A float max/min keeps NaN apart (``nan``: any NaN seen), so that the
            # comparison is a plain ``s > acc ? s : acc``, which vectorizes as an OpenMP simd
            # max/min reduction; the NaN-propagating form in one select does not (measured: a
            # row max 4x faster on AVX2).
            extremum = kind in ("max", "min")
            nan_flag = extremum and dtype.is_floating_point and not inplace
            acc_t = (ctype_of(dtype) if extremum else "double") if dtype.is_floating_point else "int64_t"
            accs.append({"acc": f"acc{k}", "type": acc_t, "kind": kind, "src": src,
                         "init": _reduce_init(kind, dtype), "out": f"{rv.buf}[{idx[nl + ns + k]}]",
                         "ctype": ctype_of(dtype), "bool": dtype.short == "b8",
                         "nan": f"acc{k}_nan" if nan_flag else None})
        if inplace:
            for a in accs:
                a["acc"] = a["out"]
            n_kept = len(loops)
        combiner = {"sum": "+", "prod": "*", "max": "max", "min": "min"}
        reduction_clause = " ".join(f"reduction({combiner[a['kind']]}:{a['acc']})"
                                    + (f" reduction(|:{a['nan']})" if a["nan"] else "") for a in accs)
        parallel = None
        if inplace:
            pass  # the outer loop is a reduced dim: threads would race on the outputs
        elif work >= PARALLEL_MIN_WORK and self.options.get("openmp", False) and loops:
            # dynamic chunks of ~16k elements: on a shared machine a descheduled thread must
            # not hold up the whole loop (measured: static halves can be slower than 1 thread)
            inner = max(1, work // max(loops[0]["extent"], 1))
            chunk = max(1, (1 << 14) // inner)
            # if(): a dynamic=True program decides at run time, for its batch size
            when = f"if({work} >= {PARALLEL_MIN_WORK})"
            if n_kept and loops[0]["extent"] > 1:
                parallel = {"depth": 0, "clause": when, "chunk": chunk}
            elif not n_kept and accs:
                parallel = {"depth": 0, "clause": f"{when} {reduction_clause}", "chunk": chunk}
        simd_clause = reduction_clause if loops and loops[-1]["reduce"] else ""
        self.plan.kernels.append({
            "kind": "loop", "loops": loops, "n_kept": n_kept,
            "loads": [{"var": v, "ctype": ct, "src": f"{vw.buf}[{ix}]"} for (v, vw, ct), ix in zip(loads, idx)],
            "stmts": [{"var": v, "ctype": ct, "expr": e} for v, ct, e in stmts],
            "stores": [{"dst": f"{sv.buf}[{ix}]", "var": var} for (sv, var), ix in zip(stores, idx[nl:nl + ns])],
            "accs": accs, "parallel": parallel, "simd": True, "inplace": inplace,
            "simd_clause": "" if inplace else simd_clause,
        })
        self.plan.kernel_nodes.append(list(self._origin))

    def _emit_fill(self, dst, value_c):
        self._emit_loop(dst.shape, (), [], [("t0", "", value_c)], [(dst, "t0")], [])
        self.plan.kernels[-1]["stmts"][0]["ctype"] = self._buf_by_name[dst.buf].ctype

    def _emit_copy(self, v, dst):
        if v.kind == "literal":
            return self._emit_fill(dst, literal_c(v.data, v.dtype))
        src = self.resolve(v)
        self._emit_loop(v.shape, (), [("a", src, ctype_of(v.dtype))], [], [(dst, "a")], [])

    # ------------------------------------------------------------------ other kernels
    def parallel_for(self, work, extent):
        """The OpenMP pragma for a raw kernel's outer loop of ``extent`` independent iterations
        doing ``work`` element operations in all, or None (OpenMP off, too little work). One
        iteration at a time to each thread: they are few and large (a sample, an image)."""
        if not self.options.get("openmp", False) or extent < 2 or work < PARALLEL_MIN_WORK:
            return None
        return f"#pragma omp parallel for schedule(dynamic, 1) if({work} >= {PARALLEL_MIN_WORK})"

    def emit(self, kernel, views):
        """Append a non-loop kernel that reads/writes ``views``."""
        for vw in views:
            self._touch(vw)
        self._io.append([(vw.buf, "?", None) for vw in views])
        self.plan.kernels.append(kernel)
        self.plan.kernel_nodes.append(list(self._origin))

    def output_view(self, v):
        dst = self._alloc(v)
        self.views[id(v)] = dst
        return dst


def may_fail(kernel):
    """Whether ``kernel`` can end the call with a failure code (runtime.h.j2 TG_FAIL_*): a raw
    kernel that returns one, or a loop whose expression sets the tg_fail flag."""
    return "TG_FAIL" in repr(kernel)


def _index(view, strides, loop_vars):
    terms = [str(view.offset)] if view.offset else []
    for var, st in zip(loop_vars, strides):
        if st == 0:
            continue
        terms.append(var if st == 1 else f"{var}*{st}" if st > 0 else f"{var}*({st})")
    return " + ".join(terms) or "0"


def _reduce_init(kind, dtype):
    if kind == "sum":
        return "0"
    if kind == "prod":
        return "1"
    if dtype.is_floating_point:
        return "-INFINITY" if kind == "max" else "INFINITY"
    if dtype.short == "b8":
        return "0" if kind == "max" else "1"
    bits = 8 * dtype.itemsize  # stdint's limits of the dtype itself (the accumulator's type)
    if dtype.np.kind == "u":
        return "0" if kind == "max" else f"UINT{bits}_MAX"
    return f"INT{bits}_MIN" if kind == "max" else f"INT{bits}_MAX"


# ----------------------------------------------------------------------------- the rules
# Views: no code; the first consumer reads the input through a View (views.py).
@RULES.view(M.RESHAPE)
def _reshape(lw, n, src):
    out = src.reshape(n.attrs["shape"])
    if out is None:  # not expressible as strides: copy to contiguous first
        out = lw._materialize(n.inputs[0], src).reshape(n.attrs["shape"])
    return out


RULES.view(M.PERMUTE)(lambda lw, n, src: src.permute(n.attrs["dims"]))
RULES.view(M.EXPAND)(lambda lw, n, src: src.broadcast_to(tuple(n.attrs["shape"])))
RULES.view(M.SLICE)(lambda lw, n, src: src.slice(n.attrs["index"]))
RULES.view(M.FLIP)(lambda lw, n, src: src.flip(n.attrs["dims"]))

# Reductions that join the loop nest of their input's shape (over no dims: the identity).
for _op, _combiner in ((R.SUM, "sum"), (R.PROD, "prod"), (R.AMAX, "max"), (R.AMIN, "min")):
    RULES.fold(_op, _combiner)

# Vectorizable float32 forms of fast_math programs (templates/runtime/fast_*.h.j2; their
# accuracy is bound there and tested by tests/test_backend_c.py::test_fast_math_accuracy).
for _op, _fast in ((E.EXP, "tg_expf({0})"), (E.TANH, "tg_tanhf({0})"), (E.ERF, "tg_erff({0})"),
                   (E.LOG, "tg_logf({0})"), (E.LOG1P, "tg_log1pf({0})"),
                   (E.SIGMOID, "(1 / (1 + tg_expf(-({0}))))")):
    RULES.fast_float(_op, _fast)

# Ops whose C expression is already 0 or 1 for a bool result (others get ``!= 0``).
_BOOL_VALUED = frozenset((E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE, E.LOGICAL_AND, E.LOGICAL_OR,
                          E.LOGICAL_NOT, M.COPY, E.WHERE))


@RULES.expression(E.CLAMP)
def _clamp(node, args, ct):
    out = node.out
    x = args[0]
    lo, hi = node.attrs.get("min"), node.attrs.get("max")
    expr = x
    if lo is not None:
        lo_c = literal_c(lo, out.dtype)
        expr = f"({expr} < {lo_c} ? {lo_c} : {expr})"
    if hi is not None:
        hi_c = literal_c(hi, out.dtype)
        expr = f"({expr} > {hi_c} ? {hi_c} : {expr})"
    # NaN stays NaN (np.clip): both comparisons are false for NaN
    return f"(({x} != {x}) ? {x} : {expr})" if out.dtype.is_floating_point else expr


@RULES.expression(E.CAST)
def _cast(node, args, ct):
    out, src = node.out.dtype, node.inputs[0].dtype
    if out.short == "bf16":  # (bfloat16's bits: half.py)
        return f"tg_bf16_from_float((float)({args[0]}))"
    if src.short == "bf16":
        return f"(({ct})tg_bf16_to_float({args[0]}))"
    if out.short == "b8":
        return f"({args[0]} != 0)"
    return None


@RULES.expression(E.SIGN)
def _sign(node, args, ct):
    if node.out.dtype.is_floating_point:  # (0 for NaN, as PyTorch's)
        return f"(({ct})(({args[0]} > 0) - ({args[0]} < 0)))"
    return None


@RULES.expression(E.MAXIMUM, E.MINIMUM)
def _extreme(node, args, ct):
    if not node.out.dtype.is_floating_point:
        return None
    a, b = args
    cmp = ">" if node.op is E.MAXIMUM else "<"
    return f"(({a} != {a}) ? {a} : (({b} != {b}) ? {b} : ({a} {cmp} {b} ? {a} : {b})))"


@RULES.expression(E.RELU)
def _relu(node, args, ct):
    if node.out.dtype.is_floating_point:
        a = args[0]
        return f"(({a} != {a} || {a} > 0) ? {a} : 0)"
    return None


@RULES.expression(E.POW)
def _pow(node, args, ct):
    if node.out.dtype.is_floating_point and node.inputs[1].kind == "literal":
        return _pow_by_literal(args[0], float(node.inputs[1].data), ct)
    return None


def c_expression(node, args, fast_math=True):
    """The C expression of an elementwise node (``args`` are the operand expressions): its
    rule's, else its OpDef's ``c`` template (``c_int`` for integer dtypes), or in a float32
    fast_math program the registered fast form."""
    op, out = node.op, node.out
    ct = ctype_of(out.dtype)
    rule = RULES.rule_for(op)
    if rule.kind == "fold":  # a reduction over no dims: the identity (with its dtype)
        return f"(({ct}){args[0]})"
    expr = rule.fn(node, args, ct) if rule.fn is not None else None
    if expr is None:
        fast = RULES.fast_template(op) if fast_math and ct == "float" else None
        template = fast or (op.c_int if op.c_int is not None and out.dtype.category == 1 else op.c)
        if template is None:
            raise Unsupported(op.name, "elementwise op without a C expression for this dtype")
        expr = template.format(*args, ctype=ct, **node.attrs)  # (attrs such as polygamma's n)
    if out.dtype.short == "b8" and op not in _BOOL_VALUED:
        expr = f"(({expr}) != 0)"
    return expr


def _pow_by_literal(a, p, ct):
    """``a ** p`` for the exponents with a cheaper form than libm's ``pow``, a scalar call that
    keeps a loop from vectorizing (``x ** 3`` over 1 M floats: 6.5 ms against 0.1 ms). The
    forms are those NumPy's own fast paths use (``sqrt``, ``1 / x``) or products within an ulp
    of ``pow``; pow's edge values are kept (``x ** -0.5`` of +-0 is inf, of -inf is 0). None
    for any other exponent. 1 and 2 are the simplify pass's (``x`` and ``x * x`` in the IR,
    for every backend); with ``optimize=False`` GCC folds ``pow(x, 1)`` and ``pow(x, 2)``."""
    one = f"(({ct})1)"
    forms = {0.0: one, 3.0: f"({a} * {a} * {a})",
             4.0: f"(({a} * {a}) * ({a} * {a}))", -1.0: f"({one} / {a})", 0.5: f"sqrt({a})",
             -0.5: f"({a} == 0 ? ({ct})INFINITY : ({a} == -({ct})INFINITY ? ({ct})0 : {one} / sqrt({a})))"}
    return forms.get(p)


def lower(graph, options=None):
    """Plan ``graph`` for C; raises Unsupported naming the first op without a lowering.

    ``options["inplace"]``: (write-back index, graph input index or -1) pairs whose output
    the caller may point at the user's storage, that input's own array when an index is
    given. The plan is then correct both ways: lowered again with the positions that have a
    read-after-write hazard deferred until no new one appears (at worst every one of them:
    then every write into a user's buffer comes after every kernel). float16 and bfloat16 are
    computed in float32 (half.py)."""
    options = options or {}
    graph = compute_half_in_float(graph)
    n_out = len(graph.outputs)
    pairs = {}
    for j, k in options.get("inplace", ()):
        v = graph.writebacks[j][0]
        if k >= 0 and graph.inputs[k].dtype is not v.dtype:
            continue  # never the same array: no in-place slot
        pairs[n_out + j] = k
    deferred = set()
    while True:
        lw = Lowerer(graph, options, deferred)
        plan = lw.run()
        bad = lw._hazards(pairs) - deferred
        if not bad:
            break
        deferred |= bad
    plan.inplace = sorted(pairs.items())
    plan.deferred = tuple(sorted(deferred))
    return plan

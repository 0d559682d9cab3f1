"""Batch split: a training step's rows on two threads, each in its own core's cache.

A step on a small batch is too small to share out product by product (waking a thread per
product, and every value passing between two cores' caches, cost more than the halved products
gain: docs/performance.md), but its rows are independent until the gradients are summed over
the batch. So the graph is cut in two:

- the **half** program: everything that depends on the batch's rows, at half the batch. Two
  threads run it at once, each on its own half of the rows (the same code, pointers offset by
  half a batch) and its own workspace. A value reduced over the batch (a weight gradient
  ``X^T @ dZ``, a bias gradient, the loss's sum) comes out as each half's *partial*;
- the **tail** program: the rest (the partials added, the optimizer's update), on the calling
  thread once both halves are done.

The analysis proves that row ``i`` of every half value depends only on row ``i`` of the
batched inputs (the arguments whose leading size is the batch's): elementwise ops, products
with a batch-free operand, reductions over other dims, permutes, reshapes that keep the
leading size, gathers and scatters along another dim. A reduction over the batch (sum, or a
product contracting it) is a partial. A batch-free value the half program needs that depends
on a partial (cross entropy's ``1 / count`` of valid targets) is computed over the whole batch
by each half instead, when that is cheap (no products, few elements). Anything else, random
ops, an odd batch or a batched value written back in place, and the program is not split.

``tg.compile(..., options={"batch_split": True})`` splits whatever can be split (the default,
``"auto"``, only where it pays: ``resolve_split`` in backends/c/__init__.py):

>>> import tracegrad as tg
>>> w = tg.randn(16, 8, requires_grad=True)
>>> grad_w = tg.compile(lambda x: tg.autograd.grad((x @ w).tanh().sum(), [w])[0],
...                     options={"batch_split": True})
>>> tuple(grad_w(tg.randn(32, 16)).shape)
(16, 8)
>>> "tg_half" in grad_w.programs[0].executable.source
True
"""
from __future__ import annotations

from typing import NamedTuple

from ...ir.graph import Graph
from ...passes.simplify import uniform_value
from ....ops.registry import REGISTRY
from .lower import matmul_work

# The auto rule (backends/c.resolve_split), measured on tiny's MLP with
# benchmarks/bench_batch_split.py (docs/performance.md): the halves' products must outweigh the
# partials passed between the cores (a core reads the other's partials, and writing a parameter
# both cores read invalidates the other's copy of its cache lines). Split / whole, by batch
# (multiply-adds of a half per partial element; runs): 16 (21; 2) 1.11-1.24, 32 (42; 6)
# 0.92-1.17, 48 (64; 6) 0.83-1.08, 64 (85; 4) 0.67-0.80, 96 (4) 0.63-0.73. With PyTorch's and
# JAX's threads in the process (bench_workloads.py), tiny at batch 32 took 0.067-0.089 ms split
# against 0.060-0.078 ms whole in earlier runs. So auto starts at 80.
SPLIT_MIN_PRODUCT_WORK = 1 << 19  # multiply-adds of one half's products, at least
SPLIT_WORK_PER_PARTIAL = 80  # ... and this many per element of the partials
RECOMPUTE_MAX_ELEMENTS = 1 << 16  # batch-dependent values a half may compute over the whole batch
VIEWS = ("reshape", "permute", "expand", "slice", "flip")
MERGE = {"sum": "add"}  # a reduction over the batch -> how two halves' partials combine


class _Unsplittable(Exception):
    pass


class Split(NamedTuple):
    """The two programs and how the driver (batch_split.c.j2) feeds them.

    ``half_inputs``: per input of ``half``, ``(original input index, halved)``;
    ``half_outputs``: per output of ``half``, ``("rows", key)`` (a batched value's rows, bytes
    per half at the key's buffer) or ``("partial", key)``; ``tail_inputs``: per input of
    ``tail`` after the original inputs, ``("rows", key)`` or ``("partial", key, h)``;
    ``products``: lower.matmul_work of each product of the half program."""

    batch: int
    half: object
    tail: object
    half_inputs: list
    half_outputs: list
    tail_inputs: list
    products: list
    partial_elements: int


def split_batch(graph):
    """A Split of ``graph`` over its batch, or None when its rows are not provably independent
    (see the module docstring)."""
    import sys

    # the splitter recurses along the graph's chains of values (a few frames a node): a
    # 128-layer MLP's step passed Python's default limit. Raised for the call, and a graph
    # deeper still is left unsplit rather than failing to compile.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 1000 + 8 * len(graph.nodes)))
    try:
        return _Splitter(graph).run()
    except (_Unsplittable, RecursionError):
        return None
    finally:
        sys.setrecursionlimit(limit)


def _batch_size(graph):
    for v in graph.inputs:
        if (v.label or "").startswith("arg") and v.ndim >= 1:
            return v.shape[0]
    raise _Unsplittable("no batched argument")


class _Splitter:
    def __init__(self, graph):
        self.g = graph
        self.B = _batch_size(graph)
        if self.B < 2 or self.B % 2:
            raise _Unsplittable("odd batch")
        self.H = self.B // 2
        self.cls = {}  # id(value) -> ("B", dim) | ("P", merge op) | ("F",)
        self.orig_index = {id(v): i for i, v in enumerate(graph.inputs)}
        for i, v in enumerate(graph.inputs):
            batched = (v.label or "").startswith("arg") and v.ndim >= 1 and v.shape[0] == self.B
            self.cls[id(v)] = ("B", 0) if batched else ("F",)
        for n in graph.nodes:
            self.cls[id(n.out)] = self._classify(n)

    # ------------------------------------------------------------------ analysis
    def of(self, v):
        return self.cls.get(id(v), ("F",))  # consts and literals are batch-free

    def _classify(self, n):
        kinds = [self.of(i) for i in n.inputs]
        if all(k[0] != "B" for k in kinds):
            return ("F",)
        if not n.op.pure:
            raise _Unsplittable("random op")
        name, kind, B = n.op.name, n.op.kind, self.B
        dims = [k[1] if k[0] == "B" else None for k in kinds]
        if kind == "elementwise":
            d = {b + n.out.ndim - i.ndim for i, b in zip(n.inputs, dims) if b is not None}
            if len(d) != 1 or n.out.shape[next(iter(d))] != B:
                raise _Unsplittable(name)
            return ("B", d.pop())
        b = dims[0]
        if name == "permute":
            return ("B", tuple(n.attrs["dims"]).index(b))
        if name == "reshape":
            if b != 0 or n.out.ndim == 0 or n.out.shape[0] != B:
                raise _Unsplittable(name)
            return ("B", 0)
        if name == "expand":
            return ("B", b + n.out.ndim - n.inputs[0].ndim)
        if name == "slice":
            if tuple(n.attrs["index"][b]) != (0, B, 1):
                raise _Unsplittable(name)
            return ("B", b)
        if name == "flip":
            if b in _dims(n.attrs["dims"], n.out.ndim):
                raise _Unsplittable(name)
            return ("B", b)
        if kind == "reduce" and "dim" in n.attrs:  # (reductions, and scans such as cumsum)
            reduced = _dims(n.attrs["dim"], n.inputs[0].ndim)
            if b in reduced:
                if name not in MERGE:
                    raise _Unsplittable(name)
                return ("P", MERGE[name])
            kept = n.out.ndim == n.inputs[0].ndim  # keepdim, or a scan
            return ("B", b if kept else b - sum(r < b for r in reduced))
        if name == "matmul" and all(i.ndim == 2 for i in n.inputs):
            da, db = dims
            if da == 0 and db is None:
                return ("B", 0)
            if da is None and db == 1:
                return ("B", 1)
            if da == 1 and db == 0:
                return ("P", "add")
            raise _Unsplittable(name)
        if name in ("gather", "scatter_add"):
            b = next(d for d in dims if d is not None)
            if b == n.attrs["dim"] % n.out.ndim or any(
                    d not in (None, b) or i.shape[b] != B for i, d in zip(n.inputs, dims)):
                raise _Unsplittable(name)
            return ("B", b)
        raise _Unsplittable(name)

    # ------------------------------------------------------------------ the half program
    def run(self):
        g = self.g
        self.half = Graph(g.name + "_half")
        self.tail = Graph(g.name + "_tail")
        self.half_inputs, self.half_outputs, self.tail_inputs = [], [], []
        self.h_half, self.h_full, self.t_val = {}, {}, {}
        self.h_consts, self.t_consts = {}, {}  # id(original constant) -> this program's
        self.recomputed = 0
        self.rows, self.partials = {}, {}  # id(value) -> key, in order of first use
        for v in g.inputs:
            self.t_val[id(v)] = self.tail.add_input(v.shape, v.dtype, v.label)
        self.tail.outputs = [self._tail(v) for v in g.outputs]
        self.tail.saved = [self._tail(v) for v in g.saved]
        self.tail.writebacks = [(self._tail(v), d) for v, d in g.writebacks]
        if any(id(v) in self.rows for v, _ in g.writebacks):
            raise _Unsplittable("batched write-back")  # its rows may be an input's storage
        outs = []
        for key, v in self.rows.values():
            outs.append(self._half(v))
            self.half_outputs.append(("rows", key))
        for key, v in self.partials.values():
            outs.append(self._partial(v))
            self.half_outputs.append(("partial", key))
        self.half.outputs = outs
        products = [matmul_work(n) for n in self.half.nodes if n.op.name == "matmul"]
        self.half.renumber()
        self.tail.renumber()
        return Split(self.B, self.half, self.tail, self.half_inputs, self.half_outputs,
                     self.tail_inputs, products,
                     sum(v.numel for key, v in self.partials.values()))

    def _const(self, graph, memo, v):
        if v.kind == "literal":
            return v
        if id(v) not in memo:
            memo[id(v)] = graph.const(v.data, v.dtype)  # (the same array: see _const_index)
        return memo[id(v)]

    def _half(self, v):
        """v's rows of one half (v batched)."""
        if id(v) in self.h_half:
            return self.h_half[id(v)]
        if v.kind == "input":
            out = self.half.add_input((self.H,) + v.shape[1:], v.dtype, v.label)
            self.half_inputs.append((self.orig_index[id(v)], True))
        else:
            n, b = v.node, self.of(v)[1]
            out = self._add(self.half, n, [self._operand(n, i, b) for i in n.inputs],
                            _half_attrs(n, b, self.B, self.H))
        self.h_half[id(v)] = out
        return out

    def _partial(self, v):
        """One half's share of v: its reduction over half the rows, or a view of such a share
        (a weight gradient read transposed comes out transposed, so that the product computes
        it in that layout and the tail reads it in order)."""
        n = v.node
        if n.op.name in VIEWS:
            return self._add(self.half, n, [self._partial(n.inputs[0])], n.attrs)
        return self._add(self.half, n, [self._operand(n, i, None) for i in n.inputs], n.attrs)

    def _operand(self, n, i, b):
        """Input ``i`` of ``n`` in the half program; ``b`` is n's batch dim (None: a partial)."""
        if self.of(i)[0] == "B":
            return self._half(i)
        if b is not None and n.op.kind == "elementwise":
            d = b - (n.out.ndim - i.ndim)  # i's dim that lines up with the batch
        elif b is not None and n.op.name in ("gather", "scatter_add"):
            d = b
        else:
            return self._full(i)
        if d < 0 or i.shape[d] == 1:
            return self._full(i)
        return self._half_of_free(i, d)

    def _half_of_free(self, v, d):
        """A batch-free value with the batch's size at dim ``d`` (zeros a backward starts from,
        a scalar expanded over the batch): its first half of rows, identical to the other's."""
        if v.kind == "const" and uniform_value(v.data) is not None:
            index = tuple((0, self.H, 1) if k == d else (0, s, 1) for k, s in enumerate(v.shape))
            c = self._const(self.half, self.h_consts, v)
            return self.half.add_node(REGISTRY["slice"], [c], {"index": index},
                                      *REGISTRY["slice"].infer(c, index=index))
        n = v.node
        if n is not None and n.op.name == "expand":
            src = n.inputs[0]
            k = d - (v.ndim - src.ndim)
            if k < 0 or src.shape[k] == 1:
                shape = tuple(self.H if j == d else s for j, s in enumerate(v.shape))
                return self._add(self.half, n, [self._full(src)], dict(n.attrs, shape=shape))
        if n is not None and n.op.kind == "elementwise" and n.op.pure:
            inputs = []
            for i in n.inputs:
                k = d - (v.ndim - i.ndim)
                inputs.append(self._full(i) if k < 0 or i.shape[k] == 1 else self._half_of_free(i, k))
            return self._add(self.half, n, inputs, n.attrs)
        raise _Unsplittable("batch-sized batch-free operand")

    def _full(self, v):
        """v over the whole batch in the half program (each half computes it)."""
        if v.kind in ("const", "literal"):
            return self._const(self.half, self.h_consts, v)
        if id(v) in self.h_full:
            return self.h_full[id(v)]
        if v.kind == "input":
            out = self.half.add_input(v.shape, v.dtype, v.label)
            self.half_inputs.append((self.orig_index[id(v)], False))
        else:
            n = v.node
            if any(self.of(i)[0] != "F" for i in n.inputs) or self.of(v)[0] != "F":
                self.recomputed += v.numel
                if n.op.name == "matmul" or self.recomputed > RECOMPUTE_MAX_ELEMENTS:
                    raise _Unsplittable("costly recomputation over the whole batch")
            out = self._add(self.half, n, [self._full(i) for i in n.inputs], n.attrs)
        self.h_full[id(v)] = out
        return out

    # ------------------------------------------------------------------ the tail program
    def _tail(self, v):
        if v.kind in ("const", "literal"):
            return self._const(self.tail, self.t_consts, v)
        if id(v) in self.t_val:
            return self.t_val[id(v)]
        kind, n = self.of(v), v.node
        if n is not None and n.op.name in VIEWS and self.of(n.inputs[0])[0] == "P":
            kind = ("P", self.of(n.inputs[0])[1])  # a view of a partial: the halves' views add
        if kind[0] == "B" and n.op.name in VIEWS:
            out = self._add(self.tail, n, [self._tail(i) for i in n.inputs], n.attrs)
        elif kind[0] == "B":
            if kind[1] != 0:
                raise _Unsplittable("batched value with its batch inside")
            key = len(self.rows)
            self.rows[id(v)] = (key, v)
            out = self.tail.add_input(v.shape, v.dtype, None)
            self.tail_inputs.append(("rows", key))
        elif kind[0] == "P":
            key = len(self.partials)
            self.partials[id(v)] = (key, v)
            halves = []
            for h in (0, 1):
                halves.append(self.tail.add_input(v.shape, v.dtype, None))
                self.tail_inputs.append(("partial", key, h))
            op = REGISTRY[kind[1]]
            out = self.tail.add_node(op, halves, {}, *op.infer(*halves))
        else:
            out = self._add(self.tail, n, [self._tail(i) for i in n.inputs], n.attrs)
        self.t_val[id(v)] = out
        return out

    @staticmethod
    def _add(graph, n, inputs, attrs):
        shape, dtype = n.op.infer(*inputs, **attrs)
        if dtype is not n.out.dtype:
            raise _Unsplittable(n.op.name)
        return graph.add_node(n.op, inputs, attrs, shape, dtype, n.phase)


def _dims(dims, ndim):
    """A dim attribute as a set of non-negative dims (None: all of them)."""
    if dims is None:
        return set(range(ndim))
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return {d % ndim for d in dims} if ndim else set()


def _half_attrs(n, b, B, H):
    """n's attributes for half the batch at dim ``b`` of its output."""
    name, attrs = n.op.name, n.attrs
    if name in ("reshape", "expand"):
        shape = list(attrs["shape"])
        shape[b] = H
        return dict(attrs, shape=tuple(shape))
    if name == "slice":
        index = list(attrs["index"])
        index[b] = (0, H, 1)
        return dict(attrs, index=tuple(index))
    return attrs


def _const_index(graph):
    """id(constant data) -> the constant's argument index in ``graph`` (the programs a split
    makes share the original constants' arrays)."""
    return {id(c.data): k for k, c in enumerate(graph.constants())}


def lower_split(split, graph, options):
    """Lower the programs of ``split`` and render the driver (batch_split.c.j2). Returns a plan
    standing for the whole program (the original outputs, in-place slots and deferred copies,
    and one workspace laid out as both halves' workspaces, the batched values' rows, the
    partials and the tails' workspaces) and the C source."""
    from . import render_template
    from .lower import Plan, lower

    # (the halves and tails run on two threads at once: their products each on one BLAS thread,
    # never a batched call that would share items out over BLAS's threads: kernels.matmul)
    options = dict(options, one_blas_thread=True)
    half = lower(split.half, dict(options, inplace=()))
    tails = [(lower(g, dict(options, inplace=pairs)), positions)
             for g, positions, pairs in _tail_groups(split.tail, options.get("inplace", ()))]
    offset = 0

    def block(nbytes):
        nonlocal offset
        start = offset
        offset += (nbytes + 63) // 64 * 64
        return start

    half_ws = [block(half.workspace), block(half.workspace)]
    rows, partials = {}, {}
    for (what, key), v in zip(split.half_outputs, split.half.outputs):
        if what == "rows":  # the whole batch's rows; a half writes its own
            rows[key] = (block(2 * v.nbytes), v.nbytes)
        else:
            partials[key] = (block(v.nbytes), block(v.nbytes))
    tail_ws = [block(plan.workspace) for plan, _ in tails]

    n_in, consts = len(graph.inputs), _const_index(graph)
    half_slots = []
    for v, (i, halved) in zip(split.half.inputs, split.half_inputs):
        half_slots.append(f"(char *)args[{i}] + h * {v.nbytes}" if halved else f"args[{i}]")
    half_slots += [f"args[{n_in + consts[id(c.data)]}]" for c in split.half.constants()]
    for (what, key) in split.half_outputs:
        if what == "rows":
            start, size = rows[key]
            half_slots.append(f"ws + {start} + h * {size}")
        else:
            half_slots.append(f"ws + (h ? {partials[key][1]} : {partials[key][0]})")
    in_slots = [f"args[{i}]" for i in range(n_in)]
    for entry in split.tail_inputs:
        in_slots.append(f"ws + {rows[entry[1]][0]}" if entry[0] == "rows"
                        else f"ws + {partials[entry[1]][entry[2]]}")
    out0 = n_in + len(consts)
    tail_slots = [in_slots + [f"args[{n_in + consts[id(c.data)]}]" for c in plan.graph.constants()]
                  + [f"args[{out0 + pos}]" for pos in positions] for plan, positions in tails]
    source = render_template("batch_split.c.j2", [half] + [plan for plan, _ in tails], half=half, tails=[plan for plan, _ in tails],
                             name=graph.name, half_slots=half_slots, tail_slots=tail_slots,
                             half_ws=half_ws, tail_ws=tail_ws,
                             vector_math=all(p.fast_math for p in [half] + [t for t, _ in tails]))
    whole = Plan(graph)
    whole.workspace = offset
    whole.out_specs = [None] * sum(len(positions) for _, positions in tails)
    for plan, positions in tails:
        for spec, pos in zip(plan.out_specs, positions):
            whole.out_specs[pos] = spec
        whole.inplace += [(positions[q], k) for q, k in plan.inplace]
        whole.deferred += tuple(positions[q] for q in plan.deferred)
    whole.inplace.sort()
    whole.deferred = tuple(sorted(whole.deferred))
    return whole, source


TAIL_SHARED_MAX_ELEMENTS = 256  # a value both tails may compute (a scalar, a learning rate)
TAIL_MIN_SHARE = 0.2  # the smaller tail's share of the work, at least, for two tails


def _tail_groups(tail, inplace):
    """The tail as one or two programs that can run at once: ``[(graph, positions, pairs)]``,
    ``positions`` the original output slots of each graph's outputs, ``pairs`` its in-place
    pairs. The write-backs are shared out so that nothing large is computed twice and no program
    reads a tensor the other writes in place (a parameter and its own update stay together);
    all plain outputs stay in the first. One program when no even share exists. Two tails
    update the parameters from both cores, each writing the half of the cache lines that the
    other core read in its half of the batch, at once."""
    from ...passes.dce import dce

    n_out = len(tail.outputs)
    roots = list(tail.outputs) + [v for v, _ in tail.writebacks]
    cones = []
    for v in roots:
        seen, stack = set(), [v]
        while stack:
            u = stack.pop()
            if id(u) not in seen and (u.node is not None or u.kind == "input"):
                seen.add(id(u))
                stack.extend(u.node.inputs if u.node is not None else ())
        cones.append(seen)
    by_id = {id(n.out): n.out for n in tail.nodes}
    by_id.update({id(v): v for v in tail.inputs})
    parent = list(range(len(roots)))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def join(a, b):
        parent[find(a)] = find(b)

    for a in range(1, n_out):
        join(a, 0)
    owner = {}
    for a, cone in enumerate(cones):
        for u in cone:
            v = by_id[u]
            if v.kind != "input" and v.numel > TAIL_SHARED_MAX_ELEMENTS:
                if u in owner:
                    join(a, owner[u])
                owner[u] = a
    for j, k in inplace:  # a write into input k's storage goes with every reader of input k
        if k >= 0:
            for a, cone in enumerate(cones):
                if id(tail.inputs[k]) in cone:
                    join(n_out + j, a)
    groups = {}
    for a in range(len(roots)):
        groups.setdefault(find(a), []).append(a)
    work = {r: sum(by_id[u].numel for a in members for u in cones[a] if by_id[u].kind != "input")
            for r, members in groups.items()}
    bins, loads = [[], []], [0, 0]
    for r in sorted(groups, key=lambda r: (0 in groups[r], work[r]), reverse=True):
        b = 0 if (0 in groups[r] or loads[0] <= loads[1]) else 1
        bins[b] += groups[r]
        loads[b] += work[r]
    pairs = dict(inplace)
    if not bins[1] or min(loads) < TAIL_MIN_SHARE * sum(loads):
        return [(tail, list(range(len(roots))), list(inplace))]
    out = []
    for members in bins:
        members = sorted(members)
        g = tail.clone()
        g.outputs = [g.outputs[a] for a in members if a < n_out]
        g.saved = [v for v in g.saved if any(v is o for o in g.outputs)]
        g.writebacks = [g.writebacks[a - n_out] for a in members if a >= n_out]
        dce(g)
        local = [(q, pairs[a - n_out]) for q, a in enumerate(m for m in members if m >= n_out)
                 if a - n_out in pairs]
        out.append((g.renumber(), members, local))
    return out

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

import numpy as np

from ...ir.graph import Graph
from ...ir.passes.simplify import uniform_value
from ...ops.registry import REGISTRY

# The auto rule (backends/c.resolve_split), measured on tiny's MLP (docs/performance.md): the
# halves' products must outweigh the partials passed between the cores (a weight gradient's
# partial is read by the other core, and the parameters it updates were read by both, so every
# one of their cache lines crosses between the cores each step). Batch 32 (42 multiply-adds of
# the half per partial element) lost, 62 -> 68 us; batch 64 (84) won, 118 -> 90 us.
SPLIT_MIN_PRODUCT_WORK = 1 << 19  # multiply-adds of one half's products, at least
SPLIT_WORK_PER_PARTIAL = 64  # ... and this many per element of the partials
RECOMPUTE_MAX_ELEMENTS = 1 << 16  # batch-dependent values a half may compute over the whole batch
VIEWS = ("reshape", "permute", "expand", "slice", "flip")
MERGE = {"sum": "add"}  # a reduction over the batch -> how two halves' partials combine


class _Unsplittable(Exception):
    pass


class Split:
    """The two programs and how the driver (batch_split.c.j2) feeds them.

    ``half_inputs``: per input of ``half``, ``(original input index, halved)``; ``half_consts``
    and ``tail_consts``: per constant of each program, the original constant's index;
    ``half_outputs``: per output of ``half``, ``("rows", key)`` (a batched value's rows, bytes
    per half at the key's buffer) or ``("partial", key)``; ``tail_inputs``: per input of
    ``tail`` after the original inputs, ``("rows", key)`` or ``("partial", key, h)``."""

    def __init__(self, batch, half, tail, half_inputs, half_outputs, tail_inputs, half_consts,
                 tail_consts, products, partial_elements):
        self.batch = batch
        self.half = half
        self.tail = tail
        self.half_inputs = half_inputs
        self.half_outputs = half_outputs
        self.tail_inputs = tail_inputs
        self.half_consts = half_consts
        self.tail_consts = tail_consts
        self.products = products  # multiply-adds of each product of the half program
        self.partial_elements = partial_elements


def split_batch(graph):
    """A Split of ``graph`` over its batch, or None when its rows are not provably independent
    (see the module docstring)."""
    try:
        return _Splitter(graph).run()
    except _Unsplittable:
        return None


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
        self.const_index = {id(c): i for i, c in enumerate(graph.constants())}
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
        if n.op.random:
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
        if kind == "reduce" and "dim" in n.attrs:
            reduced = _dims(n.attrs["dim"], n.inputs[0].ndim)
            if b in reduced:
                if name not in MERGE:
                    raise _Unsplittable(name)
                return ("P", MERGE[name])
            return ("B", b if n.attrs.get("keepdim") else b - sum(r < b for r in reduced))
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
        self.h_consts, self.t_consts = {}, {}
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
        products = [_product_work(n) for n in self.half.nodes if n.op.name == "matmul"]
        self.half.renumber()
        self.tail.renumber()
        return Split(self.B, self.half, self.tail, self.half_inputs, self.half_outputs,
                     self.tail_inputs, _const_map(self.half, self.h_consts),
                     _const_map(self.tail, self.t_consts), products,
                     sum(v.numel for key, v in self.partials.values()))

    def _const(self, graph, memo, v):
        if v.kind == "literal":
            return v
        if id(v) not in memo:
            memo[id(v)] = (graph.const(v.data, v.dtype), self.const_index[id(v)])
        return memo[id(v)][0]

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
        if n is not None and n.op.kind == "elementwise" and not n.op.random:
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


def _product_work(node):
    """Multiply-adds of a matmul node."""
    (m, k), cols = node.inputs[0].shape[-2:], node.inputs[1].shape[-1]
    return int(np.prod(node.out.shape[:-2], dtype=np.int64)) * m * k * cols


def _dims(dims, ndim):
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


def _const_map(graph, memo):
    by_id = {id(c): k for c, k in memo.values()}
    return [by_id[id(c)] for c in graph.constants()]


def lower_split(split, graph, options):
    """Lower both programs of ``split`` and render the driver (batch_split.c.j2): returns the tail's
    plan, standing for the whole program (its outputs, in-place slots and the one workspace,
    laid out as both halves' workspaces, the batched values' rows, the partials and the
    tail's workspace), and the C source."""
    from . import render_template
    from .lower import lower

    half = lower(split.half, dict(options, inplace=()))
    tail = lower(split.tail, options)
    offset = 0

    def block(nbytes):
        nonlocal offset
        start = offset
        offset += (nbytes + 63) // 64 * 64
        return start

    half_ws = [block(half.workspace), block(half.workspace)]
    outs = split.half.outputs
    rows, partials = {}, {}
    for (what, key), v in zip(split.half_outputs, outs):
        if what == "rows":  # the whole batch's rows; a half writes its own
            rows[key] = (block(2 * v.nbytes), v.nbytes)
        else:
            partials[key] = (block(v.nbytes), block(v.nbytes))
    tail_ws = block(tail.workspace)

    n_in = len(graph.inputs)
    half_slots = []
    for v, (i, halved) in zip(split.half.inputs, split.half_inputs):
        half_slots.append(f"(char *)args[{i}] + h * {v.nbytes}" if halved else f"args[{i}]")
    half_slots += [f"args[{n_in + c}]" for c in split.half_consts]
    for (what, key) in split.half_outputs:
        if what == "rows":
            start, size = rows[key]
            half_slots.append(f"ws + {start} + h * {size}")
        else:
            half_slots.append(f"ws + (h ? {partials[key][1]} : {partials[key][0]})")
    tail_slots = [f"args[{i}]" for i in range(n_in)]
    for entry in split.tail_inputs:
        tail_slots.append(f"ws + {rows[entry[1]][0]}" if entry[0] == "rows"
                          else f"ws + {partials[entry[1]][entry[2]]}")
    tail_slots += [f"args[{n_in + c}]" for c in split.tail_consts]
    n_consts = len(graph.constants())
    tail_slots += [f"args[{n_in + n_consts + k}]" for k in range(len(tail.out_specs))]
    source = render_template("batch_split.c.j2", half=half, tail=tail, name=graph.name,
                             half_slots=half_slots, tail_slots=tail_slots, half_ws=half_ws,
                             tail_ws=tail_ws, vector_math=tail.fast_math and half.fast_math)
    tail.workspace = offset
    return tail, source

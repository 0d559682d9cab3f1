"""Bucketing of all-reduces: gradients all-reduced one by one (``for p in params:
dist.all_reduce(p.grad)`` inside a compiled step) become a few all-reduces of flat buffers, as
DDP's buckets are. A collective costs a latency per call (tens of microseconds between
processes, more between machines) on top of its bytes, so fewer, larger messages are faster.

All-reduces of one reduction, group and dtype are merged when nothing reads a result before the
last of them: the merged call takes their place (flatten, concatenate, reduce, slice, reshape
back), so every rank still issues the same collectives in the same order. Buckets hold at most
``BUCKET_BYTES``.

>>> import tracegrad as tg
>>> g = tg.compile(lambda a, b: (a + 1, b * 2), backend="interpreter").inspect(tg.ones(2), tg.ones(3)).graph
>>> bucket_collectives(g) is g  # (no all-reduce here: nothing to merge)
True
"""
from __future__ import annotations

from ...ops.collectives import ALL_REDUCE
from ...ops.movement import CAT, RESHAPE, SLICE

BUCKET_BYTES = 25 * 2**20  # PyTorch DDP's bucket size
_NEVER = 1 << 62  # the first use of a value nothing reads


def bucket_collectives(graph):
    """Merge independent all-reduces into buckets (in place); returns ``graph``."""
    position = {id(n): k for k, n in enumerate(graph.nodes)}
    first_use = _first_uses(graph, position)
    groups = {}
    for n in graph.nodes:
        if n.op is ALL_REDUCE:
            key = (n.attrs["reduction"], n.attrs["group"], n.out.dtype)
            groups.setdefault(key, []).append(n)
    replacements = {}
    for nodes in groups.values():
        for bucket in _buckets(nodes, position, first_use):
            replacements[id(bucket[-1])] = bucket
    if not replacements:
        return graph
    merged_away = {id(n) for bucket in replacements.values() for n in bucket}
    subst, kept = {}, []
    for n in graph.nodes:
        bucket = replacements.get(id(n))
        if bucket is not None:
            kept.extend(_merged(graph, bucket, subst))
        elif id(n) not in merged_away:
            kept.append(n)
    graph.nodes = kept
    graph.substitute(subst)
    return graph


def _first_uses(graph, position):
    """{id(value): position of its first reader} (outputs and write-backs read at the end)."""
    end = len(graph.nodes)
    first = {}
    for k, n in enumerate(graph.nodes):
        for v in n.inputs:
            first.setdefault(id(v), k)
    for v in list(graph.outputs) + [w for w, _ in graph.writebacks]:
        first.setdefault(id(v), end)
    return first


def _buckets(nodes, position, first_use):
    """Runs of ``nodes`` (in program order) that may be merged at the last one's place: no
    result read before that place, at most BUCKET_BYTES each; runs of one are left alone."""
    out, run, size = [], [], 0
    for n in nodes:
        nbytes = n.out.nbytes
        read_before = any(first_use.get(id(m.out), _NEVER) <= position[id(n)] for m in run)
        if run and (size + nbytes > BUCKET_BYTES or read_before):
            if len(run) > 1:
                out.append(run)
            run, size = [], 0
        run.append(n)
        size += nbytes
    if len(run) > 1:
        out.append(run)
    return out


def _merged(graph, bucket, subst):
    """The nodes of one bucket's all-reduce: flatten each input, concatenate, reduce once,
    slice each result back out and give it its shape; ``subst`` maps the old results."""
    from ..ir.graph import Node, Value

    made = []

    def add(op, inputs, attrs, shape, dtype):
        out = Value(shape, dtype, kind="node")
        out.id = next(graph._ids)
        node = Node(op, inputs, attrs, out, bucket[-1].phase)
        out.node = node
        made.append(node)
        return out

    dtype = bucket[0].out.dtype
    flats = [add(RESHAPE, [n.inputs[0]], {"shape": (n.out.numel,)}, (n.out.numel,), dtype) for n in bucket]
    total = sum(n.out.numel for n in bucket)
    joined = add(CAT, flats, {"dim": 0}, (total,), dtype)
    reduced = add(ALL_REDUCE, [joined], dict(bucket[0].attrs), (total,), dtype)
    start = 0
    for n in bucket:
        stop = start + n.out.numel
        part = add(SLICE, [reduced], {"index": ((start, stop, 1),)}, (n.out.numel,), dtype)
        subst[id(n.out)] = add(RESHAPE, [part], {"shape": n.out.shape}, n.out.shape, dtype)
        start = stop
    return made

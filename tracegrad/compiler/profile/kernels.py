"""What each kernel of a lowered C program is, before it runs: its label, the IR nodes it
computes, its floating-point work and the bytes it must move, and where its code is in the
generated source. Static facts of the plan (backends/c/lower.py), timed by ``timing.py``.

- **FLOPs** of a matrix product: ``2 m n k`` per product, exact (a multiply-add is two, as
  BLAS benchmarks count). Of a loop kernel: one per element per fused operation (each
  elementwise op and each reduction step; ``exp`` counts one like ``+``): a measure of work,
  not of instructions. Other kernels (index, gather, im2col, ...) count none.
- **Bytes**: the least traffic the kernel can cause, each distinct element it reads read once
  and each it writes written once. For a loop kernel, from its loads and stores (an operand
  broadcast along a loop counts the elements its index reaches); for others, from the IR: the
  node's operands (a broadcast operand at the size of what it views) and its result.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ...core import dtypes
from ..backends.c.lower import Plan, is_view, matmul_work

# bytes of the C types a plan's buffers and loads use: each dtype's c_type and itemsize
_CTYPE_BYTES = {d.c_type: d.itemsize for d in dtypes.ALL}
_LOOP_VAR = re.compile(r"\bi\d+\b")
_SHARED_CALL = re.compile(r"^\s*(tg_shared\d+)\(")


@dataclass(frozen=True)
class KernelInfo:
    """One kernel of a plan: ``kind`` (``loop``, ``product`` or the raw kernel's op), a short
    ``label``, the IR ``nodes`` it computes (``"%12 mul"``), ``flops``, ``bytes``,
    ``blas_calls`` (products: how many GEMM calls it makes) and its ``line``..``end_line`` in
    the source (1-based, inclusive; the shared function's when its code is one)."""

    index: int
    kind: str
    label: str
    nodes: tuple[str, ...]
    flops: int
    bytes: int
    blas_calls: int
    line: int
    end_line: int


def describe(plan: Plan, source: str) -> list[KernelInfo]:
    """A KernelInfo per kernel of ``plan`` (lower.Plan), located in ``source`` (its render)."""
    spans = kernel_lines(source, len(plan.kernels))
    origins = getattr(plan, "kernel_nodes", None)
    if origins is None or len(origins) != len(plan.kernels):
        origins = [[] for _ in plan.kernels]  # (a plan built without the record: unnamed)
    ctypes = {b.name: b.ctype for b in plan.buffers}
    out = []
    for k, (kernel, nodes) in enumerate(zip(plan.kernels, origins)):
        products = [n for n in nodes if n.op.name == "matmul"]
        if kernel["kind"] == "loop":
            kind, flops, nbytes, calls = "loop", _loop_flops(kernel), _loop_bytes(kernel, ctypes), 0
        elif products:
            work = [matmul_work(n) for n in products]
            kind, flops, calls = "product", sum(2 * c * e for c, e in work), sum(c for c, _ in work)
            nbytes = _node_bytes(products)
        else:
            kind, flops, calls = kernel.get("comment") or "raw", 0, 0
            nbytes = _node_bytes(nodes)
        out.append(KernelInfo(k, kind, _label(kind, kernel, nodes), tuple(_node_names(nodes)),
                              int(flops), int(nbytes), calls, *spans[k]))
    return out


def kernel_lines(source: str, count: int) -> list[tuple[int, int]]:
    """(first line, last line) of each of ``count`` kernels in a rendered program: from its
    ``/* kernel k: ... */`` comment to the line before the next (function.c.j2); a kernel that
    is a call of a shared function (backends/c/shared.py) points at that function instead."""
    lines = source.split("\n")
    starts = {}
    end = len(lines)
    for no, text in enumerate(lines, 1):
        m = re.match(r"\s*/\* kernel (\d+): ", text)
        if m and int(m.group(1)) not in starts:
            starts[int(m.group(1))] = no
        elif starts and re.match(r"\s*(tg_prof_mark\(\d+\); )?return tg_fail;", text):
            end = no - 1
            break
    defs = {m.group(1): no for no, text in enumerate(lines, 1)
            if (m := re.match(r"static __attribute__\(\(noinline\)\) void (tg_shared\d+)\(", text))}
    spans = []
    for k in range(count):
        first = starts.get(k, 0)
        last = starts.get(k + 1, end + 1) - 1 if first else 0
        body = lines[first:last] if first else []
        call = [m.group(1) for text in body if (m := _SHARED_CALL.match(text))]
        if len(body) == 1 and call and call[0] in defs:
            first = defs[call[0]]
            last = next((no for no in range(first, len(lines) + 1) if lines[no - 1] == "}"), first)
        spans.append((first, last))
    return spans


def _node_names(nodes) -> list[str]:
    return [f"{n.out.ref()} {n.op.name}" for n in nodes]


def _label(kind: str, kernel: dict, nodes) -> str:
    if kind == "product":
        n = next(n for n in nodes if n.op.name == "matmul")
        (m, k), cols = n.inputs[0].shape[-2:], n.inputs[1].shape[-1]
        batch = "x".join(map(str, n.out.shape[:-2]))
        return f"matmul {batch + ' x ' if batch else ''}{m}x{k} @ {k}x{cols}"
    if not nodes:
        return "copy" if kind == "loop" and kernel.get("loads") else "fill" if kind == "loop" else kind
    ops = []
    for n in nodes:
        if n.op.name not in ops:
            ops.append(n.op.name)
    text = "+".join(ops[:4]) + ("+..." if len(ops) > 4 else "")
    shape = "x".join(map(str, nodes[-1].out.shape)) or "scalar"
    return f"{text} [{shape}]" if kind == "loop" else f"{kind} [{shape}]"


def _extent(kernel: dict, index: str) -> int:
    """Distinct elements an index expression reaches in a loop kernel: the product of the
    extents of the loop variables it uses."""
    used = set(_LOOP_VAR.findall(index))
    return int(np.prod([l["extent"] for l in kernel["loops"] if l["var"] in used], dtype=np.int64))


def _loop_flops(kernel: dict) -> int:
    if not kernel["loads"]:
        return 0  # a fill
    elements = int(np.prod([l["extent"] for l in kernel["loops"]], dtype=np.int64))
    return elements * (len(kernel["stmts"]) + len(kernel["accs"]))


def _loop_bytes(kernel: dict, ctypes: dict) -> int:
    total = 0
    for ld in kernel["loads"]:
        buf, _, index = ld["src"].partition("[")
        total += _extent(kernel, index) * _CTYPE_BYTES.get(ld["ctype"], 4)
    for st in kernel["stores"]:
        buf, _, index = st["dst"].partition("[")
        total += _extent(kernel, index) * _CTYPE_BYTES.get(ctypes.get(buf, ""), 4)
    for acc in kernel["accs"]:
        _, _, index = acc["out"].partition("[")
        total += _extent(kernel, index) * _CTYPE_BYTES.get(acc["ctype"], 4)
    return total


def _node_bytes(nodes) -> int:
    """Operands read from outside ``nodes`` (each at most the size of the stored value it views)
    and every result, once each."""
    inside = {id(n.out) for n in nodes}
    seen, total = set(), 0
    for n in nodes:
        for v in n.inputs:
            if id(v) in inside or id(v) in seen or v.kind == "literal":
                continue
            seen.add(id(v))
            total += min(v.nbytes, _stored(v).nbytes)
        total += n.out.nbytes
    return total


def _stored(v):
    """The value whose storage ``v`` reads (through reshape, expand, permute, slice, flip)."""
    while v.kind == "node" and is_view(v.node.op):
        v = v.node.inputs[0]
    return v

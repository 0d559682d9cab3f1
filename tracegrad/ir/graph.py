"""The IR: a graph of typed values and nodes (one registry op each), printed as a typed SSA
listing, verified, exported to DOT and viewed as a networkx graph.

A listing reads like this (``%0`` are values, ``f32[32,64]`` their type)::

    graph(%0:f32[4,3] x, %1:f32[3] lifted):
      %2:f32[4,3] = mul %0 %1            # saved
      %3:f32[] = sum %2 dim=(0, 1) keepdim=False
      return %3

Inputs are marked ``arg NAME``, ``lifted`` (a tensor the function read without receiving
it), ``grad`` (an incoming gradient), ``saved`` (a value the forward saved) or ``seed``;
``%5 -> w`` lines at the end are in-place write-backs into user tensors.
"""
from __future__ import annotations

import itertools

import numpy as np


class Value:
    """An SSA value: ``shape`` (tuple of ints), ``dtype`` (tracegrad DType) and its producer
    ``node`` (None for inputs, constants and literals)."""

    __slots__ = ("id", "shape", "dtype", "node", "kind", "label", "data", "__weakref__")

    def __init__(self, shape, dtype, node=None, kind="node", label=None, data=None):
        self.id = -1
        self.shape = tuple(shape)
        self.dtype = dtype
        self.node = node
        self.kind = kind  # node | input | const | literal
        self.label = label  # input role, e.g. "arg x", "lifted", "grad", "seed"
        self.data = data  # ndarray for constants, Python scalar for literals

    @property
    def ndim(self):
        return len(self.shape)

    def type_str(self):
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}]"

    def ref(self):
        if self.kind == "literal":
            v = self.data
            text = str(bool(v)) if self.dtype.short == "b8" else str(v)
            return f"{text}:{self.dtype.short}"
        return f"%{self.id}"

    def __repr__(self):
        return f"{self.ref()}:{self.type_str()}"


class Node:
    __slots__ = ("op", "inputs", "attrs", "out")

    def __init__(self, op, inputs, attrs, out):
        self.op = op
        self.inputs = list(inputs)
        self.attrs = dict(attrs)
        self.out = out

    def __repr__(self):
        return f"<Node {self.op.name} -> {self.out.ref()}>"


def _fmt_attr(v):
    if hasattr(v, "short") and hasattr(v, "np"):
        return v.short
    if isinstance(v, float):
        return repr(v)
    return repr(v) if not isinstance(v, tuple) else "(" + ", ".join(_fmt_attr(x) for x in v) + (",)" if len(v) == 1 else ")")


class Graph:
    """A program: ``inputs`` (Values), ``nodes`` in execution order, ``outputs`` and
    ``writebacks`` (list of (Value, description)) for in-place updates of user tensors."""

    def __init__(self, name="graph"):
        self.name = name
        self.inputs = []
        self.nodes = []
        self.outputs = []
        self.writebacks = []
        self.saved = set()  # values the forward keeps for the backward (marked in listings)
        self._ids = itertools.count()

    # ------------------------------------------------------------------ building
    def add_input(self, shape, dtype, label):
        v = Value(shape, dtype, kind="input", label=label)
        v.id = next(self._ids)
        self.inputs.append(v)
        return v

    def const(self, array, dtype):
        if array.ndim == 0:
            # keep the NumPy scalar: it prints as its own precision (0.1, not 0.10000000149)
            return Value((), dtype, kind="literal", data=array[()])
        v = Value(array.shape, dtype, kind="const", data=array)
        v.id = next(self._ids)
        return v

    def add_node(self, op, inputs, attrs, shape, dtype):
        out = Value(shape, dtype, kind="node")
        out.id = next(self._ids)
        node = Node(op, inputs, attrs, out)
        out.node = node
        self.nodes.append(node)
        return out

    def renumber(self):
        """Give values consecutive ids in listing order (inputs, constants, nodes)."""
        counter = itertools.count()
        for v in self.inputs:
            v.id = next(counter)
        for c in self.constants():
            c.id = next(counter)
        for n in self.nodes:
            n.out.id = next(counter)
        self._ids = counter
        return self

    def constants(self):
        seen, out = set(), []
        for n in self.nodes:
            for v in n.inputs:
                if v.kind == "const" and id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out

    # ------------------------------------------------------------------ views
    def __str__(self):
        ins = ", ".join(f"{v.ref()}:{v.type_str()}" + (f" {v.label}" if v.label else "")
                        for v in self.inputs)
        lines = [f"{self.name}({ins}):"]
        for c in self.constants():
            lines.append(f"  {c.ref()}:{c.type_str()} = const")
        for n in self.nodes:
            args = " ".join(v.ref() for v in n.inputs)
            attrs = " ".join(f"{k}={_fmt_attr(v)}" for k, v in n.attrs.items())
            text = f"  {n.out.ref()}:{n.out.type_str()} = {n.op.name}"
            text += f" {args}" if args else ""
            text += f" {attrs}" if attrs else ""
            if n.out in self.saved:
                text = f"{text:<44} # saved"
            lines.append(text)
        lines.append("  return " + (", ".join(v.ref() for v in self.outputs) or "()"))
        for v, desc in self.writebacks:
            lines.append(f"  {desc} <- {v.ref()}")
        return "\n".join(lines)

    def op_counts(self):
        counts = {}
        for n in self.nodes:
            counts[n.op.name] = counts.get(n.op.name, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def to_networkx(self):
        import networkx as nx

        g = nx.DiGraph()
        for v in self.inputs:
            g.add_node(v.id, value=v, kind="input")
        for n in self.nodes:
            g.add_node(n.out.id, value=n.out, kind="node", op=n.op.name)
            for i in n.inputs:
                if i.kind in ("input", "node", "const"):
                    if i.kind == "const" and i.id not in g:
                        g.add_node(i.id, value=i, kind="const")
                    g.add_edge(i.id, n.out.id)
        return g

    def to_dot(self):
        lines = [f'digraph "{self.name}" {{', "  rankdir=TB;", '  node [fontname="monospace"];']
        for v in self.inputs:
            lines.append(f'  v{v.id} [shape=box, label="%{v.id} {v.label or ""}\\n{v.type_str()}"];')
        for c in self.constants():
            lines.append(f'  v{c.id} [shape=box, style=dashed, label="const\\n{c.type_str()}"];')
        for n in self.nodes:
            style = ', style=filled, fillcolor="#ffe4b5"' if n.out in self.saved else ""
            lines.append(f'  v{n.out.id} [label="%{n.out.id} = {n.op.name}\\n{n.out.type_str()}"{style}];')
            for i in n.inputs:
                if i.kind != "literal":
                    lines.append(f"  v{i.id} -> v{n.out.id};")
        for k, v in enumerate(self.outputs):
            lines.append(f'  out{k} [shape=plaintext, label="return {k}"]; v{v.id} -> out{k};')
        lines.append("}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ checks
    def verify(self):
        """Check SSA form and re-infer every node's type; raise IRError on the first problem."""
        defined = {id(v) for v in self.inputs}
        for n in self.nodes:
            for i in n.inputs:
                if i.kind in ("const", "literal"):
                    continue
                if id(i) not in defined:
                    raise IRError(f"{n.out.ref()} = {n.op.name} uses {i.ref()} before it is defined")
            if n.out.node is not n:
                raise IRError(f"{n.out.ref()} does not point back to its node")
            if id(n.out) in defined:
                raise IRError(f"{n.out.ref()} is defined twice")
            shape, dtype = n.op.infer(*n.inputs, **n.attrs)
            if tuple(shape) != n.out.shape or dtype is not n.out.dtype:
                raise IRError(
                    f"{n.out.ref()} = {n.op.name}: recorded type {n.out.type_str()} but the op "
                    f"infers {dtype.short}[{','.join(map(str, shape))}]"
                )
            defined.add(id(n.out))
        for v in list(self.outputs) + [w for w, _ in self.writebacks]:
            if v.kind not in ("const", "literal") and id(v) not in defined:
                raise IRError(f"output {v.ref()} is not defined in the graph")
        return True


class IRError(Exception):
    """The IR is malformed (raised by Graph.verify)."""


def literal_array(v):
    return np.asarray(v.data, dtype=v.dtype.np)

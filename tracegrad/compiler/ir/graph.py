"""The IR: a graph of typed values and nodes (one registry op each), printed as a typed SSA
listing, verified, exported to DOT and viewed as a networkx graph.

A listing reads like this (``%0`` are values, ``f32[5,3]`` their type)::

    step(%0:f32[5,3] arg x, %1:f32[3,2] lifted W):
      %2:f32[5,2] = matmul %0 %1
      %3:f32[5,2] = tanh %2                      # saved
      %4:f32[] = sum %3 dim=(0, 1) keepdim=False
      %5:f32[3,2] = mul 0.1:f32 %1
      return %4
      save %0, %3
      W <- %5

- The header lists the inputs in the order the program receives them. Each carries its role:
  ``arg NAME`` (an argument of the function), ``lifted NAME`` (a tensor the function read
  without receiving it: a global, a closure variable, a module parameter, optimizer state;
  ``NAME.grad`` is the storage of its ``.grad``), ``seed`` (a random seed drawn at every call);
  in a backward program ``saved %K`` (the forward's value ``%K``, kept for the backward) and
  ``grad of %K`` (the incoming gradient of the forward's output ``%K``).
- ``%N:TYPE = OP ARGS ATTRS`` is one node; ``1.0:f32`` is a literal scalar, ``%N:TYPE = const
  [...]`` a constant array (its values are shown when it has at most 8 elements).
- ``return`` lists the outputs; ``save`` (forward programs only) the values returned after
  them for the backward; nodes whose value is saved are marked ``# saved``.
- Lines after ``return`` write results back into the user's tensors: ``W <- %5`` copies into
  the storage of ``W`` (an in-place update), ``W.grad = %7`` gives ``W`` a new ``.grad``.

A program's executable returns ``outputs`` (user outputs, then saved values) followed by one
array per write-back, in listing order.
"""
from __future__ import annotations

import itertools

import numpy as np


class Value:
    """An SSA value: ``shape`` (tuple of ints), ``dtype`` (tracegrad DType) and its producer
    ``node`` (None for inputs, constants and literals). ``kind`` is one of ``node``, ``input``,
    ``const`` (an ndarray in ``data``) or ``literal`` (a 0-d NumPy scalar in ``data``)."""

    __slots__ = ("id", "shape", "dtype", "node", "kind", "label", "data", "__weakref__")

    def __init__(self, shape, dtype, node=None, kind="node", label=None, data=None):
        self.id = -1
        self.shape = tuple(shape)
        self.dtype = dtype
        self.node = node
        self.kind = kind
        self.label = label  # input role, e.g. "arg x", "lifted W", "grad of %4", "seed"
        self.data = data

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def numel(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self):
        return self.numel * self.dtype.itemsize

    @property
    def is_constant(self):
        return self.kind in ("const", "literal")

    def type_str(self):
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}]"

    def ref(self):
        if self.kind == "literal":
            return f"{_fmt_scalar(self.data, self.dtype)}:{self.dtype.short}"
        return f"%{self.id}"

    def __repr__(self):
        return f"{self.ref()}:{self.type_str()}"


class Node:
    """One op application: ``op`` (an OpDef of the registry), ``inputs`` (Values), ``attrs``
    and the Value ``out`` it defines. ``phase`` is ``forward`` or ``backward`` (recorded by the
    differentiation pass; the partitioner's annotation-based choice reads it)."""

    __slots__ = ("op", "inputs", "attrs", "out", "phase")

    def __init__(self, op, inputs, attrs, out, phase="forward"):
        self.op = op
        self.inputs = list(inputs)
        self.attrs = dict(attrs)
        self.out = out
        self.phase = phase

    def __repr__(self):
        return f"<Node {self.op.name} -> {self.out.ref()}>"


def _fmt_scalar(v, dtype):
    if dtype.short == "b8":
        return str(bool(v))
    if dtype.is_floating_point:
        return str(np.asarray(v, dtype=dtype.np)[()])  # shortest repr at its own precision
    return str(int(v))


def _fmt_attr(v):
    if hasattr(v, "short") and hasattr(v, "np"):
        return v.short
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt_attr(x) for x in v) + (",)" if len(v) == 1 else ")")
    return repr(v)


def _fmt_const(v):
    if v.numel > 8:
        return "const"
    flat = [_fmt_scalar(x, v.dtype) for x in np.asarray(v.data).reshape(-1)]
    if v.ndim == 0:
        return f"const {flat[0]}"
    return f"const [{', '.join(flat)}]"


class Graph:
    """A program: ``inputs`` (Values), ``nodes`` in execution order, ``outputs``, ``saved``
    (the trailing outputs a forward returns for its backward) and ``writebacks`` (list of
    (Value, description)) for in-place updates of user tensors."""

    def __init__(self, name="graph"):
        self.name = name
        self.inputs = []
        self.nodes = []
        self.outputs = []
        self.writebacks = []
        self.saved = []  # a suffix of ``outputs``: values the forward keeps for the backward
        self.phase = "forward"  # phase given to nodes added from now on
        self._ids = itertools.count()

    # ------------------------------------------------------------------ building
    def add_input(self, shape, dtype, label):
        v = Value(shape, dtype, kind="input", label=label)
        v.id = next(self._ids)
        self.inputs.append(v)
        return v

    def const(self, array, dtype):
        """A constant: 0-d arrays become literals (printed inline), others ``const`` values."""
        array = np.asarray(array, dtype=dtype.np)
        if array.ndim == 0:
            # keep the NumPy scalar: it prints at its own precision (0.1, not 0.10000000149)
            return Value((), dtype, kind="literal", data=array[()])
        if array.flags.writeable:  # constants are shared by every run: never let one be written
            array = np.array(array, copy=True)
            array.setflags(write=False)
        v = Value(array.shape, dtype, kind="const", data=array)
        v.id = next(self._ids)
        return v

    def literal(self, value, dtype):
        return Value((), dtype, kind="literal", data=np.asarray(value, dtype=dtype.np)[()])

    def add_node(self, op, inputs, attrs, shape, dtype, phase=None):
        out = Value(shape, dtype, kind="node")
        out.id = next(self._ids)
        node = Node(op, inputs, attrs, out, phase or self.phase)
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
        """The ``const`` values used by nodes, outputs or write-backs, in order of first use."""
        seen, out = set(), []
        uses = [v for n in self.nodes for v in n.inputs]
        uses += list(self.outputs) + [v for v, _ in self.writebacks]
        for v in uses:
            if v.kind == "const" and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out

    # ------------------------------------------------------------------ rewriting
    def substitute(self, mapping):
        """Replace every use of value ``old`` by ``mapping[id(old)]`` (chains are followed)."""
        if not mapping:
            return self

        def get(v):
            while id(v) in mapping:
                v = mapping[id(v)]
            return v

        for n in self.nodes:
            n.inputs = [get(i) for i in n.inputs]
        self.outputs = [get(v) for v in self.outputs]
        self.saved = [get(v) for v in self.saved]
        self.writebacks = [(get(v), d) for v, d in self.writebacks]
        return self

    def users(self):
        """id(value) -> number of uses (node inputs, outputs and write-backs)."""
        counts = {}
        for v in [i for n in self.nodes for i in n.inputs] + self.outputs + [w for w, _ in self.writebacks]:
            counts[id(v)] = counts.get(id(v), 0) + 1
        return counts

    def signature(self):
        """A cheap fingerprint of the structure: equal before and after a pass that changed
        nothing."""
        return (tuple((id(n), n.op.name, tuple(id(i) for i in n.inputs), repr(n.attrs))
                      for n in self.nodes),
                tuple(id(v) for v in self.outputs), tuple(id(v) for v, _ in self.writebacks))

    def clone(self, name=None):
        """A deep copy sharing no Values or Nodes (constants' data is shared, never written)."""
        new = Graph(name or self.name)
        m = {}
        for v in self.inputs:
            m[id(v)] = new.add_input(v.shape, v.dtype, v.label)

        def get(v):
            if v.kind == "literal":
                return v
            if v.kind == "const" and id(v) not in m:
                m[id(v)] = new.const(v.data, v.dtype)
            return m[id(v)]

        for n in self.nodes:
            m[id(n.out)] = new.add_node(n.op, [get(i) for i in n.inputs], n.attrs, n.out.shape,
                                        n.out.dtype, n.phase)
        new.outputs = [get(v) for v in self.outputs]
        new.saved = [get(v) for v in self.saved]
        new.writebacks = [(get(v), d) for v, d in self.writebacks]
        return new.renumber()

    # ------------------------------------------------------------------ views
    def __str__(self):
        ins = ", ".join(f"{v.ref()}:{v.type_str()}" + (f" {v.label}" if v.label else "")
                        for v in self.inputs)
        lines = [f"{self.name}({ins}):"]
        for c in self.constants():
            lines.append(f"  {c.ref()}:{c.type_str()} = {_fmt_const(c)}")
        saved = {id(v) for v in self.saved}
        for n in self.nodes:
            args = " ".join(v.ref() for v in n.inputs)
            attrs = " ".join(f"{k}={_fmt_attr(v)}" for k, v in n.attrs.items())
            text = f"  {n.out.ref()}:{n.out.type_str()} = {n.op.name}"
            text += f" {args}" if args else ""
            text += f" {attrs}" if attrs else ""
            if id(n.out) in saved:
                text = f"{text:<44} # saved"
            lines.append(text)
        user = self.outputs[:len(self.outputs) - len(self.saved)]
        lines.append("  return " + (", ".join(v.ref() for v in user) or "()"))
        if self.saved:
            lines.append("  save " + ", ".join(v.ref() for v in self.saved))
        for v, desc in self.writebacks:
            lines.append(f"  {desc} {v.ref()}" if desc.endswith(("<-", "=")) else f"  {desc} <- {v.ref()}")
        return "\n".join(lines)

    def op_counts(self):
        counts = {}
        for n in self.nodes:
            counts[n.op.name] = counts.get(n.op.name, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def to_networkx(self):
        """A ``networkx.DiGraph`` over value ids: one graph node per input, constant and op
        node (attributes ``value``, ``kind``, ``op``, ``phase``, ``bytes``), one edge per use."""
        import networkx as nx

        g = nx.DiGraph()
        for v in self.inputs:
            g.add_node(v.id, value=v, kind="input", bytes=v.nbytes)
        for c in self.constants():
            g.add_node(c.id, value=c, kind="const", bytes=c.nbytes)
        for n in self.nodes:
            g.add_node(n.out.id, value=n.out, kind="node", op=n.op.name, phase=n.phase,
                       bytes=n.out.nbytes)
            for i in n.inputs:
                if i.kind != "literal":
                    g.add_edge(i.id, n.out.id)
        return g

    def to_dot(self):
        """Graphviz DOT text: inputs and constants as boxes, saved values filled, outputs and
        write-backs as plain labels."""
        lines = [f'digraph "{_esc(self.name)}" {{', "  rankdir=TB;", '  node [fontname="monospace"];']
        for v in self.inputs:
            lines.append(f'  v{v.id} [shape=box, label="%{v.id} {_esc(v.label or "")}\\n{v.type_str()}"];')
        for c in self.constants():
            lines.append(f'  v{c.id} [shape=box, style=dashed, label="%{c.id} const\\n{c.type_str()}"];')
        saved = {id(v) for v in self.saved}
        for n in self.nodes:
            style = ', style=filled, fillcolor="#ffe4b5"' if id(n.out) in saved else ""
            lits = " ".join(i.ref() for i in n.inputs if i.kind == "literal")
            lits = f" {_esc(lits)}" if lits else ""
            lines.append(f'  v{n.out.id} [label="%{n.out.id} = {n.op.name}{lits}\\n'
                         f'{n.out.type_str()}"{style}];')
            for i in n.inputs:
                if i.kind != "literal":
                    lines.append(f"  v{i.id} -> v{n.out.id};")
        n_user = len(self.outputs) - len(self.saved)
        for k, v in enumerate(self.outputs):
            label = f"return {k}" if k < n_user else f"save {k - n_user}"
            lines.append(f'  out{k} [shape=plaintext, label="{label}"];')
            if v.kind != "literal":
                lines.append(f"  v{v.id} -> out{k};")
        for k, (v, desc) in enumerate(self.writebacks):
            lines.append(f'  wb{k} [shape=plaintext, label="{_esc(desc.rstrip(" <-="))}"];')
            if v.kind != "literal":
                lines.append(f"  v{v.id} -> wb{k} [style=dashed];")
        lines.append("}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ checks
    def verify(self):
        """Check SSA form, constants and types (every node's type is re-inferred with its op's
        rule); raise IRError naming the first problem. Returns True."""
        from ...ops.registry import REGISTRY

        defined = set()
        for v in self.inputs:
            if v.kind != "input" or v.node is not None:
                raise IRError(f"input {v.ref()} is not an input value")
            if id(v) in defined:
                raise IRError(f"input {v.ref()} is listed twice")
            defined.add(id(v))
        for n in self.nodes:
            where = f"{n.out.ref()} = {n.op.name}"
            if REGISTRY.get(n.op.name) is not n.op:
                raise IRError(f"{where}: op {n.op.name!r} is not the registered op of that name")
            for i in n.inputs:
                _check_constant(i, where)
                if not i.is_constant and id(i) not in defined:
                    raise IRError(f"{where} uses {i.ref()} before it is defined")
            if n.out.node is not n or n.out.kind != "node":
                raise IRError(f"{where}: its value does not point back to its node")
            if id(n.out) in defined:
                raise IRError(f"{n.out.ref()} is defined twice")
            if n.phase not in ("forward", "backward"):
                raise IRError(f"{where}: unknown phase {n.phase!r}")
            try:
                shape, dtype = n.op.infer(*n.inputs, **n.attrs)
            except Exception as exc:
                raise IRError(f"{where}: the op rejects its inputs: {exc}") from exc
            if tuple(shape) != n.out.shape or dtype is not n.out.dtype:
                raise IRError(f"{where}: recorded type {n.out.type_str()} but the op infers "
                              f"{dtype.short}[{','.join(map(str, shape))}]")
            defined.add(id(n.out))
        for v in list(self.outputs) + [w for w, _ in self.writebacks]:
            _check_constant(v, "output")
            if not v.is_constant and id(v) not in defined:
                raise IRError(f"output {v.ref()} is not defined in the graph")
        if self.saved and [id(v) for v in self.outputs[len(self.outputs) - len(self.saved):]] != \
                [id(v) for v in self.saved]:
            raise IRError("saved values must be the last outputs, in order")
        return True


def _check_constant(v, where):
    if v.kind == "literal":
        if v.shape != () or not isinstance(v.data, np.generic) or v.data.dtype != v.dtype.np:
            raise IRError(f"{where}: literal {v.ref()} is not a 0-d {v.dtype.short} scalar")
    elif v.kind == "const":
        d = v.data
        if not isinstance(d, np.ndarray) or d.shape != v.shape or d.dtype != v.dtype.np:
            raise IRError(f"{where}: constant {v.ref()} holds data that is not {v.type_str()}")


def _esc(text):
    return text.replace("\\", "\\\\").replace('"', '\\"')


class IRError(Exception):
    """The IR is malformed (raised by Graph.verify)."""


def literal_array(v):
    return np.asarray(v.data, dtype=v.dtype.np)

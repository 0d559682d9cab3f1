"""Lowering rules, keyed by the op object: one table per renderer (``backends/c/rules.py``
holds C's; a CUDA renderer adds its own table beside it, for the same OpDefs, without any op
being renamed or looked up by name).

A rule is registered next to the code that implements it, with a decorator naming the OpDef
itself (``@RULES.kernel(MATMUL)``), so a renamed op keeps its rule and an op nobody wrote a
rule for is reported as such: ``rule_for`` raises the renderer's ``Unsupported`` naming the
op, and ``tg.compile`` then runs that graph with the interpreter after a warning that names
it (``fullgraph=True``: an error). Registering the same op twice in one table is an error.

Kinds of rule (what the planner does with the node):

- ``view``: no code; consumers read the input through a view (``fn(view, node) -> view``);
- ``fold``: a reduction the loop nest accumulates (``combiner``: "sum", "prod", "max", "min");
- ``expression``: an elementwise C expression (``fn(node, args, ctype) -> str | None``; None
  falls back to the OpDef's own ``c`` template);
- ``fast_float``: a float32 form for ``fast_math`` programs (a template like ``c``);
- ``kernel``: a kernel of its own (``fn(lowerer, node)``).

An elementwise op needs no registration at all when its OpDef carries a ``c`` template.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Rule:
    kind: str  # view | fold | expression | kernel
    fn: Callable | None = None
    data: Any = None


class LoweringRules:
    """The rules of one renderer (``target``: "c", "cuda"), found by OpDef identity."""

    def __init__(self, target: str, unsupported: Callable[[str, str], Exception]):
        self.target = target
        self._unsupported = unsupported  # (op name, detail) -> the exception rule_for raises
        self._rules: dict = {}  # OpDef -> Rule
        self._fast: dict = {}  # OpDef -> fast float32 template

    def _add(self, op, rule):
        if op in self._rules:
            raise ValueError(f"{self.target} lowering of {op!r} registered twice")
        self._rules[op] = rule

    def view(self, *ops):
        def deco(fn):
            for op in ops:
                self._add(op, Rule("view", fn))
            return fn
        return deco

    def fold(self, op, combiner: str):
        self._add(op, Rule("fold", None, combiner))

    def expression(self, *ops):
        def deco(fn):
            for op in ops:
                self._add(op, Rule("expression", fn))
            return fn
        return deco

    def kernel(self, *ops):
        def deco(fn):
            for op in ops:
                self._add(op, Rule("kernel", fn))
            return fn
        return deco

    def fast_float(self, op, template: str):
        if op in self._fast:
            raise ValueError(f"{self.target} fast float form of {op!r} registered twice")
        self._fast[op] = template

    def lookup(self, op) -> Rule | None:
        return self._rules.get(op)

    def fast_template(self, op) -> str | None:
        return self._fast.get(op)

    def rule_for(self, op) -> Rule:
        """``op``'s rule; an elementwise op with a ``c`` template and no rule of its own gets
        the plain expression rule; otherwise raises ``Unsupported`` naming the op."""
        rule = self._rules.get(op)
        if rule is not None:
            return rule
        if op.kind == "elementwise" and op.c is not None:
            return _PLAIN_EXPRESSION
        raise self._unsupported(op.name, f"no {self.target} lowering rule is registered for this op "
                                         "(the graph runs on the interpreter)")

    def __contains__(self, op):
        return op in self._rules


_PLAIN_EXPRESSION = Rule("expression", None)

"""The C renderer's lowering rules: one table, keyed by the OpDef object (backends/rules.py).

Where the rules are registered: views, folded reductions and elementwise expressions in
``lower.py``, kernels in ``kernels.py`` and ``factor_kernels.py`` (all imported by this
package's ``__init__``, so the table is complete whenever the C backend runs). An elementwise
op whose OpDef carries a ``c`` template needs nothing here.

Adding a kernel for a new primitive (an all-reduce, say), from the module that defines it or
one beside it, imported wherever the op can be built::

    from tracegrad.compiler.backends.c.rules import RULES

    @RULES.kernel(ALL_REDUCE)            # the OpDef itself, never its name
    def all_reduce(lw, n):               # lw: lower.Lowerer, n: the IR node
        xv, ov = lw.contiguous(n.inputs[0]), lw.output_view(n.out)
        lw.emit({"kind": "raw", "code": "  tg_all_reduce(...);", "comment": "all_reduce"}, [xv, ov])

and bump the OpDef's ``version`` when its C changes (it is part of the cache key). A runtime
helper the kernel calls goes into a theme of ``templates/runtime/`` listed in ``runtime.py``.
An op without a rule is not an error: ``RULES.rule_for`` raises ``Unsupported`` naming it and
``tg.compile`` warns and runs that graph with the interpreter.
"""
from __future__ import annotations

from ..rules import LoweringRules


class Unsupported(Exception):
    """The C backend has no lowering for an op of this graph (names the op)."""

    def __init__(self, op_name, detail=""):
        super().__init__(f"no C lowering for op {op_name!r}" + (f": {detail}" if detail else ""))
        self.op_name = op_name


RULES = LoweringRules("c", Unsupported)

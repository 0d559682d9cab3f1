"""The CUDA renderer's lowering rules: its own table (backends/rules.py), for the same OpDefs
as the C renderer's, found by the op object.

What is registered, and where: the views and the folded reductions here (the view functions
are the C renderer's own: they only compute strides, and call back ``lw._materialize``, which
the CUDA lowerer has too), the elementwise expression fragments here (C's, where they are
plain C math that CUDA device code compiles as it is), and the kernels (matmul) in
``kernels.py``. An elementwise op with a ``c`` template needs nothing, unless that template
calls a helper of the C runtime (``tg_*``): the CUDA program has no such runtime, so the
expression is refused (``Unsupported``, the graph runs on the interpreter with a warning).
"""
from __future__ import annotations

from ....ops import elementwise as E
from ....ops import movement as M
from ....ops import reduce as R
from ..c.rules import RULES as C_RULES
from ..rules import LoweringRules


class Unsupported(Exception):
    """The CUDA backend has no lowering for an op of this graph (names the op)."""

    def __init__(self, op_name, detail=""):
        super().__init__(f"no CUDA lowering for op {op_name!r}" + (f": {detail}" if detail else ""))
        self.op_name = op_name


RULES = LoweringRules("cuda", Unsupported)

# Views: index arithmetic only, the same for both renderers.
for _op in (M.RESHAPE, M.PERMUTE, M.EXPAND, M.SLICE, M.FLIP):
    RULES.view(_op)(C_RULES.lookup(_op).fn)

# Reductions: a block per output row (lower.py); over no dims, the identity.
for _op, _combiner in ((R.SUM, "sum"), (R.PROD, "prod"), (R.AMAX, "max"), (R.AMIN, "min")):
    RULES.fold(_op, _combiner)

# C's expression fragments that are plain C math (ternaries, comparisons, sqrt, pow): device
# code compiles them unchanged. (CAST's bfloat16 branch calls the C runtime, but the CUDA
# backend refuses float16/bfloat16 values before any expression is built.)
for _op in (E.CLAMP, E.CAST, E.SIGN, E.MAXIMUM, E.MINIMUM, E.RELU, E.POW):
    RULES.expression(_op)(C_RULES.lookup(_op).fn)

# Ops whose expression is already 0 or 1 for a bool result (others get ``!= 0``).
BOOL_VALUED = frozenset((E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE, E.LOGICAL_AND, E.LOGICAL_OR,
                         E.LOGICAL_NOT, M.COPY, E.WHERE))

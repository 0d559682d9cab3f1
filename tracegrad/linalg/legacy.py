"""PyTorch's deprecated linear-algebra functions that still work in 2.13, with its warnings:
``lu`` (use ``linalg.lu_factor``) and ``triangular_solve`` (use ``linalg.solve_triangular``).

>>> import tracegrad as tg, warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     x = tg.triangular_solve(tg.tensor([[2.0], [1.0]]), tg.tensor([[2.0, 0.0], [1.0, 1.0]]), upper=False)
>>> x.solution.tolist()
[[1.0], [0.0]]
"""
from __future__ import annotations

import warnings
from collections import namedtuple

from .. import amp as _amp
from .. import linalg as LA

__all__ = ["lu", "triangular_solve"]

_triangular_solve_result = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


def lu(A, pivot=True, get_infos=False, out=None):
    """``(LU, pivots)`` (with ``infos`` when ``get_infos``), as ``linalg.lu_factor(_ex)``."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will "
                  "be removed in a future PyTorch release.", UserWarning, stacklevel=2)
    LU, pivots, infos = LA.lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


@_amp.float32
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """The solution ``X`` of ``A X = b`` (``A^T X = b`` with ``transpose``) for a triangular
    ``A``, and a copy of ``A``: ``(solution, cloned_coefficient)``."""
    warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    coefficient = A.mT if transpose else A
    solution = LA.solve_triangular(coefficient, b, upper=upper != transpose, unitriangular=unitriangular)
    return _triangular_solve_result(solution, A.clone())

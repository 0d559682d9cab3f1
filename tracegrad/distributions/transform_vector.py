"""Transforms of vectors and matrices (PyTorch's): ``SoftmaxTransform`` and
``StickBreakingTransform`` onto the simplex, ``LowerCholeskyTransform``,
``PositiveDefiniteTransform`` and ``CorrCholeskyTransform``. The public module is
transforms.py."""
from __future__ import annotations

import math

import numpy as np

from ..core import creation
from .._api import functional as F
from .. import linalg as LA
from ..core.dtypes import finfo
from ..nn import functional as NF
from . import constraints
from .transform_pointwise import _Parameterless, clipped_sigmoid

__all__ = ["SoftmaxTransform", "StickBreakingTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "CorrCholeskyTransform"]


def _at_least_1d(shape):
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")
    return shape


class SoftmaxTransform(_Parameterless):
    """``y = exp(x) / sum(exp(x))`` onto the simplex (not bijective: ``inv`` gives ``log y``)."""

    domain, codomain = constraints.real_vector, constraints.simplex

    def _call(self, x):
        probs = F.exp(x - F.amax(x, -1, keepdim=True))
        return probs / F.sum(probs, -1, keepdim=True)

    def _inverse(self, y):
        return F.log(y)

    def forward_shape(self, shape):
        return _at_least_1d(shape)

    inverse_shape = forward_shape


def _stick_offset(x, k):
    """``log(k + 1 - j)`` for j = 1..k: centres the stick-breaking at the simplex's middle."""
    return F.log(k + 1 - F.cumsum(x.new_ones(k), -1))


class StickBreakingTransform(_Parameterless):
    """``K`` reals onto the simplex of ``K + 1`` by stick breaking (iterated sigmoids, as the
    Dirichlet's construction): bijective."""

    domain, codomain = constraints.real_vector, constraints.simplex
    bijective = True

    def _call(self, x):
        z = clipped_sigmoid(x - _stick_offset(x, x.shape[-1]))
        rest = F.cumprod(1 - z, -1)
        return NF.pad(z, (0, 1), value=1.0) * NF.pad(rest, (1, 0), value=1.0)

    def _inverse(self, y):
        crop = y[..., :-1]
        rest = F.clamp(1 - F.cumsum(crop, -1), min=finfo(y.dtype).tiny)
        return F.log(crop) - F.log(rest) + _stick_offset(crop, crop.shape[-1])

    def log_abs_det_jacobian(self, x, y):
        x = x - _stick_offset(x, x.shape[-1])
        return F.sum(-x + NF.logsigmoid(x) + F.log(y[..., :-1]), -1)

    def forward_shape(self, shape):
        shape = _at_least_1d(shape)
        return shape[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        shape = _at_least_1d(shape)
        return shape[:-1] + (shape[-1] - 1,)


def _with_diagonal(x, fn):
    """The strict lower triangle of ``x`` plus ``fn`` of its diagonal on the diagonal."""
    return x.tril(-1) + fn(x.diagonal(0, -2, -1)).diag_embed()


class LowerCholeskyTransform(_Parameterless):
    """Square matrices to lower-triangular ones with a positive diagonal (``exp`` of it)."""

    domain, codomain = constraints.independent(constraints.real, 2), constraints.lower_cholesky

    def _call(self, x):
        return _with_diagonal(x, F.exp)

    def _inverse(self, y):
        return _with_diagonal(y, F.log)


class PositiveDefiniteTransform(_Parameterless):
    """Square matrices to positive-definite ones, ``L L^T`` of their LowerCholeskyTransform."""

    domain, codomain = constraints.independent(constraints.real, 2), constraints.positive_definite

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(LA.cholesky(y))


def _tril_positions(n, diag):
    """Flat (row-major) positions of the entries of an n x n matrix on or below diagonal
    ``diag`` (PyTorch's tril mask order)."""
    rows, cols = np.indices((n, n))
    return np.flatnonzero(cols < rows + diag + 1)


def vec_to_tril_matrix(vec, diag=0):
    """The n x n matrix whose entries on or below diagonal ``diag`` are ``vec``'s, in row
    order (zeros elsewhere); ``vec``'s length must be such a count."""
    m = vec.shape[-1]
    n = round((-(1 + 2 * diag) + math.sqrt((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1))) / 2)
    positions = _tril_positions(n, diag)
    if len(positions) != m:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the lower "
                         f"triangular part of a square D x D matrix.")
    source = np.zeros(n * n, np.int64)  # (0 reads the zero put in front of vec)
    source[positions] = np.arange(1, m + 1)
    padded = NF.pad(vec, (1, 0))
    return F.reshape(padded[..., creation.tensor(source)], tuple(vec.shape[:-1]) + (n, n))


def tril_matrix_to_vec(mat, diag=0):
    """The entries of ``mat`` on or below diagonal ``diag``, in row order."""
    n = mat.shape[-1]
    flat = F.reshape(mat, tuple(mat.shape[:-2]) + (n * n,))
    return flat[..., creation.tensor(_tril_positions(n, diag))]


class CorrCholeskyTransform(_Parameterless):
    """``D (D - 1) / 2`` reals to the Cholesky factor of a D x D correlation matrix (rows of
    unit length: a signed stick breaking per row of tanh'd values)."""

    domain, codomain = constraints.real_vector, constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = finfo(x.dtype).eps
        r = vec_to_tril_matrix(F.clamp(F.tanh(x), -1 + eps, 1 - eps), diag=-1)
        rest = F.cumprod(F.sqrt(1 - r ** 2), -1)
        r = r + creation.eye(r.shape[-1], dtype=r.dtype)
        return r * NF.pad(rest[..., :-1], (1, 0), value=1.0)

    def _inverse(self, y):
        left = 1 - F.cumsum(y * y, -1)
        left = NF.pad(left[..., :-1], (1, 0), value=1.0)
        t = tril_matrix_to_vec(y, diag=-1) / F.sqrt(tril_matrix_to_vec(left, diag=-1))
        return (F.log1p(t) - F.log1p(-t)) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        left = 1 - F.cumsum(y * y, -1)
        stick_breaking = 0.5 * F.sum(F.log(tril_matrix_to_vec(left, diag=-2)), -1)
        tanh = -2 * F.sum(x + NF.softplus(-2 * x) - math.log(2.0), -1)
        return stick_breaking + tanh

    def forward_shape(self, shape):
        shape = _at_least_1d(shape)
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return shape[:-1] + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        return shape[:-2] + (shape[-1] * (shape[-1] - 1) // 2,)

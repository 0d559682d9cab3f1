"""``LowRankMultivariateNormal``: a multivariate normal with covariance ``W W^T + diag(D)``
(``cov_factor`` W of n x m, ``cov_diag`` D), whose densities cost O(n m^2) through the m x m
capacitance matrix ``I + W^T D^-1 W`` (the Woodbury identity and the matrix determinant lemma),
as PyTorch's.

>>> import tracegrad as tg
>>> d = tg.distributions.LowRankMultivariateNormal(tg.zeros(2), tg.tensor([[1.0], [0.0]]), tg.ones(2))
>>> d.covariance_matrix
tensor([[2., 0.],
        [0., 1.]])
>>> d.log_prob(tg.zeros(2))
tensor(-2.1845)
"""
from __future__ import annotations

import math

from ..core import creation
from .._api import functional as F
from .. import linalg as LA
from .._api.rearrange import broadcast_shapes
from . import constraints
from .distribution import Distribution
from .multivariate import _mahalanobis
from .noise import noise

__all__ = ["LowRankMultivariateNormal"]


def _batch_mv(matrix, vector):
    return F.squeeze(F.matmul(matrix, F.unsqueeze(vector, -1)), -1)


def _capacitance_tril(W, D):
    """The Cholesky factor of ``I + W^T D^-1 W`` (m x m)."""
    m = W.shape[-1]
    K = F.matmul(W.mT / F.unsqueeze(D, -2), W) + creation.eye(m, dtype=W.dtype)
    return LA.cholesky(K)


def _lowrank_logdet(D, capacitance_tril):
    """``log det(W W^T + D) = log det(capacitance) + log det(D)`` (the determinant lemma)."""
    return 2 * F.sum(F.log(capacitance_tril.diagonal(0, -2, -1)), -1) + F.sum(F.log(D), -1)


def _lowrank_mahalanobis(W, D, x, capacitance_tril):
    """``x^T (W W^T + D)^-1 x`` by the Woodbury identity."""
    wt_dinv_x = _batch_mv(W.mT / F.unsqueeze(D, -2), x)
    return F.sum(x ** 2 / D, -1) - _mahalanobis(capacitance_tril, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    """``LowRankMultivariateNormal(loc, cov_factor, cov_diag)``: covariance
    ``cov_factor @ cov_factor.mT + diag(cov_diag)``."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.ndim < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if cov_diag.shape[-1:] != loc.shape[-1:]:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {tuple(loc.shape[-1:])}")
        m = cov_factor.shape[-1]
        try:
            lead = tuple(broadcast_shapes(tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]),
                                          tuple(cov_diag.shape[:-1])))
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc = F.expand(loc, lead + (n,))
        self.cov_factor = F.expand(cov_factor, lead + (n, m))
        self.cov_diag = F.expand(cov_diag, lead + (n,))
        # (the densities use the parameters as given: batched work only where they are)
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(lead, (n,), validate_args)

    mean = mode = property(lambda self: self.loc)

    def _matrix_shape(self, t):
        return F.expand(t, tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @property
    def variance(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return F.expand(F.sum(W ** 2, -1) + D, tuple(self._batch_shape) + tuple(self._event_shape))

    @property
    def scale_tril(self):
        # sqrt(D) chol(I + D^-1/2 W W^T D^-1/2): the Cholesky factor of the covariance
        n = self._event_shape[0]
        sqrt_d = F.unsqueeze(F.sqrt(self._unbroadcasted_cov_diag), -1)
        scaled = self._unbroadcasted_cov_factor / sqrt_d
        K = F.matmul(scaled, scaled.mT) + creation.eye(n, dtype=scaled.dtype)
        return self._matrix_shape(sqrt_d * LA.cholesky(K))

    @property
    def covariance_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self._matrix_shape(F.matmul(W, W.mT) + D.diag_embed())

    @property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W (I + W^T D^-1 W)^-1 W^T D^-1
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        wt_dinv = W.mT / F.unsqueeze(D, -2)
        A = LA.solve_triangular(F.expand(self._capacitance_tril, tuple(wt_dinv.shape[:-2]) +
                                         tuple(self._capacitance_tril.shape[-2:])), wt_dinv, upper=False)
        return self._matrix_shape((1 / D).diag_embed() - F.matmul(A.mT, A))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        eps_w = noise("normal", shape[:-1] + (self.cov_factor.shape[-1],), self.loc)
        eps_d = noise("normal", shape, self.loc)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + F.sqrt(self._unbroadcasted_cov_diag) * eps_d)

    def _log_det(self):
        return _lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        self._validate_sample(value)
        m = _lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, value - self.loc,
                                 self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self):
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return F.expand(h, tuple(self._batch_shape))

"""``MultivariateNormal`` (by covariance, precision or Cholesky factor) and ``Independent``
(batch dims reinterpreted as event dims)."""
from __future__ import annotations

import math

from ..core import creation
from .._api import functional as F
from .. import linalg as LA
from .._api.rearrange import broadcast_shapes
from . import constraints
from .distribution import Distribution
from .noise import noise

__all__ = ["MultivariateNormal", "Independent"]


def _mahalanobis(scale_tril, diff):
    """``|L^-1 diff|^2`` over the last dim (batches broadcast)."""
    n = diff.shape[-1]
    lead = tuple(broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(diff.shape[:-1])))
    tril = F.expand(scale_tril, lead + (n, n))
    solved = LA.solve_triangular(tril, F.unsqueeze(F.expand(diff, lead + (n,)), -1), upper=False)
    return F.sum(F.squeeze(solved, -1) ** 2, -1)


def _precision_to_scale_tril(precision):
    # the Cholesky factor of P^-1 without inverting P (PyTorch's: flip, Cholesky, flip, solve)
    lf = LA.cholesky(F.flip(precision, (-2, -1)))
    l_inv = F.transpose(F.flip(lf, (-2, -1)), -2, -1)
    eye = creation.eye(precision.shape[-1], dtype=precision.dtype)
    return LA.solve_triangular(l_inv, F.expand(eye, tuple(l_inv.shape)), upper=False)


class MultivariateNormal(Distribution):
    """``MultivariateNormal(loc, covariance_matrix=, precision_matrix=, scale_tril=)``: exactly
    one of the three; the others follow from the Cholesky factor ``scale_tril``.

    >>> import tracegrad as tg
    >>> d = tg.distributions.MultivariateNormal(tg.zeros(2), tg.eye(2))
    >>> d.log_prob(tg.zeros(2))
    tensor(-1.8379)
    """

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        matrix = given[0]
        if matrix.ndim < 2:
            raise ValueError("covariance_matrix, precision_matrix or scale_tril must be at least "
                             "two-dimensional, with optional leading batch dimensions")
        batch = tuple(broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        n = loc.shape[-1]
        self.loc = F.expand(loc, batch + (n,))
        name = "scale_tril" if scale_tril is not None else \
            "covariance_matrix" if covariance_matrix is not None else "precision_matrix"
        setattr(self, name, F.expand(matrix, batch + (n, n)))
        super().__init__(batch, (n,), validate_args)  # (checks the matrix before factoring it)
        if name == "covariance_matrix":
            self.scale_tril = LA.cholesky(self.covariance_matrix)
        elif name == "precision_matrix":
            self.scale_tril = _precision_to_scale_tril(self.precision_matrix)

    def __getattr__(self, name):
        if name == "covariance_matrix":
            tril = self.__dict__["scale_tril"]
            return F.matmul(tril, F.transpose(tril, -2, -1))
        if name == "precision_matrix":
            return LA.cholesky_inverse(self.__dict__["scale_tril"])
        raise AttributeError(name)

    mean = mode = property(lambda self: self.loc)
    variance = property(lambda self: F.sum(self.scale_tril ** 2, -1))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        eps = noise("normal", shape, self.loc)
        return self.loc + F.squeeze(F.matmul(self.scale_tril, F.unsqueeze(eps, -1)), -1)

    def _half_log_det(self):
        return F.sum(F.log(self.scale_tril.diagonal(0, -2, -1)), -1)

    def log_prob(self, value):
        self._validate_sample(value)
        m = _mahalanobis(self.scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        return 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()


class Independent(Distribution):
    """``base_distribution`` with its last ``reinterpreted_batch_ndims`` batch dims read as event
    dims: ``log_prob`` and ``entropy`` sum over them."""

    arg_constraints = {}

    @constraints.dependent_property
    def support(self):
        support = self.base_dist.support
        n = self.reinterpreted_batch_ndims
        return constraints.independent(support, n) if n else support

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        batch = tuple(base_distribution.batch_shape)
        if reinterpreted_batch_ndims > len(batch):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {reinterpreted_batch_ndims} vs {len(batch)}")
        cut = len(batch) - reinterpreted_batch_ndims
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, reinterpreted_batch_ndims
        super().__init__(batch[:cut], batch[cut:] + tuple(base_distribution.event_shape), validate_args)

    def expand(self, batch_shape, _instance=None):
        n = self.reinterpreted_batch_ndims
        new = super().expand(batch_shape, _instance)
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + tuple(self._event_shape[:n]))
        return new

    has_rsample = property(lambda self: self.base_dist.has_rsample)
    mean = property(lambda self: self.base_dist.mean)
    mode = property(lambda self: self.base_dist.mode)
    variance = property(lambda self: self.base_dist.variance)

    def _summed(self, t):
        n = self.reinterpreted_batch_ndims
        return F.sum(t, tuple(range(t.ndim - n, t.ndim))) if n else t

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return self._summed(self.base_dist.log_prob(value))

    def entropy(self):
        return self._summed(self.base_dist.entropy())

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"

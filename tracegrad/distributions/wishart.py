"""``Wishart(df, covariance_matrix=, precision_matrix=, scale_tril=)`` (PyTorch's): positive
definite matrices, an exponential family (its KL is the Bregman divergence, exp_family.py).
``rsample`` is PyTorch's Bartlett decomposition: ``L A A^T L^T`` with ``A`` lower triangular,
``sqrt(chi2(df - i))`` on its diagonal (gamma draws with their implicit reparametrization
gradient, eagerly) and standard normals below it."""
from __future__ import annotations

import math
import warnings

from .._api import composites as CP
from ..core import creation
from .._api import functional as F
from .. import linalg as LA
from .._api import arithmetic as MX
from ..core.dtypes import finfo
from .._api.rearrange import broadcast_shapes, diag_embed
from . import constraints
from .exp_family import ExponentialFamily
from .gamma_family import Chi2
from .multivariate import _precision_to_scale_tril
from .noise import noise

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma function, ``sum_i digamma(x - i / 2)`` over ``i < p``."""
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    halves = creation.arange(p, dtype=x.dtype) / 2
    return F.sum(MX.digamma(F.unsqueeze(x, -1) - halves), -1)


class Wishart(ExponentialFamily):
    """``Wishart(df, covariance_matrix=, precision_matrix=, scale_tril=)``: exactly one of the
    three matrices (``p x p``, batched) and degrees of freedom ``df > p - 1``; the mean is
    ``df * covariance_matrix``.

    >>> import tracegrad as tg
    >>> d = tg.distributions.Wishart(tg.tensor(3.0), covariance_matrix=tg.eye(2))
    >>> d.log_prob(tg.eye(2)), d.entropy(), d.mean
    (tensor(-3.5310), tensor(5.5310), tensor([[3., 0.],
            [0., 3.]]))
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = given[0]
        if param.ndim < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, (int, float)):
            batch = tuple(param.shape[:-2])
            self.df = creation.tensor(float(df), dtype=param.dtype)
        else:
            batch = tuple(broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = F.expand(df, batch)
        p = param.shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        name = "scale_tril" if scale_tril is not None else \
            "covariance_matrix" if covariance_matrix is not None else "precision_matrix"
        setattr(self, name, F.expand(param, batch + (p, p)))
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df "
                          "< ndim.", stacklevel=2)
        super().__init__(batch, (p, p), validate_args=validate_args)
        # (the factor of the matrix as given, unbroadcast: the formulas broadcast it themselves)
        self._unbroadcasted_scale_tril = scale_tril if scale_tril is not None else \
            LA.cholesky(covariance_matrix) if covariance_matrix is not None else \
            _precision_to_scale_tril(precision_matrix)
        self._set_chi2()

    def _set_chi2(self):
        """The Bartlett factor's squared diagonal: ``Chi2(df - i)`` for ``i < p``."""
        p = self._event_shape[-1]
        steps = creation.arange(p, dtype=self._unbroadcasted_scale_tril.dtype)
        self._dist_chi2 = Chi2(F.unsqueeze(self.df, -1) - steps)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        full = tuple(new.batch_shape) + tuple(self._event_shape)
        new._unbroadcasted_scale_tril = F.expand(self._unbroadcasted_scale_tril, full)
        new._set_chi2()
        return new

    def __getattr__(self, name):
        # (the matrices not given follow from the factor, on each use)
        if "_unbroadcasted_scale_tril" not in self.__dict__:
            raise AttributeError(name)
        tril, full = self.__dict__["_unbroadcasted_scale_tril"], tuple(self._batch_shape) + tuple(self._event_shape)
        if name == "scale_tril":
            return F.expand(tril, full)
        if name == "covariance_matrix":
            return F.expand(F.matmul(tril, F.transpose(tril, -2, -1)), full)
        if name == "precision_matrix":
            eye = creation.eye(self._event_shape[-1], dtype=tril.dtype)
            return F.expand(LA.cholesky_solve(F.expand(eye, tuple(tril.shape)), tril), full)
        raise AttributeError(name)

    def _df_matrix(self):
        return F.reshape(self.df, tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = F.where(factor <= 0, float("nan"), factor)
        return F.reshape(factor, tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        cov = self.covariance_matrix
        diag = cov.diagonal(0, -2, -1)
        return self._df_matrix() * (cov ** 2 + F.unsqueeze(diag, -1) * F.unsqueeze(diag, -2))

    def _bartlett_sampling(self, sample_shape=()):
        p = self._event_shape[-1]
        diag = F.sqrt(self._dist_chi2.rsample(sample_shape))
        diag = F.clamp(diag, min=finfo(diag.dtype).eps)
        below = noise("normal", tuple(sample_shape) + tuple(self._batch_shape) + (p, p), diag)
        factor = diag_embed(diag) + CP.tril(below, -1)
        chol = F.matmul(self._unbroadcasted_scale_tril, factor)
        return F.matmul(chol, F.transpose(chol, -2, -1))

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett's construction; a sample that is numerically singular (possible for
        ``df`` near ``p - 1``) is drawn again, at most ``max_try_correction`` times (10)."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample = self._bartlett_sampling(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                mask = F.unsqueeze(F.unsqueeze(singular, -1), -1)
                sample = F.where(mask, self._bartlett_sampling(sample_shape), sample)
                singular = ~self.support.check(sample)
                if not bool(singular.any()):
                    break
        return sample

    def _log_det_term(self):
        """``p log(2) / 2 + log|L|``: the scale's share of the normalizer, per ``df``."""
        p = self._event_shape[-1]
        return p * _LOG_2 / 2 + F.sum(F.log(self._unbroadcasted_scale_tril.diagonal(0, -2, -1)), -1)

    def log_prob(self, value):
        self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        trace = F.sum(LA.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(0, -2, -1), -1)
        return (-nu * self._log_det_term() - MX.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * LA.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * self._log_det_term() + MX.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-LA.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + MX.mvlgamma(y + (p + 1) / 2, p=p))

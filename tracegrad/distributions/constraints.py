"""``tg.distributions.constraints`` (PyTorch's ``torch.distributions.constraints``): the regions
where parameters and samples are valid. ``constraint.check(value)`` gives a bool tensor over
``value``'s batch dims (the rightmost ``event_dim`` dims are reduced: an event is valid when
all of it is); ``biject_to`` / ``transform_to`` (constraint_registry.py) map the real line
onto them. The reprs are PyTorch's, so error messages read the same.

>>> import tracegrad as tg
>>> from tracegrad.distributions import constraints
>>> constraints.positive.check(tg.tensor([1.0, -1.0]))
tensor([ True, False])
>>> constraints.simplex
Simplex()
>>> constraints.interval(0.0, 2.0)
Interval(lower_bound=0.0, upper_bound=2.0)
"""
from __future__ import annotations

from ..core import creation
from .._api import functional as F
from .. import linalg as LA

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "independent", "integer_interval", "interval", "half_open_interval", "is_dependent",
           "less_than", "lower_cholesky", "lower_triangular", "MixtureSameFamilyConstraint", "multinomial",
           "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_semidefinite",
           "positive_definite", "positive_integer", "real", "real_vector", "simplex", "square", "stack",
           "symmetric", "unit_interval"]


class Constraint:
    """A region of valid values. ``is_discrete``: whether it is discrete; ``event_dim``: how
    many rightmost dims form one event (``check`` reduces them)."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__[1:] + "()"


def _with_bounds(*names):
    """``__repr__`` listing the bound attributes ``names``, as PyTorch's."""
    def __repr__(self):
        return type(self).__name__[1:] + "(" + ", ".join(f"{n}={getattr(self, n)}" for n in names) + ")"

    return __repr__


# ----------------------------------------------------------------------------- dependent
class _Dependent(Constraint):
    """A placeholder for a parameter whose region depends on other parameters (no check)."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        return _Dependent(is_discrete=self._is_discrete if is_discrete is NotImplemented else is_discrete,
                          event_dim=self._event_dim if event_dim is NotImplemented else event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """Whether ``constraint`` is a ``dependent`` placeholder (validation skips those)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that reads as a ``dependent`` constraint on the class (``Uniform.support``)
    and as the actual constraint on an instance."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete, self._event_dim = is_discrete, event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


# ----------------------------------------------------------------------------- wrappers
def _check_base(base_constraint):
    if not isinstance(base_constraint, Constraint):
        raise TypeError(f"base_constraint must be a Constraint, got {type(base_constraint).__name__}")


class _IndependentConstraint(Constraint):
    """``base_constraint`` with ``reinterpreted_batch_ndims`` more dims read as one event."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        _check_base(base_constraint)
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(f"reinterpreted_batch_ndims must be an int >= 0, got {reinterpreted_batch_ndims!r}")
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims

    is_discrete = property(lambda self: self.base_constraint.is_discrete)
    event_dim = property(lambda self: self.base_constraint.event_dim + self.reinterpreted_batch_ndims)

    def check(self, value):
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.ndim < n:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.ndim}")
        return _all_last(result, n)

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


def _all_last(result, n):
    """``result`` (bool) reduced by ``all`` over its last ``n`` dims."""
    return F.reshape(result, tuple(result.shape[:result.ndim - n]) + (-1,)).all(-1) if n else result


class MixtureSameFamilyConstraint(Constraint):
    """The component distribution's constraint, checked with the mixture dim added back."""

    def __init__(self, base_constraint):
        _check_base(base_constraint)
        self.base_constraint = base_constraint

    is_discrete = property(lambda self: self.base_constraint.is_discrete)
    event_dim = property(lambda self: self.base_constraint.event_dim)

    def check(self, value):
        if value.ndim < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.ndim}")
        result = self.base_constraint.check(F.unsqueeze(value, -1 - self.event_dim))
        return _all_last(result, result.ndim - (value.ndim - self.event_dim))

    def __repr__(self):
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


class _Cat(Constraint):
    """Constraints ``cseq`` on consecutive pieces of ``lengths`` along ``dim`` (as ``cat``)."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})")
        self.dim = dim

    is_discrete = property(lambda self: any(c.is_discrete for c in self.cseq))
    event_dim = property(lambda self: max(c.event_dim for c in self.cseq))

    def check(self, value):
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(F.narrow(value, self.dim, start, length)))
            start += length
        return F.cat(checks, self.dim)


class _Stack(Constraint):
    """Constraints ``cseq`` on the slices along ``dim`` (as ``stack``)."""

    def __init__(self, cseq, dim=0):
        self.cseq, self.dim = list(cseq), dim

    is_discrete = property(lambda self: any(c.is_discrete for c in self.cseq))

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value):
        return F.stack([c.check(value.select(self.dim, i)) for i, c in enumerate(self.cseq)], self.dim)


# ----------------------------------------------------------------------------- discrete
class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete, event_dim = True, 1

    def check(self, value):
        return ((value == 0) | (value == 1)).all(-1) & (F.sum(value, -1) == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    __repr__ = _with_bounds("lower_bound", "upper_bound")


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    __repr__ = _with_bounds("lower_bound")


class _Multinomial(Constraint):
    """Nonnegative counts summing to at most ``upper_bound`` (PyTorch's weaker check)."""

    is_discrete, event_dim = True, 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(-1) & (F.sum(x, -1) <= self.upper_bound)


# ----------------------------------------------------------------------------- real regions
class _Real(Constraint):
    def check(self, value):
        return value == value  # (False for NaN)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value > self.lower_bound

    __repr__ = _with_bounds("lower_bound")


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return value >= self.lower_bound


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    __repr__ = _with_bounds("upper_bound")


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    __repr__ = _with_bounds("lower_bound", "upper_bound")


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & (F.abs(F.sum(value, -1) - 1) < 1e-6)


# ----------------------------------------------------------------------------- matrices
class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return _all_last(value.tril() == value, 2)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        return _LowerTriangular().check(value) & (value.diagonal(0, -2, -1) > 0).all(-1)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors whose rows have unit length (of correlation matrices)."""

    event_dim = 2

    def check(self, value):
        from ..core.dtypes import finfo

        tol = finfo(value.dtype).eps * value.shape[-1] * 10  # (PyTorch's fudge factor)
        row_norm = F.sqrt(F.sum(value.detach() ** 2, -1))
        return _LowerCholesky().check(value) & (F.abs(row_norm - 1.0) <= tol).all(-1)


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        return creation.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1], dtype=bool)


class _Symmetric(_Square):
    def check(self, value):
        square = super().check(value)
        if not bool(square.all()):
            return square
        from .._api.arithmetic import isclose

        return _all_last(isclose(value, F.transpose(value, -2, -1), atol=1e-6), 2)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        symmetric = super().check(value)
        return symmetric if not bool(symmetric.all()) else (LA.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        symmetric = super().check(value)
        return symmetric if not bool(symmetric.all()) else (LA.eigvalsh(value) > 0).all(-1)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack

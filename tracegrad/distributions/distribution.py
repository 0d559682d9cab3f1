"""The ``Distribution`` base class: shapes, the argument and sample checks every distribution
shares (PyTorch's rules and messages), and the defaults of the optional methods."""
from __future__ import annotations

from .._api import functional as F
from ..autograd.grad_mode import no_grad
from .._api.rearrange import broadcast_tensors
from ..core.tensor import Size, Tensor
from . import constraints


class Distribution:
    """A batch of distributions of one kind: ``batch_shape`` independent ones, each over events
    of ``event_shape``. Subclasses define ``log_prob`` and ``rsample`` (reparametrized, for
    those with ``has_rsample``) or ``sample``, and the moments they have. Parameters are checked
    against ``arg_constraints`` and ``log_prob``'s values against ``support`` when
    ``validate_args`` is on (the default, as in PyTorch)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_default = True
    arg_constraints = {}

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        self._validate_args = self._validate_default if validate_args is None else validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                # (dependent ones cannot be checked; parametrisations made on first use are
                # checked through the one given)
                if constraints.is_dependent(constraint) or (param not in self.__dict__
                                                            and not hasattr(type(self), param)):
                    continue
                value = getattr(self, param)
                if not value._is_traced and not bool(constraint.check(value).all()):
                    raise ValueError(f"Expected parameter {param} (Tensor of shape {tuple(value.shape)}) of "
                                     f"distribution {self!r} to satisfy the constraint {constraint!r}, "
                                     f"but found invalid values:\n{value}")

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument and sample checks on or off for distributions made afterwards."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args expects True or False, got {value!r}")
        Distribution._validate_default = bool(value)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its batch dims broadcast to ``batch_shape`` (views of the
        parameters, not copies; no new checks): the tensors named in ``arg_constraints`` or
        ``_expand_attrs`` and the inner distributions of the same batch shape are expanded,
        the other attributes shared."""
        batch_shape, old = Size(batch_shape), len(self._batch_shape)
        new = _instance if _instance is not None else object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        batched = set(self.arg_constraints) | set(self._expand_attrs)
        for name, value in self.__dict__.items():
            if isinstance(value, Tensor) and name in batched:
                new.__dict__[name] = F.expand(value, tuple(batch_shape) + tuple(value.shape[old:]))
            elif isinstance(value, Distribution) and value.batch_shape == self._batch_shape:
                new.__dict__[name] = value.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    _expand_attrs = ()  # (tensors batched like the parameters, besides those in arg_constraints)

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def support(self):
        raise NotImplementedError(f"{type(self).__name__} defines no support")

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self)} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self)} does not implement variance")

    @property
    def stddev(self):
        return F.sqrt(self.variance)

    def _extended_shape(self, sample_shape=()):
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def sample(self, sample_shape=()):
        """A sample of shape ``sample_shape + batch_shape + event_shape`` (no gradient)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparametrized sampler (rsample)")

    def sample_n(self, n):
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} defines no cdf")

    def icdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} defines no icdf")

    def enumerate_support(self, expand=True):
        raise NotImplementedError(f"{type(self).__name__} cannot enumerate its support")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} defines no entropy")

    def perplexity(self):
        return F.exp(self.entropy())

    def __repr__(self):
        params = [k for k in self.arg_constraints if k in self.__dict__]
        shown = ", ".join(f"{k}: {v if v.numel() == 1 else v.size()}" for k, v in
                          ((k, self.__dict__[k]) for k in params))
        return f"{type(self).__name__}({shown})"

    # ------------------------------------------------------------------ checks
    def _validate_sample(self, value):
        """PyTorch's checks of a ``log_prob``/``cdf`` argument: a tensor whose rightmost dims
        are ``event_shape``, broadcastable with ``batch_shape``, inside ``support``."""
        if not self._validate_args:
            return
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event = tuple(self._event_shape)
        if tuple(value.shape[value.ndim - len(event):]) != event:
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape} vs "
                             f"{self._event_shape}.")
        expected = tuple(self._batch_shape) + event
        for i, j in zip(reversed(tuple(value.shape)), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {value.shape} vs "
                                 f"{Size(expected)}.")
        support = self.support
        if not value._is_traced and not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be within "
                             f"the support ({support!r}) of the distribution {self!r}, "
                             f"but found invalid values:\n{value}")


def broadcast_all(*values):
    """Tensors (numbers become tensors of the default float dtype, or of the first tensor's)
    broadcast to one shape."""
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), None)
    tensors = [v if isinstance(v, Tensor) else F.to_tensor(float(v), dtype) for v in values]
    return broadcast_tensors(*tensors)

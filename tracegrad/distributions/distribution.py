"""The ``Distribution`` base class and the argument checks the distributions share."""
from __future__ import annotations

from .. import functional as F
from ..autograd.grad_mode import no_grad
from ..layout import broadcast_tensors
from ..tensor import Size, Tensor


class Distribution:
    """A batch of distributions of one kind: ``batch_shape`` independent ones, each over events
    of ``event_shape``. Subclasses define ``log_prob`` and ``rsample`` (reparametrized, for
    those with ``has_rsample``) or ``sample``, and the moments they have. Arguments are checked
    (``validate_args``, on by default as in PyTorch)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_default = True

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        self._validate_args = self._validate_default if validate_args is None else validate_args

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument and sample checks on or off for distributions made afterwards."""
        Distribution._validate_default = bool(value)

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

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

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} defines no entropy")

    def perplexity(self):
        return F.exp(self.entropy())

    @property
    def stddev(self):
        return F.sqrt(self.variance)

    def __repr__(self):
        params = [k for k in self.arg_constraints if k in self.__dict__]
        shown = ", ".join(f"{k}: {v if v.numel() == 1 else v.size()}" for k, v in
                          ((k, self.__dict__[k]) for k in params))
        return f"{type(self).__name__}({shown})"

    arg_constraints = {}

    # ------------------------------------------------------------------ checks
    def _check(self, name, value, ok, constraint):
        """Raise PyTorch's ValueError when ``ok`` (a bool tensor) is False anywhere."""
        if self._validate_args and not value._is_traced and not bool(ok.all()):
            raise ValueError(f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of "
                             f"distribution {type(self).__name__}() to satisfy the constraint "
                             f"{constraint}, but found invalid values:\n{value}")

    def _check_sample(self, value, ok, support):
        if self._validate_args and not value._is_traced and not bool(ok.all()):
            raise ValueError(f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be within "
                             f"the support ({support}) of the distribution {type(self).__name__}(), "
                             f"but found invalid values:\n{value}")


def broadcast_all(*values):
    """Tensors (numbers become tensors of the default float dtype, or of the first tensor's)
    broadcast to one shape."""
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), None)
    tensors = [v if isinstance(v, Tensor) else F.to_tensor(float(v), dtype) for v in values]
    return broadcast_tensors(*tensors)

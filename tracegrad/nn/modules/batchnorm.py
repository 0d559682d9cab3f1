"""Batch normalisation (PyTorch's ``BatchNorm1d/2d/3d``, and ``GroupNorm``): per-channel statistics of the
batch in training, updating ``running_mean``/``running_var`` in place (inside a compiled step
too: they are written back like optimizer state), the running ones in ``eval()``.

>>> import tracegrad as tg
>>> bn = tg.nn.BatchNorm1d(3)
>>> bn
BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
>>> y = bn(tg.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]))
>>> bn.running_mean
tensor([0.2000, 0.2000, 0.2000])
"""
from __future__ import annotations

from ...core import creation, dtypes
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from .module import Module
from ..parameter import Parameter
from ...core.device import check_device as _check_device


class _NormBase(Module):
    """What batch and instance normalisation share (PyTorch's ``_NormBase``): an affine weight
    (ones) and bias (zeros) per channel, running statistics (mean zeros, variance ones, a batch
    count) when tracked, and their resets."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter("weight", Parameter(creation.empty(num_features, dtype=dtype)) if affine else None)
        self.register_parameter("bias", Parameter(creation.empty(num_features, dtype=dtype))
                                if affine and bias else None)
        for name, value in (("running_mean", creation.empty(num_features, dtype=dtype)),
                            ("running_var", creation.empty(num_features, dtype=dtype)),
                            ("num_batches_tracked", creation.tensor(0, dtype=dtypes.int64))):
            self.register_buffer(name, value if track_running_stats else None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    expected_dims = ()

    def forward(self, input):
        if input.ndim not in self.expected_dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self.expected_dims)} input "
                             f"(got {input.ndim}D input)")
        if input.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected {self.num_features} channels (dim 1), "
                             f"got input of shape {list(input.shape)}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        # (PyTorch's rules: batch statistics in training or without running ones; the running
        # ones are updated in training when tracked, and used in eval)
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None,
                            self.running_var if keep else None, self.weight, self.bias, use_batch,
                            momentum, self.eps)



class BatchNorm1d(_BatchNorm):
    """Over ``(N, C)`` or ``(N, C, L)``."""

    expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Over ``(N, C, H, W)``."""

    expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Over ``(N, C, D, H, W)``."""

    expected_dims = (5,)


class GroupNorm(Module):
    """Per-sample statistics over groups of channels (no running statistics)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *,
                 bias=True):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.register_parameter("weight", Parameter(creation.ones(num_channels, dtype=dtype)) if affine else None)
        self.register_parameter("bias", Parameter(creation.zeros(num_channels, dtype=dtype))
                                if affine and bias else None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None or not self.affine}")

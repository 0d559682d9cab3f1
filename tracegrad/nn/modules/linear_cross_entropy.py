"""``F.linear_cross_entropy``, ``nn.LinearCrossEntropyLoss`` and ``nn.LinearCrossEntropyOptions``
(PyTorch 2.13's): the cross entropy of a linear layer's logits in one call. The weight may
have extra output dims ``(C, *out_features, in_features)``, giving PyTorch's K-dimensional
loss.

PyTorch's ``options`` select a chunked kernel that never holds the whole logits tensor (a
memory saving). tracegrad computes the logits whole, eagerly or in the compiled program,
whose memory plan reuses their buffer; the options are checked and kept, and give the same
values.

>>> import tracegrad as tg
>>> loss = tg.nn.LinearCrossEntropyLoss(4, 3)
>>> tuple(loss(tg.randn(5, 4), tg.tensor([0, 1, 2, 0, 1])).shape)
()
"""
from __future__ import annotations

import dataclasses
import math

from .. import functional as F
from .basic import Linear
from .loss import _Loss
from ...core.device import check_device as _check_device

__all__ = ["linear_cross_entropy", "LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """PyTorch's settings of its chunked kernel (checked and kept; see the module docstring)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.batch_chunk_size is not None and self.batch_chunk_size <= 0:
            raise ValueError(f"batch_chunk_size must be positive, got {self.batch_chunk_size}")


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` with the logits
    laid out ``(*batch, C, *out_features)`` for a weight ``(C, *out_features, in_features)``."""
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}")
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), "
                           f"got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and input.ndim == 1:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
                           f"requires batched input, (N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits = (input @ linear_weight.reshape(-1, in_features).t()).reshape(*input.shape[:-1], num_classes,
                                                                             *out_features)
    if linear_bias is not None:
        logits = logits + linear_bias
    if tuple(target.shape) == tuple(logits.shape) and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    return F.cross_entropy(logits, target, weight=weight, ignore_index=-100 if ignore_index is None else ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)


class LinearCrossEntropyLoss(_Loss):
    """A linear layer ``in_features -> num_classes * prod(out_features)`` (``self.linear``) and
    the cross entropy of its logits."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(None, None, reduction)
        self.register_buffer("weight", weight)
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        w = self.linear.weight.reshape(self.num_classes, *self.out_features, self.linear.in_features)
        b = None if self.linear.bias is None else self.linear.bias.reshape(self.num_classes, *self.out_features)
        return linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight, reduction=self.reduction,
                                    ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
                                    options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")

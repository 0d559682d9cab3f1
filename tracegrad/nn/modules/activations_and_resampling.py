"""More of ``torch.nn``'s layers, each calling one function of ``tracegrad.nn.functional``:
piecewise activations, PReLU (a learnable slope), KLDivLoss, adaptive average pooling,
Upsample, PixelShuffle/PixelUnshuffle and Dropout2d, with PyTorch's arguments and reprs.

>>> import tracegrad as tg
>>> tg.nn.Hardswish()(tg.tensor([-4.0, 0.0, 1.0]))
tensor([-0.0000,  0.0000,  0.6667])
"""
from __future__ import annotations

import inspect

from ...core import creation
from .. import functional as F
from .activation import _activation
from .batchnorm import _NormBase
from .loss import _Loss
from .module import Module
from ..parameter import Parameter
from ...core.device import check_device as _check_device

ReLU6 = _activation("ReLU6", F.relu6, ("inplace",), (False,))
SELU = _activation("SELU", F.selu, ("inplace",), (False,))
CELU = _activation("CELU", F.celu, ("alpha", "inplace"), (1.0, False))
# (PyTorch prints no inplace flag for these two, and the shrinks' lambda bare)
Hardswish = _activation("Hardswish", F.hardswish, ("inplace",), (False,), extra_repr=lambda self: "")
Hardsigmoid = _activation("Hardsigmoid", F.hardsigmoid, ("inplace",), (False,), extra_repr=lambda self: "")
Softmin = _activation("Softmin", F.softmin, ("dim",), (None,))
Tanhshrink = _activation("Tanhshrink", F.tanhshrink)
Threshold = _activation("Threshold", F.threshold, ("threshold", "value", "inplace"), (None, None, False))
Softshrink = _activation("Softshrink", F.softshrink, ("lambd",), (0.5,), extra_repr=lambda self: f"{self.lambd}")
Hardshrink = _activation("Hardshrink", F.hardshrink, ("lambd",), (0.5,), extra_repr=lambda self: f"{self.lambd}")


class PReLU(Module):
    """``x`` where positive, ``weight * x`` elsewhere: one learnable slope, or one per channel."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = Parameter(creation.full((num_parameters,), float(init), dtype=dtype))

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class KLDivLoss(_Loss):
    """``F.kl_div``: input log-probabilities against target probabilities (or log ones)."""

    reductions = _Loss.reductions + ("batchmean",)

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class _AdaptiveAvgPool(Module):
    fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self).fn(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPool):
    fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPool):
    fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPool):
    fn = staticmethod(F.adaptive_avg_pool3d)


class Upsample(Module):
    """``F.interpolate`` to ``size`` or by ``scale_factor``."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size, self.mode, self.align_corners = size, mode, align_corners
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else scale_factor
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        what = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{what}, mode={self.mode!r}"


class PixelShuffle(Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class Dropout2d(Module):
    """Zeroes whole channels with probability ``p`` while training."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


def _loss(name, fn, params, keyword_only=False):
    """A loss module calling ``fn(*inputs, **options, reduction=...)``. ``params`` lists its
    constructor's arguments in PyTorch's order, with their defaults: its options, ``reduction``
    and, where PyTorch has them, the deprecated ``size_average`` and ``reduce`` (all
    keyword-only if so)."""
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY if keyword_only
                             else inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d) for n, d in params])

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)  # PyTorch's TypeError for a bad call
        bound.apply_defaults()
        values = dict(bound.arguments)
        del values["self"]
        _Loss.__init__(self, values.pop("size_average", None), values.pop("reduce", None),
                       values.pop("reduction"))
        self._options = values

    __init__.__signature__ = signature

    def forward(self, *inputs):
        return fn(*inputs, **self._options, reduction=self.reduction)

    return type(name, (_Loss,), {"__init__": __init__, "forward": forward, "__module__": __name__,
                                 "__doc__": f"``F.{fn.__name__}`` as a module."})


_LEGACY_DEFAULTS = [("size_average", None), ("reduce", None), ("reduction", "mean")]
MarginRankingLoss = _loss("MarginRankingLoss", F.margin_ranking_loss, [("margin", 0.0), *_LEGACY_DEFAULTS])
HingeEmbeddingLoss = _loss("HingeEmbeddingLoss", F.hinge_embedding_loss, [("margin", 1.0), *_LEGACY_DEFAULTS])
SoftMarginLoss = _loss("SoftMarginLoss", F.soft_margin_loss, _LEGACY_DEFAULTS)
CosineEmbeddingLoss = _loss("CosineEmbeddingLoss", F.cosine_embedding_loss, [("margin", 0.0), *_LEGACY_DEFAULTS])
TripletMarginLoss = _loss("TripletMarginLoss", F.triplet_margin_loss,
                          [("margin", 1.0), ("p", 2.0), ("eps", 1e-6), ("swap", False), *_LEGACY_DEFAULTS])
GaussianNLLLoss = _loss("GaussianNLLLoss", F.gaussian_nll_loss, [("full", False), ("eps", 1e-6), ("reduction", "mean")],
                        keyword_only=True)
PoissonNLLLoss = _loss("PoissonNLLLoss", F.poisson_nll_loss,
                       [("log_input", True), ("full", False), ("size_average", None), ("eps", 1e-8),
                        ("reduce", None), ("reduction", "mean")])


class MultiLabelSoftMarginLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class _InstanceNorm(_NormBase):
    """Each channel of each sample normalised over its spatial dims; ``affine`` adds a
    per-channel weight (ones) and bias (zeros); ``track_running_stats`` keeps running averages
    of the statistics (updated in training, used in eval), as PyTorch's."""

    dims = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None, bias=True):
        # (num_batches_tracked is kept, as PyTorch's, though never counted)
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        if input.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.ndim}D input)")
        unbatched = input.ndim == self.dims + 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    dims = 1


class InstanceNorm2d(_InstanceNorm):
    dims = 2


class InstanceNorm3d(_InstanceNorm):
    dims = 3


LAYERS_MORE = ["ReLU6", "SELU", "CELU", "Hardswish", "Hardsigmoid", "Softmin", "Tanhshrink",
               "Threshold", "Softshrink", "Hardshrink", "PReLU", "KLDivLoss", "AdaptiveAvgPool1d",
               "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "Upsample", "PixelShuffle", "PixelUnshuffle",
               "Dropout2d", "MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
               "CosineEmbeddingLoss", "TripletMarginLoss", "GaussianNLLLoss", "PoissonNLLLoss",
               "MultiLabelSoftMarginLoss", "PairwiseDistance", "CosineSimilarity", "InstanceNorm1d",
               "InstanceNorm2d", "InstanceNorm3d"]

"""More of ``torch.nn``'s layers, each calling one function of ``tracegrad.nn.functional``:
piecewise activations, PReLU (a learnable slope), KLDivLoss, adaptive average pooling,
Upsample, PixelShuffle/PixelUnshuffle and Dropout2d, with PyTorch's arguments and reprs.

>>> import tracegrad as tg
>>> tg.nn.Hardswish()(tg.tensor([-4.0, 0.0, 1.0]))
tensor([-0.0000,  0.0000,  0.6667])
"""
from __future__ import annotations

from .. import creation
from . import functional as F
from .activation import _activation
from .loss import _Loss
from .module import Module
from .parameter import Parameter

ReLU6 = _activation("ReLU6", F.relu6, ("inplace",), (False,))
SELU = _activation("SELU", F.selu, ("inplace",), (False,))
CELU = _activation("CELU", F.celu, ("alpha", "inplace"), (1.0, False))
Hardswish = _activation("Hardswish", F.hardswish, ("inplace",), (False,))
Hardsigmoid = _activation("Hardsigmoid", F.hardsigmoid, ("inplace",), (False,))
Softmin = _activation("Softmin", F.softmin, ("dim",), (None,))
Tanhshrink = _activation("Tanhshrink", F.tanhshrink)
Threshold = _activation("Threshold", F.threshold, ("threshold", "value", "inplace"), (None, None, False))
_Softshrink = _activation("Softshrink", F.softshrink, ("lambd",), (0.5,))
_Hardshrink = _activation("Hardshrink", F.hardshrink, ("lambd",), (0.5,))


class Softshrink(_Softshrink):
    def extra_repr(self):
        return f"{self.lambd}"


class Hardshrink(_Hardshrink):
    def extra_repr(self):
        return f"{self.lambd}"


for _cls in (ReLU6, SELU, CELU, Hardswish, Hardsigmoid, Softmin, Tanhshrink, Threshold):
    _cls.__module__ = __name__


class PReLU(Module):
    """``x`` where positive, ``weight * x`` elsewhere: one learnable slope, or one per channel."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = Parameter(creation.full((num_parameters,), float(init), dtype=dtype))

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class KLDivLoss(_Loss):
    """``F.kl_div``: input log-probabilities against target probabilities (or log ones)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__("sum" if reduction == "batchmean" else reduction)  # (validated there)
        self.reduction, self.log_target = reduction, log_target

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
        return F.dropout2d(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


LAYERS_MORE = ["ReLU6", "SELU", "CELU", "Hardswish", "Hardsigmoid", "Softmin", "Tanhshrink",
               "Threshold", "Softshrink", "Hardshrink", "PReLU", "KLDivLoss", "AdaptiveAvgPool1d",
               "AdaptiveAvgPool2d", "Upsample", "PixelShuffle", "PixelUnshuffle", "Dropout2d"]

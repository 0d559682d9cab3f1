"""Still more of ``torch.nn``'s layers, each calling a function of
``tracegrad.nn.functional``, with PyTorch's arguments, parameter names and reprs: RMSNorm,
LocalResponseNorm, Bilinear, the channel and alpha dropouts, Softmax2d, ChannelShuffle,
Unfold/Fold, the fixed-mode upsamplers, adaptive max, Lp pooling and max unpooling,
ConvTranspose1d, EmbeddingBag and RReLU.

>>> import tracegrad as tg
>>> tg.nn.RMSNorm(2)
RMSNorm((2,), eps=None, elementwise_affine=True)
"""
from __future__ import annotations

import math

from ...core import creation
from .. import functional as F
from .. import init
from .conv import _ConvTransposeNd
from .basic import Embedding
from .activations_and_resampling import Dropout2d, Upsample
from .module import Module
from ..parameter import Parameter
from ...core.device import check_device as _check_device


class RMSNorm(Module):
    """Divides by the root mean square over the trailing ``normalized_shape`` dims, then
    scales by ``weight`` (ones) when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape, self.eps = tuple(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(*self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"




class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class Bilinear(Module):
    """``x1^T A x2 + b``: weight ``(out, in1, in2)`` and bias uniform in +-1/sqrt(in1)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(creation.empty(out_features, in1_features, in2_features, dtype=dtype))
        if bias:
            self.bias = Parameter(creation.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        bound = 1 / math.sqrt(in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Dropout1d(Dropout2d):
    """Zeroes whole channels of ``(N, C, L)`` with probability ``p`` while training."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout2d):
    """Zeroes whole channels of ``(N, C, D, H, W)`` with probability ``p`` while training."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout2d):
    """AlphaDropout of whole channels, while training."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)


class AlphaDropout(Dropout2d):
    """Dropout that keeps SELU's self-normalising mean and variance, while training."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of ``(N, C, H, W)`` or ``(C, H, W)``."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class Unfold(Module):
    """``F.unfold`` (sliding windows as columns)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Unfold):
    """``F.fold`` (columns summed back into an ``output_size`` image)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return f"output_size={self.output_size}, " + super().extra_repr()


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling with ``align_corners=True``, as PyTorch's."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class _AdaptiveMaxPool(Module):
    fn = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return type(self).fn(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    fn = staticmethod(F.adaptive_max_pool3d)


class _LPPool(Module):
    fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return type(self).fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPool):
    fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPool):
    fn = staticmethod(F.lp_pool3d)


class _MaxUnpool(Module):
    size = None  # (a size as a tuple of this many dims)
    fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        size = (lambda v: (v,) * self.size if isinstance(v, int) else tuple(v))
        self.kernel_size = size(kernel_size)
        self.stride = size(stride if stride is not None else kernel_size)
        self.padding = size(padding)

    def forward(self, input, indices, output_size=None):
        return type(self).fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    size = 1
    fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpool):
    size = 2
    fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpool):
    size = 3
    fn = staticmethod(F.max_unpool3d)


class ConvTranspose1d(_ConvTransposeNd):
    """The transpose of Conv1d, weight ``(C_in, C_out/groups, k)``."""

    dims = 1
    _functional = staticmethod(F.conv_transpose1d)


class EmbeddingBag(Embedding):
    """Sums, means or maxima of bags of embeddings (``F.embedding_bag``); weight from N(0, 1),
    the ``padding_idx`` row zero."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                         sparse, _weight, dtype=dtype)
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False, include_last_offset=False,
                        padding_idx=None):
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        bag = cls(*embeddings.shape, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, mode=self.mode,
                               per_sample_weights=per_sample_weights,
                               include_last_offset=self.include_last_offset, padding_idx=self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class RReLU(Module):
    """``x`` where positive, ``a x`` elsewhere: ``a`` uniform in ``[lower, upper]`` per element
    while training, their mean in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


LAYERS_EXTRA = ["RMSNorm", "LocalResponseNorm", "Bilinear", "Dropout1d", "Dropout3d", "AlphaDropout",
                "FeatureAlphaDropout", "Softmax2d", "ChannelShuffle", "Unfold", "Fold",
                "UpsamplingNearest2d", "UpsamplingBilinear2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
                "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
                "ConvTranspose1d", "EmbeddingBag", "RReLU"]

"""Conv2d, MaxPool2d, AvgPool2d (NCHW), their 1-D (NCL) and 3-D (NCDHW) forms, and the
transposed convolutions ConvTranspose2d and ConvTranspose3d, with PyTorch's arguments,
initialisation and repr.

>>> import tracegrad as tg
>>> _ = tg.manual_seed(0)
>>> conv = tg.nn.Conv2d(1, 8, 3, padding=1)
>>> conv
Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
>>> conv(tg.ones(2, 1, 6, 6)).shape
tracegrad.Size([2, 8, 6, 6])
>>> tg.nn.MaxPool2d(2)
MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
"""
from __future__ import annotations

import math

from ...core import creation
from .. import functional as F
from .. import init
from .basic import _uniform_bias
from .module import Module
from ..parameter import Parameter
from ...core.device import check_device as _check_device


def _ntuple(v, n, name):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) != n or not all(isinstance(x, int) for x in v):
        raise ValueError(f"{name} must be an int or {'a pair of' if n == 2 else n} ints, got {v!r}")
    return v


def _pair(v, name):
    return _ntuple(v, 2, name)


# Conv's padding_mode: F.pad's mode for it
PADDING_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "replicate", "circular": "circular"}


class Conv2d(Module):
    """2-D convolution over ``(N, C_in, H, W)`` with weight ``(C_out, C_in/groups, kH, kW)``."""

    dims = 2  # (the spatial dims its sizes have)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.kernel_size = _ntuple(kernel_size, self.dims, "kernel_size")
        self.stride = _ntuple(stride, self.dims, "stride")
        self.dilation = _ntuple(dilation, self.dims, "dilation")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(padding, self.dims, "padding")
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(PADDING_MODES)}, but got "
                             f"padding_mode={padding_mode!r}")
        self.padding_mode = padding_mode
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.weight = Parameter(creation.empty(out_channels, in_channels // groups, *self.kernel_size,
                                               dtype=dtype))
        if bias:
            self.bias = Parameter(creation.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            _uniform_bias(self.bias, self.weight)

    def forward(self, input):
        input, padding = self._mode_padded(input)
        return F.conv2d(input, self.weight, self.bias, stride=self.stride, padding=padding,
                        dilation=self.dilation, groups=self.groups)

    def _mode_padded(self, input):
        """(input, the convolution's padding): for a ``padding_mode`` other than zeros the input
        is padded by ``F.pad`` in that mode first, as PyTorch's Conv does ('same' puts the odd
        element on the right)."""
        if self.padding_mode == "zeros":
            return input, self.padding
        if self.padding == "valid":
            sides = [(0, 0)] * len(self.kernel_size)
        elif self.padding == "same":
            totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            sides = [(t // 2, t - t // 2) for t in totals]
        else:
            sides = [(p, p) for p in self.padding]
        flat = [n for side in reversed(sides) for n in side]  # F.pad: the last dim first
        return F.pad(input, flat, mode=PADDING_MODES[self.padding_mode]), 0

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self.dims:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class MaxPool2d(Module):
    """Max over ``kernel_size`` windows; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        kwargs = dict(stride=self.stride, padding=self.padding, dilation=self.dilation,
                      ceil_mode=self.ceil_mode)
        if self.return_indices:
            kwargs["return_indices"] = True
        return F.max_pool2d(input, self.kernel_size, **kwargs)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """Mean over ``kernel_size`` windows; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(MaxPool2d):
    """Max over ``kernel_size`` windows of ``(N, C, D, H, W)``."""

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class AvgPool3d(AvgPool2d):
    """Mean over ``kernel_size`` windows of ``(N, C, D, H, W)``."""

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class Conv1d(Conv2d):
    """1-D convolution over ``(N, C_in, L)`` with weight ``(C_out, C_in/groups, k)``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        one = lambda v: (v,) if isinstance(v, int) else tuple(v)
        super().__init__(in_channels, out_channels, (1,) + one(kernel_size), (1,) + one(stride),
                         padding if isinstance(padding, str) else (0,) + one(padding),
                         (1,) + one(dilation), groups, bias, padding_mode, device, dtype)
        with _no_grad():  # the weight without the height of 1 (initialised as PyTorch's)
            self.weight = Parameter(self.weight.detach().squeeze(2))
        self._parameters["bias"] = self._parameters.pop("bias")  # (PyTorch's order: weight, bias)
        self.kernel_size, self.stride, self.dilation = (self.kernel_size[1:], self.stride[1:],
                                                        self.dilation[1:])
        if not isinstance(self.padding, str):
            self.padding = self.padding[1:]

    def forward(self, input):
        input, padding = self._mode_padded(input)
        return F.conv1d(input, self.weight, self.bias, stride=self.stride, padding=padding,
                        dilation=self.dilation, groups=self.groups)

    def extra_repr(self):
        return super().extra_repr().replace(", padding=(0,)", "").replace(", dilation=(1,)", "")


class Conv3d(Conv2d):
    """3-D convolution over ``(N, C_in, D, H, W)`` with weight ``(C_out, C_in/groups, kD, kH,
    kW)``."""

    dims = 3

    def forward(self, input):
        input, padding = self._mode_padded(input)
        return F.conv3d(input, self.weight, self.bias, stride=self.stride, padding=padding,
                        dilation=self.dilation, groups=self.groups)


class MaxPool1d(MaxPool2d):
    """Max over ``kernel_size`` windows of ``(N, C, L)``."""

    def forward(self, input):
        kwargs = dict(stride=self.stride, padding=self.padding, dilation=self.dilation,
                      ceil_mode=self.ceil_mode)
        if self.return_indices:
            kwargs["return_indices"] = True
        return F.max_pool1d(input, self.kernel_size, **kwargs)


class AvgPool1d(AvgPool2d):
    """Mean over ``kernel_size`` windows of ``(N, C, L)``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        one = lambda v: (v,) if isinstance(v, int) else tuple(v)
        super().__init__(one(kernel_size), None if stride is None else one(stride), one(padding),
                         ceil_mode, count_include_pad)

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


def _no_grad():
    from ...autograd.grad_mode import no_grad

    return no_grad()


def _output_padding(conv, input, output_size):
    """A transposed convolution's output_padding, or the one that gives ``output_size`` (its
    spatial sizes, optionally after the batch and channel sizes), as PyTorch's."""
    if output_size is None:
        return conv.output_padding
    k = len(conv.kernel_size)
    lead = 2 if input.ndim == k + 2 else 1
    output_size = tuple(output_size)
    if len(output_size) == lead + k:
        output_size = output_size[lead:]
    if len(output_size) != k:
        raise ValueError(f"ConvTranspose{k}D: for {input.ndim}D input, output_size must have {k} or "
                         f"{lead + k} elements (got {len(output_size)})")
    low = [(input.shape[lead + d] - 1) * conv.stride[d] - 2 * conv.padding[d]
           + conv.dilation[d] * (conv.kernel_size[d] - 1) + 1 for d in range(k)]
    high = [m + s - 1 for m, s in zip(low, conv.stride)]
    if any(not lo <= size <= hi for size, lo, hi in zip(output_size, low, high)):
        raise ValueError(f"requested an output size of {list(output_size)}, but valid sizes range from "
                         f"{low} to {high} (for an input of {list(input.shape[lead:])})")
    return tuple(size - lo for size, lo in zip(output_size, low))


class _ConvTransposeNd(Module):
    """The transpose of a ``dims``-d convolution (a "deconvolution"): weight ``(C_in,
    C_out/groups, *kernel)``; ``forward`` takes an ``output_size`` as PyTorch's."""

    dims = 2
    _functional = None  # F.conv_transpose1d / 2d / 3d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(f"Only \"zeros\" padding mode is supported for {type(self).__name__}, "
                             f"got {padding_mode!r}")
        n = self.dims
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _ntuple(kernel_size, n, "kernel_size"), _ntuple(stride, n, "stride")
        self.padding, self.dilation = _ntuple(padding, n, "padding"), _ntuple(dilation, n, "dilation")
        self.output_padding, self.padding_mode = _ntuple(output_padding, n, "output_padding"), padding_mode
        self.weight = Parameter(creation.empty(in_channels, out_channels // groups, *self.kernel_size,
                                               dtype=dtype))
        if bias:
            self.bias = Parameter(creation.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    reset_parameters = Conv2d.reset_parameters

    def forward(self, input, output_size=None):
        return type(self)._functional(input, self.weight, self.bias, self.stride, self.padding,
                                      _output_padding(self, input, output_size), self.groups, self.dilation)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        for name, default in (("padding", 0), ("dilation", 1), ("output_padding", 0)):
            if getattr(self, name) != (default,) * self.dims:
                s += f", {name}={getattr(self, name)}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class ConvTranspose2d(_ConvTransposeNd):
    """The transpose of Conv2d, weight ``(C_in, C_out/groups, kH, kW)``."""

    dims = 2
    _functional = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """The transpose of Conv3d, weight ``(C_in, C_out/groups, kD, kH, kW)``."""

    dims = 3
    _functional = staticmethod(F.conv_transpose3d)

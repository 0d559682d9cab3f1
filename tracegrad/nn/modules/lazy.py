"""Lazy modules (PyTorch's ``torch.nn.modules.lazy``): layers whose input size (``in_features``,
``in_channels``, ``num_features``) comes from their first input. Until then their weights are
``UninitializedParameter`` (and running statistics ``UninitializedBuffer``); the first call
materializes and initialises them as the eager layer's constructor would, and the module
becomes that layer (``LazyLinear`` becomes ``Linear``).

The initialisation runs eagerly even when the first call is being traced by ``tg.compile``
(it happens once, not in every run of the program); the traced forward then reads the new
parameters as any module's. A lazy module compiled itself, ``tg.compile(lazy)``, has its
forward traced without its hooks, so it needs a first eager call (a dry run) before.

>>> import tracegrad as tg
>>> layer = tg.nn.LazyLinear(3)
>>> layer
LazyLinear(in_features=0, out_features=3, bias=True)
>>> layer.has_uninitialized_params()
True
>>> layer(tg.ones(2, 5)).shape
tracegrad.Size([2, 3])
>>> layer
Linear(in_features=5, out_features=3, bias=True)
"""
from __future__ import annotations

import itertools

from ...core import creation, dtypes
from ...autograd.grad_mode import no_grad
from ...core import tracing as trace
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, _NormBase
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from .basic import Linear
from .norms_and_dropouts import ConvTranspose1d
from .activations_and_resampling import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from ...core.device import check_device as _check_device

LAZY_MODULES = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
                "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
                "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Materializes a module's uninitialized parameters and buffers at its first forward (a
    forward pre-hook) or when a state dict with real tensors is loaded into it, then turns the
    module into ``cls_to_become``. Subclasses define ``initialize_parameters(input)``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        """Loading real tensors into uninitialized ones gives them the loaded shapes first."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            value = state_dict.get(prefix + name)
            if value is not None and param is not None and is_lazy(param) and not is_lazy(value):
                with no_grad():
                    param.materialize(value.shape)

    def initialize_parameters(self, *args, **kwargs):
        """Infer the sizes from the first input and materialize the parameters."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self):
        """Whether any of this module's own parameters or buffers is uninitialized."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        # (eagerly, also while a compiled function traces its first call: see the module doc)
        with trace.paused(), no_grad():
            module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook, module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


def _uninitialized_weight_and_bias(module, bias, dtype):
    """A lazy layer's ``weight`` (and ``bias`` when asked for) as UninitializedParameters."""
    module.weight = UninitializedParameter(dtype=dtype)
    if bias:
        module.bias = UninitializedParameter(dtype=dtype)


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is the first input's last size."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__(0, 0, False)  # (no bias: it would be replaced at once)
        self.out_features = out_features
        _uninitialized_weight_and_bias(self, bias, dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()
        elif self.in_features == 0:  # (a state dict was loaded: its weight has the size)
            if input.shape[-1] != self.weight.shape[-1]:
                raise RuntimeError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                   f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


class _LazyConvXdMixin(LazyModuleMixin):
    """``in_channels`` from the first input's channel size (its dim 1, or 0 unbatched)."""

    transposed = False

    def _lazy_init(self, out_channels, bias, dtype):
        self.out_channels = out_channels
        _uninitialized_weight_and_bias(self, bias, dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        channels = ((self.in_channels, self.out_channels // self.groups) if self.transposed
                    else (self.out_channels, self.in_channels // self.groups))
        self.weight.materialize(channels + tuple(self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()

    def _get_in_channels(self, input):
        spatial = len(self.kernel_size)
        if input.ndim not in (spatial + 1, spatial + 2):
            raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {list(input.shape)}")
        return input.shape[1] if input.ndim == spatial + 2 else input.shape[0]


def _lazy_conv(name, base):
    """``LazyConv{1,2,3}d`` for ``base``: its arguments without ``in_channels``."""
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        # (through the mixin to base's: no bias, it would be replaced at once)
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                                 device, dtype)
        self._lazy_init(out_channels, bias, dtype)

    return _lazy_class(name, _LazyConvXdMixin, base, "in_channels", __init__=__init__)


def _lazy_conv_transpose(name, base):
    """``LazyConvTranspose{1,2,3}d`` for ``base``: its arguments without ``in_channels``."""
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                                 dilation, padding_mode, device, dtype)
        self._lazy_init(out_channels, bias, dtype)

    return _lazy_class(name, _LazyConvXdMixin, base, "in_channels", __init__=__init__, transposed=True)


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """``num_features`` from the first input's channel size. (Affine and tracking by default,
    instance norms too, as PyTorch's lazy norms.)"""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None,
                 *, bias=True):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)
            self.num_batches_tracked = creation.tensor(0, dtype=dtypes.int64)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        self.num_features = self._features_of(input)
        for t in (self.weight, self.bias, self.running_mean, self.running_var):
            if t is not None:
                t.materialize((self.num_features,))
        self.reset_parameters()

    def _features_of(self, input):
        return input.shape[1]


class _LazyInstanceNormBase(_LazyNormBase):
    def _features_of(self, input):
        # the channels of unbatched input too (PyTorch's reads dim 1 there, the length, and then
        # fails its own check)
        return input.shape[0] if input.ndim == self.dims + 1 else input.shape[1]


def _lazy_class(name, lazy_base, base, inferred, **attributes):
    """The class ``name``: ``base`` made lazy by ``lazy_base``, becoming ``base`` at its first
    call."""
    doc = f"A ``{base.__name__}`` whose ``{inferred}`` is the first input's channel size."
    return type(name, (lazy_base, base), {"cls_to_become": base, "__doc__": doc, **attributes})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d)
LazyConvTranspose1d = _lazy_conv_transpose("LazyConvTranspose1d", ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose("LazyConvTranspose2d", ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose("LazyConvTranspose3d", ConvTranspose3d)
LazyBatchNorm1d = _lazy_class("LazyBatchNorm1d", _LazyNormBase, BatchNorm1d, "num_features")
LazyBatchNorm2d = _lazy_class("LazyBatchNorm2d", _LazyNormBase, BatchNorm2d, "num_features")
LazyBatchNorm3d = _lazy_class("LazyBatchNorm3d", _LazyNormBase, BatchNorm3d, "num_features")
LazyInstanceNorm1d = _lazy_class("LazyInstanceNorm1d", _LazyInstanceNormBase, InstanceNorm1d, "num_features")
LazyInstanceNorm2d = _lazy_class("LazyInstanceNorm2d", _LazyInstanceNormBase, InstanceNorm2d, "num_features")
LazyInstanceNorm3d = _lazy_class("LazyInstanceNorm3d", _LazyInstanceNormBase, InstanceNorm3d, "num_features")

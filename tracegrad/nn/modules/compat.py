"""``torch.nn`` classes for code written for more than one device or for older PyTorch, with
what they mean in one CPU process: ``SyncBatchNorm`` is batch norm (a process group of one),
``DataParallel`` runs its module (no devices to scatter to), ``Buffer`` marks a tensor to be
registered as a buffer when assigned to a module, ``Container`` and ``NLLLoss2d`` are the
deprecated names PyTorch still has.

>>> import tracegrad as tg
>>> m = tg.nn.Module()
>>> m.stats = tg.nn.Buffer(tg.zeros(2))
>>> list(m.state_dict())
['stats']
"""
from __future__ import annotations

import warnings

from ...core import creation
from ...core.tensor import Tensor
from .batchnorm import _BatchNorm
from .loss import NLLLoss
from .module import Module
from ...core.device import check_device as _check_device

__all__ = ["Buffer", "SyncBatchNorm", "DataParallel", "Container", "NLLLoss2d"]


class _BufferMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor) and getattr(other, "_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    """``Buffer(data, persistent=True)``: ``data`` detached, marked so that assigning it to a
    module attribute registers a buffer (``persistent=False``: kept out of the state dict)."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = creation.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t._is_buffer = True
        t.persistent = persistent
        return t


class SyncBatchNorm(_BatchNorm):
    """Batch norm over every dim but the channels (dim 1) of an input of 2 or more dims; its
    statistics would be synchronised across a process group, which one CPU process is alone
    in (``process_group`` is kept, not used)."""

    expected_dims = tuple(range(2, 33))  # (any input of 2 or more dims)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def forward(self, input):
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every batch norm replaced by a SyncBatchNorm holding its parameters
        and statistics (the module itself when it is one)."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group, bias=module.bias is not None)
            for name in ("weight", "bias"):
                if getattr(module, name) is not None:
                    setattr(out, name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                out._buffers[name] = module._buffers[name]
            out.train(module.training)
            return out
        for name, child in list(module._modules.items()):
            if child is not None:
                module._modules[name] = cls.convert_sync_batchnorm(child, process_group)
        return module


class DataParallel(Module):
    """Runs ``module`` (held as ``.module``, so state-dict keys start with ``module.``): with
    no devices to scatter to, PyTorch's DataParallel does the same."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids, self.output_device, self.dim = [], output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class Container(Module):
    """Deprecated (PyTorch's too): a Module whose keyword arguments become child modules."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in "
                      "nn.Module. Subclass that instead.", stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)


class NLLLoss2d(NLLLoss):
    """Deprecated alias of NLLLoss (which takes images of class scores as they are)."""

    def __init__(self, *args, **kwargs):  # (PyTorch's signature: all passed through)
        super().__init__(*args, **kwargs)

"""Still more of ``torch.nn``'s layers, each calling a function of
``tracegrad.nn.functional``, with PyTorch's arguments, parameter names and reprs: RMSNorm,
...

>>> import tracegrad as tg
>>> tg.nn.RMSNorm(2)
RMSNorm((2,), eps=None, elementwise_affine=True)
"""
from __future__ import annotations

from .. import creation
from . import functional as F
from .module import Module
from .parameter import Parameter


class RMSNorm(Module):
    """Divides by the root mean square over the trailing ``normalized_shape`` dims, then
    scales by ``weight`` (ones) when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
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


LAYERS_EXTRA = ["RMSNorm"]

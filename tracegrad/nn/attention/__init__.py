"""``tg.nn.attention`` (PyTorch's ``torch.nn.attention``): ``SDPBackend`` and the
``sdpa_kernel`` context manager that code uses to pick a backend of
``F.scaled_dot_product_attention``. tracegrad has one implementation of attention (composed of
its ops, so it differentiates and compiles); every backend names it, and the choice is kept
for code that reads it back. The ``flex_attention`` submodule holds PyTorch's
``flex_attention``, ``BlockMask`` and ``create_block_mask``.

>>> import tracegrad as tg
>>> from tracegrad.nn.attention import SDPBackend, sdpa_kernel
>>> q = tg.randn(1, 2, 4, 8)
>>> with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
...     out = tg.nn.functional.scaled_dot_product_attention(q, q, q)
>>> tuple(out.shape)
(1, 2, 4, 8)
"""
from __future__ import annotations

import contextlib
import enum
import threading

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __repr__(self):
        return f"<SDPBackend.{self.name}: {self.value}>"

    def __str__(self):
        return f"SDPBackend.{self.name}"


class _Chosen(threading.local):
    backends = tuple(b for b in SDPBackend if b is not SDPBackend.ERROR)


_chosen = _Chosen()


def enabled_backends():
    """The backends the innermost ``sdpa_kernel`` allows (all, outside one)."""
    return _chosen.backends


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block, only ``backends`` (one, or a list) may run attention."""
    chosen = (backends,) if isinstance(backends, SDPBackend) else tuple(backends)
    for b in chosen:
        if not isinstance(b, SDPBackend):
            raise AssertionError(f"Backend must be an instance of SDPBackend, got {type(b).__name__}")
    previous = _chosen.backends
    _chosen.backends = chosen
    try:
        yield
    finally:
        _chosen.backends = previous


# the submodule, as torch.nn.attention.flex_attention (imported so the attribute exists)
from . import flex_attention

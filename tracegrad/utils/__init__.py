"""``tg.utils`` (as ``torch.utils``): ``data`` (datasets and batching) and ``checkpoint``
(activation checkpointing)."""
from . import checkpoint, data

__all__ = ["data", "checkpoint"]

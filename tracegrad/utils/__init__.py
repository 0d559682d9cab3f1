"""``tg.utils`` (as ``torch.utils``): ``data``, datasets and batching."""
from . import data

__all__ = ["data"]

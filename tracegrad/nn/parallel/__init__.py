"""``tg.nn.parallel``: ``DistributedDataParallel`` (data-parallel training over
``tracegrad.distributed``), as ``torch.nn.parallel``."""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]

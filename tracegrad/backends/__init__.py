"""``tg.backends`` (PyTorch's ``torch.backends``): the switches code written for GPUs sets
(``cudnn.benchmark``, ``cuda.matmul.allow_tf32``...) are accepted and kept, and the queries
answer as PyTorch's CPU build does. None of them changes what tracegrad computes on the CPU.

>>> import tracegrad as tg
>>> tg.backends.cudnn.benchmark = True
>>> tg.backends.cudnn.is_available(), tg.backends.mps.is_available()
(False, False)
"""
from . import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]

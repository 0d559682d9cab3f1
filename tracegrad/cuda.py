"""``tg.cuda`` (PyTorch's ``torch.cuda``) for code written for more than one device: the queries
answer as PyTorch's CPU build does (no device, nothing allocated), seeding is accepted (PyTorch
defers it until a GPU is used, and there is none), and anything that needs a GPU raises the
CPU build's error. This version of tracegrad keeps every tensor in host memory.

>>> import tracegrad as tg
>>> device = "cuda" if tg.cuda.is_available() else "cpu"
>>> tg.ones(2, device=device).device
device(type='cpu')
"""
from __future__ import annotations

from .core.device import device as _device
from .core.device import no_device_error as _no_device_error

__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed",
           "seed_all", "synchronize", "current_device", "set_device", "get_device_name",
           "get_device_capability", "get_device_properties", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "is_bf16_supported", "device"]


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def manual_seed(seed: int) -> None:
    """Accepted and ignored, as PyTorch does without a GPU (its seeding waits for one)."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    int(seed)


def seed() -> None:
    pass


def seed_all() -> None:
    pass


def empty_cache() -> None:
    pass


def memory_allocated(device=None) -> int:
    return 0


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated


def reset_peak_memory_stats(device=None) -> None:
    pass


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def _needs_a_gpu(*args, **kwargs):
    raise _no_device_error(_device("cuda"))


synchronize = current_device = set_device = get_device_name = _needs_a_gpu
get_device_capability = get_device_properties = _needs_a_gpu


class device:  # (torch.cuda.device, a context manager selecting a GPU)
    def __init__(self, device) -> None:
        raise _no_device_error(_device("cuda"))

"""``DistributedSampler`` (PyTorch's ``torch.utils.data.distributed``): each rank of a
data-parallel job reads its own share of a map-style dataset.

The shuffled order is PyTorch's, index for index: PyTorch draws ``torch.randperm(n)`` from a
generator seeded with ``seed + epoch``, which is a Fisher-Yates pass driven by the 32-bit outputs
of MT19937 seeded the way ``std::mt19937`` is. NumPy ships MT19937, so ``_torch_randperm``
replays that pass. Why bother: a job ported from PyTorch (or compared against it) sees the same
samples on the same rank in the same epoch, and every rank computes the same permutation
without communicating. (Above ``2**32 / 20`` indices PyTorch switches to 64-bit draws; there
the order comes from NumPy's MT19937 stream directly and is not PyTorch's.)

>>> from tracegrad.utils.data.distributed import DistributedSampler
>>> [list(DistributedSampler(range(5), num_replicas=2, rank=r, shuffle=False)) for r in range(2)]
[[0, 2, 4], [1, 3, 0]]
"""
from __future__ import annotations

import math

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]

# torch.randperm on the CPU uses 32-bit draws below this length (and 64-bit ones above it)
_TORCH_SMALL_RANDPERM = 2**32 // 20


def _mt19937(seed: int) -> np.random.MT19937:
    """NumPy's MT19937 in the state ``std::mt19937(seed)`` starts from (PyTorch's CPU generator
    keeps the low 32 bits of its seed). NumPy's own seeding of MT19937 hashes the seed first, so
    the key is filled here with the reference initialisation."""
    key = np.empty(624, np.uint32)
    x = seed & 0xFFFFFFFF
    key[0] = x
    for i in range(1, 624):
        x = (1812433253 * (x ^ (x >> 30)) + i) & 0xFFFFFFFF
        key[i] = x
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
    return bits


def _torch_randperm(n: int, seed: int) -> list:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()``."""
    bits = _mt19937(seed)
    if n >= _TORCH_SMALL_RANDPERM:  # (not PyTorch's order: see the module's docstring)
        return np.random.Generator(bits).permutation(n).tolist()
    perm = list(range(n))
    if n < 2:
        return perm
    # step i swaps position i with i + (draw_i mod (n - i)); the offsets are vectorised, the
    # swaps are sequential by nature
    offsets = (bits.random_raw(n - 1).astype(np.int64) % np.arange(n, 1, -1)).tolist()
    for i, z in enumerate(offsets):
        j = i + z
        perm[i], perm[j] = perm[j], perm[i]
    return perm


class DistributedSampler(Sampler):
    """Rank ``rank`` of ``num_replicas``' share of ``dataset``: every ``num_replicas``-th index
    (from ``rank`` on) of the order, which is ``range(len(dataset))`` or, with ``shuffle``,
    PyTorch's permutation for ``seed + epoch`` (call ``set_epoch(epoch)`` before each epoch for
    a new order). Unless ``drop_last``, the order is padded with its own first indices so that
    every rank gets ``ceil(len / num_replicas)``; with ``drop_last`` the tail that does not divide
    evenly is dropped. ``num_replicas`` and ``rank`` default to the default process group's
    (``tracegrad.distributed.init_process_group``). Every rank must use the same ``seed``.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist  # (MPI starts only when a group is asked for)

            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            # raises PyTorch's "Default process group has not been initialized" outside a group
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank, self.epoch = dataset, num_replicas, rank, 0
        self.drop_last, self.shuffle, self.seed = drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas:
            # the largest share every rank can have without repeating an index
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        indices = _torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            # repeat the whole order as often as needed (more than once only when n < num_replicas)
            indices += (indices * math.ceil(padding / len(indices)))[:padding] if padding else []
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order the next ``__iter__`` gives (the same on every rank)."""
        self.epoch = epoch

"""Datasets and batching (the core of ``torch.utils.data``): ``Dataset``, ``TensorDataset``,
``DataLoader`` (batches, shuffling, ``drop_last``, a ``collate_fn``) and ``random_split``.
Shuffling draws from tracegrad's generator (``tg.manual_seed`` makes it repeatable; the
order is not PyTorch's, whose generator differs). With ``drop_last=True`` every batch has the
same shape, so a compiled step never retraces for the last one (else see ``dynamic=True``).

>>> import tracegrad as tg
>>> ds = tg.utils.data.TensorDataset(tg.arange(10).float(), tg.arange(10))
>>> [tuple(x.shape) for x, y in tg.utils.data.DataLoader(ds, batch_size=4)]
[(4,), (4,), (2,)]
"""
from __future__ import annotations

import numpy as np

from .. import creation
from .. import functional as F
from ..tensor import Tensor

__all__ = ["Dataset", "TensorDataset", "DataLoader", "random_split", "Subset", "default_collate"]


class Dataset:
    """Indexable samples: subclasses define ``__getitem__`` and ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``; all tensors share their first dim."""

    def __init__(self, *tensors):
        if not tensors or any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise ValueError("Size mismatch between tensors" if tensors else "TensorDataset needs tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def _permutation(n, generator=None):
    rng = (generator or creation.default_generator).rng
    return rng.permutation(n).tolist()


def random_split(dataset, lengths, generator=None):
    """Disjoint random Subsets of the given lengths (or fractions summing to 1)."""
    n = len(dataset)
    if all(0 <= x <= 1 for x in lengths) and abs(sum(lengths) - 1) < 1e-9 and sum(lengths) != n:
        sizes = [int(np.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):  # the remainder round-robin, as PyTorch
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order, out, start = _permutation(n, generator), [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out


def default_collate(samples):
    """Stack tensors (and numbers, and NumPy arrays) along a new first dim, recursing into
    tuples and lists (a list of the collated fields), dicts and namedtuples."""
    first = samples[0]
    if isinstance(first, Tensor):
        return F.stack(samples)
    if isinstance(first, np.ndarray):
        return creation.tensor(np.stack(samples))
    if isinstance(first, (bool, int, float, np.number)):
        return creation.tensor(samples)
    if isinstance(first, dict):
        return {k: default_collate([s[k] for s in samples]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple keeps its type
        return type(first)(*(default_collate(list(group)) for group in zip(*samples)))
    if isinstance(first, (tuple, list)):  # a list of the collated fields, as PyTorch
        return [default_collate(list(group)) for group in zip(*samples)]
    return samples


class DataLoader:
    """Batches of ``batch_size`` samples in order (or shuffled each epoch), collated by
    ``collate_fn``; ``drop_last`` drops a last, smaller batch. Runs in the calling process
    (``num_workers`` is accepted and ignored)."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, generator=None,
                 **_ignored):
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, shuffle, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.collate_fn = collate_fn or default_collate

    def _indices(self):
        if self.sampler is not None:
            return list(self.sampler)
        n = len(self.dataset)
        return _permutation(n, self.generator) if self.shuffle else list(range(n))

    def _batches(self):
        if self.batch_sampler is not None:
            return list(self.batch_sampler)
        idx, b = self._indices(), self.batch_size
        if b is None:
            return [[i] for i in idx]
        batches = [idx[i:i + b] for i in range(0, len(idx), b)]
        if self.drop_last and batches and len(batches[-1]) < b:
            batches.pop()
        return batches

    def __iter__(self):
        for batch in self._batches():
            if self.batch_size is None and self.batch_sampler is None:
                yield self.dataset[batch[0]]
            else:
                yield self.collate_fn([self.dataset[i] for i in batch])

    def __len__(self):
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

"""Samplers (PyTorch's ``torch.utils.data.sampler``; ``DistributedSampler`` is in
``distributed.py``): the order in which a DataLoader reads a map-style dataset. Random ones draw from a tracegrad Generator
(``generator=``, else one seeded from the global generator at each pass), so ``tg.manual_seed``
makes them repeatable; their orders are not PyTorch's, whose generator differs.

>>> import tracegrad as tg
>>> from tracegrad.utils.data import BatchSampler, SequentialSampler
>>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
[[0, 1], [2, 3], [4]]
"""
from __future__ import annotations

import numpy as np

from ...core import creation
from ...core.dtypes import float64
from ...core.random import Generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Sampler:
    """Yields indices (or lists of them); subclasses define ``__iter__`` and ``__len__``."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


def _rng(generator):
    """The generator's NumPy stream; without one, a fresh generator seeded from the global one
    (PyTorch's RandomSampler does the same with its own generator)."""
    if generator is not None:
        return generator.rng
    return Generator().manual_seed(creation.default_generator.next_seed()).rng


def _check_positive_int(name, value):
    """PyTorch's ValueError unless ``value`` is an int (not a bool) above 0."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"{name} should be a boolean value, but got {name}={value}")


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices (``num_samples`` of them: whole permutations
    repeated, then part of one), or ``num_samples`` draws with ``replacement``."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self._num_samples, self.generator = \
            data_source, replacement, num_samples, generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, rng = len(self.data_source), _rng(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[:self.num_samples % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        for i in _rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_positive_int("num_samples", num_samples)
        _check_bool("replacement", replacement)
        w = np.asarray(weights.detach().numpy() if hasattr(weights, "detach") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = creation.tensor(w, dtype=float64)  # (float64, as PyTorch keeps them)
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self):
        w = self.weights.numpy()
        if not self.replacement and self.num_samples > (w > 0).sum():
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        picks = _rng(self.generator).choice(len(w), self.num_samples, replace=self.replacement, p=w / w.sum())
        yield from picks.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (a last, shorter list unless
    ``drop_last``)."""

    def __init__(self, sampler, batch_size, drop_last):
        _check_positive_int("batch_size", batch_size)
        _check_bool("drop_last", drop_last)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

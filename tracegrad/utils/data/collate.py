"""How samples become batches (PyTorch's ``default_collate`` / ``default_convert``).

>>> import tracegrad as tg
>>> from tracegrad.utils.data import default_collate
>>> default_collate([(tg.ones(2), 0), (tg.zeros(2), 1)])
[tensor([[1., 1.],
        [0., 0.]]), tensor([0, 1])]
"""
from __future__ import annotations

import numpy as np

from ...core import creation
from ..._api import functional as F
from ...core.tensor import Tensor

__all__ = ["default_collate", "default_convert"]


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


def default_convert(data):
    """One sample as it is, NumPy arrays (and those inside containers) made tensors: the
    collate function of a DataLoader without automatic batching (``batch_size=None``)."""
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        return creation.from_numpy(data)
    if isinstance(data, dict):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(v) for v in data))
    if isinstance(data, tuple):
        return [default_convert(v) for v in data]
    if isinstance(data, list):
        return [default_convert(v) for v in data]
    return data

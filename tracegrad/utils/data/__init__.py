"""Datasets and batching (PyTorch's ``torch.utils.data``): datasets (``dataset.py``),
samplers (``sampler.py``; ``DistributedSampler`` in ``distributed.py``), collation
(``collate.py``), ``DataLoader`` (``dataloader.py``) with worker processes (``worker.py``).
Random orders draw from tracegrad's generators (``tg.manual_seed`` makes them repeatable; they
are not PyTorch's orders, whose generator differs), except ``DistributedSampler``'s, which are
PyTorch's.

>>> import tracegrad as tg
>>> ds = tg.utils.data.TensorDataset(tg.arange(6).float())
>>> [b[0].tolist() for b in tg.utils.data.DataLoader(ds, batch_size=4)]
[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]
"""
from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                      TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)
from .distributed import DistributedSampler
from .worker import WorkerInfo, get_worker_info

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split", "DataLoader", "default_collate", "default_convert", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "DistributedSampler", "get_worker_info", "WorkerInfo"]

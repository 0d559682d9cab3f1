"""``DataLoader`` (PyTorch's ``torch.utils.data.DataLoader``, its parameters and checks):
batches of a map-style dataset in a sampler's order, or of an iterable dataset's stream,
collated by ``collate_fn``; with ``num_workers > 0`` read by worker processes (see
``worker.py``), in order (``in_order``) or as they come, ``prefetch_factor`` batches ahead per
worker, kept alive across epochs with ``persistent_workers``.

With ``drop_last=True`` every batch has the same shape, so a compiled step never retraces for
the last one (else see ``tg.compile(dynamic=True)``).

>>> import tracegrad as tg
>>> ds = tg.utils.data.TensorDataset(tg.arange(10).float(), tg.arange(10))
>>> [tuple(x.shape) for x, y in tg.utils.data.DataLoader(ds, batch_size=4)]
[(4,), (4,), (2,)]
"""
from __future__ import annotations

import itertools
import multiprocessing
import queue
import warnings

from ...core import creation
from . import worker as W
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader"]


class _Fetcher:
    """Makes one batch (picklable, so a spawned worker gets it too)."""

    def __init__(self, auto_collation, collate_fn, iterable, batch_size, drop_last):
        self.auto, self.collate_fn, self.iterable = auto_collation, collate_fn, iterable
        self.batch_size, self.drop_last = batch_size, drop_last

    def __call__(self, source, indices):
        if self.iterable:
            if not self.auto:
                return self.collate_fn(next(source))
            batch = list(itertools.islice(source, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                raise StopIteration
            return self.collate_fn(batch)
        if self.auto:
            return self.collate_fn([source[i] for i in indices])
        return self.collate_fn(source[indices])


def _checked_prefetch_factor(num_workers, timeout, prefetch_factor, persistent_workers):
    """PyTorch's checks of the worker options; the prefetch factor (2 with workers when not
    given)."""
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                         "multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers "
                         "> 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    return prefetch_factor


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        prefetch_factor = _checked_prefetch_factor(num_workers, timeout, prefetch_factor, persistent_workers)
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.num_workers, self.timeout, self.worker_init_fn = num_workers, timeout, worker_init_fn
        self.prefetch_factor, self.persistent_workers, self.in_order = prefetch_factor, persistent_workers, in_order
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.multiprocessing_context = multiprocessing_context
        self._auto_collation = batch_size is not None or batch_sampler is not None
        self.collate_fn = collate_fn or (default_collate if self._auto_collation else default_convert)
        self._iterable = iterable
        self._pool = None
        self._epoch = 0

    # ------------------------------------------------------------------ iteration
    def _fetcher(self):
        return _Fetcher(self._auto_collation, self.collate_fn, self._iterable, self.batch_size, self.drop_last)

    def _index_batches(self):
        return iter(self.batch_sampler if self._auto_collation else self.sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return self._single_process()
        return self._multi_process()

    def _single_process(self):
        fetch = self._fetcher()
        if self._iterable:
            stream = iter(self.dataset)
            while True:
                try:
                    yield fetch(stream, None)
                except StopIteration:
                    return
        for indices in self._index_batches():
            yield fetch(self.dataset, indices)

    def _multi_process(self):
        pool = self._pool if self._pool is not None else _WorkerPool(self)
        self._pool = pool if self.persistent_workers else None
        self._epoch += 1
        try:
            yield from pool.epoch(self._epoch)
        finally:
            if not self.persistent_workers:
                pool.close()

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self._auto_collation else self.sampler)

    def __del__(self):
        if getattr(self, "_pool", None) is not None:
            self._pool.close()


class _WorkerPool:
    """The worker processes of one DataLoader and their queues; results are tagged with the
    epoch, so a persistent pool ignores what an abandoned epoch left in flight."""

    def __init__(self, loader):
        ctx = loader.multiprocessing_context
        ctx = multiprocessing.get_context(ctx) if isinstance(ctx, str) or ctx is None else ctx
        self.loader, self.n = loader, loader.num_workers
        base_seed = (loader.generator or creation.default_generator).next_seed()
        self.results = ctx.Queue()
        self.index_queues, self.workers = [], []
        for wid in range(self.n):
            q = ctx.Queue()
            p = ctx.Process(target=W.worker_loop, daemon=True,
                            args=(loader.dataset, loader._fetcher(), wid, self.n, (base_seed + wid) % 2**63,
                                  loader.worker_init_fn, q, self.results, loader._iterable))
            p.start()
            self.index_queues.append(q)
            self.workers.append(p)
        self.epochs_started = 0

    def epoch(self, epoch):
        loader = self.loader
        if loader._iterable and self.epochs_started:
            for q in self.index_queues:
                q.put((W.RESTART, None))
        self.epochs_started += 1
        if loader._iterable:
            tasks = ((None, wid) for wid in itertools.cycle(range(self.n)))
        else:
            tasks = ((indices, None) for indices in loader._index_batches())
        yield from self._run(epoch, tasks)

    def _run(self, epoch, tasks):
        """Keep ``prefetch_factor`` batches per worker in flight; yield the results in the order
        asked (``in_order``) or as they come."""
        loader = self.loader
        limit = max(1, loader.prefetch_factor) * self.n
        pending, done, ended, sent, next_out = {}, {}, set(), 0, 0
        turn = itertools.cycle(range(self.n))
        tasks = iter(tasks)

        def send():
            nonlocal sent
            for indices, wid in tasks:
                if wid is None:
                    wid = next(turn)
                elif wid in ended:
                    if len(ended) == self.n:
                        return False
                    continue
                self.index_queues[wid].put(((epoch, sent), indices))
                pending[sent] = wid
                sent += 1
                return True
            return False

        while len(pending) < limit and send():
            pass
        while pending:
            key, data = self._get()
            if key is None:  # a worker's init function failed
                data.reraise()
            if key[0] != epoch:
                continue  # left over from an abandoned epoch of a persistent pool
            wid = pending.pop(key[1])
            if _is_end(data):
                ended.add(wid)
            done[key[1]] = data
            while len(pending) < limit and len(ended) < self.n and send():
                pass
            ready = []
            if loader.in_order:
                while next_out in done:
                    ready.append(done.pop(next_out))
                    next_out += 1
            else:
                ready.append(done.pop(key[1]))
            for out in ready:
                if not _is_end(out):
                    yield _checked(out)

    def _get(self):
        timeout = self.loader.timeout
        while True:
            try:
                return self.results.get(timeout=timeout if timeout > 0 else 5.0)
            except queue.Empty:
                if timeout > 0:
                    raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
                dead = [p for p in self.workers if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(str(p.pid) for p in dead)}) exited "
                                       "unexpectedly") from None

    def close(self):
        for q in self.index_queues:
            try:
                q.put(None)
            except (ValueError, OSError):
                pass
        for p in self.workers:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
        self.workers, self.index_queues = [], []


def _is_end(data):
    return isinstance(data, str) and data == W.STREAM_END


def _checked(data):
    if isinstance(data, W.WorkerError):
        data.reraise()
    return data

"""DataLoader worker processes (PyTorch's ``num_workers > 0``): each worker holds a copy of the
dataset, reads the batches of indices it is sent (map-style) or its own copy of the stream
(iterable), collates them and sends them back; ``get_worker_info()`` describes the worker
inside it. Errors come back to the main process and are raised there, naming the worker.
"""
from __future__ import annotations

import queue
import traceback
from collections import namedtuple

WorkerInfo = namedtuple("WorkerInfo", ["id", "num_workers", "seed", "dataset"])
_worker_info = None

# messages from a worker: (key, data) with key a batch number, or these
STREAM_END = "stream-end"   # an iterable dataset's copy is exhausted
RESTART = "restart"         # (to a persistent worker) start a new epoch of the stream


def get_worker_info():
    """``WorkerInfo(id, num_workers, seed, dataset)`` inside a DataLoader worker; None in the
    main process."""
    return _worker_info


class WorkerError:
    """An exception raised in a worker, carried back with its traceback."""

    def __init__(self, exc, worker_id):
        self.exc_type = type(exc)
        self.message = (f"Caught {type(exc).__name__} in DataLoader worker process {worker_id}.\n"
                        f"Original {traceback.format_exc()}")

    def reraise(self):
        try:
            error = self.exc_type(self.message)
        except Exception:  # an exception type that needs other arguments
            error = RuntimeError(self.message)
        raise error


def worker_loop(dataset, fetch, worker_id, num_workers, seed, init_fn, index_queue, result_queue, iterable):
    """The body of one worker process. ``fetch(dataset_or_iterator, indices)`` makes a batch;
    map-style batches are requested by index, a stream is read batch after batch."""
    global _worker_info
    from ...core import random as tg_random

    tg_random.manual_seed(seed)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception as e:  # (reported for the first batch asked of this worker)
        result_queue.put((None, WorkerError(e, worker_id)))
        return
    stream = iter(dataset) if iterable else None
    while True:
        try:
            message = index_queue.get(timeout=5.0)
        except queue.Empty:
            continue
        if message is None:
            return
        key, indices = message
        if key == RESTART:
            stream = iter(dataset)
            continue
        try:
            data = fetch(stream if iterable else dataset, indices)
        except StopIteration:
            result_queue.put((key, STREAM_END))
            continue
        except Exception as e:
            data = WorkerError(e, worker_id)
        result_queue.put((key, data))

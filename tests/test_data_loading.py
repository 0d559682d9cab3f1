"""tg.utils.data beyond the basics, against torch.utils.data: samplers, dataset combinators,
iterable datasets, automatic batching off (default_convert), worker processes (order,
get_worker_info, worker_init_fn, errors, persistent workers, in_order=False) and PyTorch's
argument checks."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402
from tracegrad.utils import data as D  # noqa: E402

TD = torch.utils.data


def _np(batch):
    if isinstance(batch, (list, tuple)):
        return [_np(b) for b in batch]
    if isinstance(batch, dict):
        return {k: _np(v) for k, v in batch.items()}
    return np.asarray(batch.detach().numpy() if hasattr(batch, "detach") else batch).tolist()


def _both(make):
    return make(D, tg), make(TD, torch)


def test_samplers_equal_torchs_where_deterministic():
    for make in (lambda M, lib: list(M.SequentialSampler(range(7))),
                 lambda M, lib: list(M.BatchSampler(M.SequentialSampler(range(7)), 3, False)),
                 lambda M, lib: list(M.BatchSampler(range(7), 3, True)),
                 lambda M, lib: len(M.BatchSampler(range(7), 3, False)),
                 lambda M, lib: [list(M.DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False))
                                 for r in range(3)],
                 lambda M, lib: [len(M.DistributedSampler(range(10), num_replicas=3, rank=r, drop_last=True))
                                 for r in range(3)]):
        ours, theirs = _both(make)
        assert ours == theirs


def test_random_samplers_cover_what_they_should():
    tg.manual_seed(0)
    perm = list(D.RandomSampler(range(10)))
    assert sorted(perm) == list(range(10))
    long = list(D.RandomSampler(range(4), num_samples=10))
    assert len(long) == 10 and sorted(long[:8]) == [0, 0, 1, 1, 2, 2, 3, 3]
    draws = list(D.RandomSampler(range(3), replacement=True, num_samples=50))
    assert len(draws) == 50 and set(draws) <= {0, 1, 2}
    sub = list(D.SubsetRandomSampler([5, 7, 9]))
    assert sorted(sub) == [5, 7, 9]
    weighted = list(D.WeightedRandomSampler([0.0, 1.0, 3.0], 4000))
    counts = np.bincount(weighted, minlength=3)
    assert counts[0] == 0 and 0.7 < counts[2] / counts.sum() < 0.8
    g = tg.Generator().manual_seed(5)
    a = list(D.RandomSampler(range(10), generator=g))
    g.manual_seed(5)
    assert list(D.RandomSampler(range(10), generator=g)) == a
    shuffled = [list(D.DistributedSampler(range(10), 2, r, seed=3)) for r in range(2)]
    assert sorted(shuffled[0] + shuffled[1]) == list(range(10))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        D.DistributedSampler(range(4))
    with pytest.raises(RuntimeError, match="without replacement"):
        list(D.WeightedRandomSampler([0.0, 1.0], 2, replacement=False))


def test_dataset_combinators_equal_torchs():
    X = np.arange(12, dtype=np.float32).reshape(6, 2)

    def make(M, lib):
        a, b = M.TensorDataset(lib.tensor(X[:4])), M.TensorDataset(lib.tensor(X[4:]))
        cat = a + b
        stack = M.StackDataset(a, a)
        named = M.StackDataset(x=a, y=a)
        return [_np(cat[i]) for i in range(len(cat))] + [_np(cat[-1]), _np(stack[1]), _np(named[2]), len(cat)]

    ours, theirs = _both(make)
    assert ours == theirs
    with pytest.raises(ValueError, match="Size mismatch"):
        D.StackDataset(D.TensorDataset(tg.ones(2)), D.TensorDataset(tg.ones(3)))


class Stream:
    """An iterable dataset that shares itself between workers as PyTorch's docs show."""

    def __init__(self, M, n):
        class S(M.IterableDataset):
            def __iter__(s):
                info = M.get_worker_info()
                lo, step = (0, 1) if info is None else (info.id, info.num_workers)
                return iter(np.arange(lo, n, step, dtype=np.int64))
        self.dataset = S()


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("batch_size, drop_last", [(3, False), (3, True), (None, False)])
def test_iterable_datasets_equal_torchs(workers, batch_size, drop_last):
    ours, theirs = _both(lambda M, lib: [_np(b) for b in M.DataLoader(Stream(M, 11).dataset, batch_size=batch_size,
                                                                      drop_last=drop_last, num_workers=workers)])
    assert ours == theirs
    chained = [_np(b) for b in D.DataLoader(D.ChainDataset([Stream(D, 3).dataset, Stream(D, 2).dataset]),
                                            batch_size=2)]
    assert chained == [[0, 1], [2, 0], [1]]


@pytest.mark.parametrize("workers", [0, 2])
def test_map_style_batches_with_workers_equal_torchs(workers):
    X = np.arange(40, dtype=np.float32).reshape(20, 2)

    def make(M, lib):
        ds = M.TensorDataset(lib.tensor(X), lib.tensor(np.arange(20)))
        return [_np(b) for b in M.DataLoader(ds, batch_size=6, num_workers=workers)]

    ours, theirs = _both(make)
    assert ours == theirs
    no_batching = [_np(b) for b in D.DataLoader([np.ones(2), np.zeros(2)], batch_size=None)]
    assert no_batching == [[1.0, 1.0], [0.0, 0.0]]
    assert isinstance(next(iter(D.DataLoader([np.ones(2)], batch_size=None))), tg.Tensor)


def _record_seed(worker_id):
    info = D.get_worker_info()
    assert info.id == worker_id and info.num_workers == 2


class Seeds(D.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = D.get_worker_info()
        return tg.tensor([info.id, info.seed % 1000, int(tg.randint(0, 10**6, (1,)))])


def test_worker_info_seeds_init_fn_and_persistent_workers():
    loader = D.DataLoader(Seeds(), batch_size=1, num_workers=2, worker_init_fn=_record_seed, persistent_workers=True)
    first = [b[0].tolist() for b in loader]
    assert [r[0] for r in first] == [0, 1, 0, 1]  # batches go round-robin
    assert first[0][1] != first[1][1]  # each worker has its own seed
    second = [b[0].tolist() for b in loader]
    assert [r[0] for r in second] == [0, 1, 0, 1] and loader._pool is not None
    unordered = D.DataLoader(D.TensorDataset(tg.arange(9)), batch_size=2, num_workers=2, in_order=False)
    assert sorted(sum((b[0].tolist() for b in unordered), [])) == list(range(9))
    assert D.get_worker_info() is None


class Broken(D.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("sample 2 is missing")
        return tg.tensor(i)


def test_a_workers_error_is_raised_in_the_main_process_naming_it():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 1"):
        list(D.DataLoader(Broken(), batch_size=2, num_workers=2))
    with pytest.raises(KeyError, match="sample 2 is missing"):
        list(D.DataLoader(Broken(), batch_size=2))


@pytest.mark.parametrize("kwargs", [dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
                                    dict(persistent_workers=True), dict(shuffle=True, sampler=[0, 1]),
                                    dict(batch_sampler=[[0]], batch_size=2), dict(batch_size=None, drop_last=True)],
                         ids=str)
def test_argument_checks_equal_torchs(kwargs):
    def make(M, lib):
        kw = dict(kwargs)
        if "sampler" in kw:
            kw["sampler"] = M.SequentialSampler(range(2))
        return M.DataLoader(list(range(4)), **kw)

    with pytest.raises(ValueError) as ours:
        make(D, tg)
    with pytest.raises(ValueError) as theirs:
        make(TD, torch)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        D.DataLoader(Stream(D, 3).dataset, shuffle=True)

"""tg.utils.data against torch.utils.data: batches, drop_last, collation of nested samples,
shuffling and random_split, and a compiled training loop over a DataLoader."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10)


def _as_numpy(batch):
    if isinstance(batch, (list, tuple)):
        return type(batch).__name__, [_as_numpy(b) for b in batch]
    if isinstance(batch, dict):
        return {k: _as_numpy(v) for k, v in batch.items()}
    return np.asarray(batch.detach().numpy() if hasattr(batch, "detach") else batch).tolist()


@pytest.mark.parametrize("batch_size, drop_last", [(1, False), (4, False), (4, True), (10, True), (3, True)])
def test_batches_match_torch(batch_size, drop_last):
    ours = tg.utils.data.DataLoader(tg.utils.data.TensorDataset(tg.tensor(X), tg.tensor(Y)),
                                    batch_size=batch_size, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(X), torch.tensor(Y)),
                                         batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [_as_numpy(b) for b in ours] == [_as_numpy(b) for b in theirs]


Pair = namedtuple("Pair", "a b")


class Samples:
    def __init__(self, kind):
        self.kind = kind

    def __len__(self):
        return 5

    def __getitem__(self, i):
        if self.kind == "dict":
            return {"x": X[i], "n": int(Y[i]), "f": float(i) / 2}
        if self.kind == "namedtuple":
            return Pair(X[i], int(Y[i]))
        return (X[i], (int(Y[i]), float(i)))


@pytest.mark.parametrize("kind", ["dict", "namedtuple", "nested"])
def test_collation_of_nested_samples_matches_torch(kind):
    ours = next(iter(tg.utils.data.DataLoader(Samples(kind), batch_size=3)))
    theirs = next(iter(torch.utils.data.DataLoader(Samples(kind), batch_size=3)))
    assert _as_numpy(ours) == _as_numpy(theirs)
    assert type(ours).__name__ == type(theirs).__name__


def test_shuffle_and_random_split():
    ds = tg.utils.data.TensorDataset(tg.tensor(X), tg.tensor(Y))
    tg.manual_seed(3)
    first = [y.tolist() for _, y in tg.utils.data.DataLoader(ds, batch_size=4, shuffle=True)]
    tg.manual_seed(3)
    again = [y.tolist() for _, y in tg.utils.data.DataLoader(ds, batch_size=4, shuffle=True)]
    assert first == again and sorted(sum(first, [])) == list(range(10)) and first != [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    parts = tg.utils.data.random_split(ds, [0.34, 0.33, 0.33])
    assert [len(p) for p in parts] == [len(p) for p in torch.utils.data.random_split(range(10), [0.34, 0.33, 0.33])]
    assert sorted(int(p[i][1]) for p in parts for i in range(len(p))) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths"):
        tg.utils.data.random_split(ds, [3, 3])


def test_compiled_loop_over_a_loader_is_one_program():
    tg.manual_seed(0)
    model = tg.nn.Linear(3, 2)
    opt = tg.optim.SGD(model.parameters(), lr=0.01)

    @tg.compile(fullgraph=True)
    def step(x, y):
        opt.zero_grad()
        loss = tg.nn.functional.cross_entropy(model(x), y % 2)
        loss.backward()
        opt.step()
        return loss

    loader = tg.utils.data.DataLoader(tg.utils.data.TensorDataset(tg.tensor(X), tg.tensor(Y)), batch_size=3,
                                      shuffle=True, drop_last=True)
    for _ in range(2):
        for x, y in loader:
            step(x, y)
    assert len(step.programs) == 1 and step.programs[0].calls == 6  # 3 full batches an epoch

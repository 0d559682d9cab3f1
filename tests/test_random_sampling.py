"""Random sampling functions (creation.py): randperm, bernoulli, normal, multinomial, poisson.
Their draws are NumPy's (not PyTorch's streams), so the checks are the laws they follow,
reproducibility under tg.manual_seed, PyTorch's argument errors, and the graph break a
compiled function takes for them (said in a warning)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg


def test_draws_follow_their_laws_and_repeat_under_manual_seed():
    def draw():
        tg.manual_seed(5)
        return [tg.randperm(50), tg.bernoulli(tg.full((20000,), 0.3)), tg.normal(2.0, 0.5, (20000,)),
                tg.normal(tg.zeros(4, 5000) + 1.0, tg.ones(4, 5000) * 3.0),
                tg.multinomial(tg.tensor([[0.0, 1.0, 3.0]] * 2000), 1, replacement=True),
                tg.poisson(tg.full((20000,), 4.0))]

    perm, coin, gauss, wide, cats, counts = draw()
    assert sorted(perm.tolist()) == list(range(50)) and perm.dtype is tg.int64
    assert coin.dtype is tg.float32 and abs(coin.mean().item() - 0.3) < 0.02
    assert abs(gauss.mean().item() - 2.0) < 0.02 and abs(gauss.std().item() - 0.5) < 0.02
    assert wide.shape == (4, 5000) and abs(wide.std().item() - 3.0) < 0.1
    picks = cats.numpy().ravel()
    assert (picks != 0).all() and abs((picks == 2).mean() - 0.75) < 0.03
    assert abs(counts.mean().item() - 4.0) < 0.1 and abs(counts.var().item() - 4.0) < 0.2
    for a, b in zip(draw(), [perm, coin, gauss, wide, cats, counts]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_without_replacement_each_category_once_and_methods():
    tg.manual_seed(0)
    rows = tg.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 2.0, 1.0, 1.0]]).multinomial(3)
    assert all(len(set(r)) == 3 for r in rows.tolist()) and 0 not in rows.tolist()[1]
    assert tg.ones(5).bernoulli_(0.0).tolist() == [0.0] * 5
    assert tg.full((3,), 1.0).bernoulli().tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("call, message", [
    (lambda: tg.multinomial(tg.tensor([0.0, 1.0]), 2), "without replacement"),
    (lambda: tg.multinomial(tg.tensor([0.5, -0.5]), 1), "invalid multinomial distribution"),
    (lambda: tg.bernoulli(tg.tensor([1.5])), "p_in >= 0 && p_in <= 1"),
    (lambda: tg.normal(0.0, -1.0, (2,)), "std >= 0.0")])
def test_bad_parameters_are_named(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_sampling_inside_a_compiled_function_breaks_the_graph_with_a_warning():
    f = tg.compile(lambda x: x * tg.bernoulli(tg.full((3,), 1.0)), backend="c")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert f(tg.ones(3)).tolist() == [1.0, 1.0, 1.0]
    assert any("random tensor creation" in str(w.message) for w in caught)


def test_in_place_random_fills_have_torchs_distributions():
    tg.manual_seed(0)
    x = tg.empty(20000, dtype=tg.float64)
    assert abs(float(x.exponential_(2.0).mean()) - 0.5) < 0.02
    assert abs(float(x.geometric_(0.25).mean()) - 4.0) < 0.1 and float(x.min()) >= 1
    assert abs(float(x.log_normal_(0.0, 0.5).mean()) - np.exp(0.125)) < 0.02
    assert abs(float(x.cauchy_(1.0, 0.5).median()) - 1.0) < 0.05
    values = x.random_(2, 7).numpy()
    assert set(np.unique(values)) == {2.0, 3.0, 4.0, 5.0, 6.0}
    assert set(np.unique(tg.empty(1000, dtype=tg.int64).random_(3).numpy())) == {0, 1, 2}
    w = tg.nn.Parameter(tg.ones(3))
    w.exponential_()  # (an in-place fill of a parameter records no history, as nn.init's)
    assert w.is_leaf and w.grad_fn is None

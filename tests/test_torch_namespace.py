"""tracegrad/torch_namespace.py against PyTorch: the torch-level names of functions tracegrad
has elsewhere, unravel_index and the window functions."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, length, periodic):
    for ours_dtype, theirs_dtype in ((None, None), (tg.float64, torch.float64)):
        got = getattr(tg, name)(length, periodic, dtype=ours_dtype)
        want = getattr(torch, name)(length, periodic, dtype=theirs_dtype)
        assert got.dtype.name == str(want.dtype).replace("torch.", "")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=2e-7)  # (float32: torch's is
        # computed in float32, ours in float64 and rounded)
    np.testing.assert_allclose(tg.hamming_window(length, periodic, 0.5, 0.5).numpy(),
                               torch.hamming_window(length, periodic, 0.5, 0.5).numpy(), atol=2e-7)
    np.testing.assert_allclose(tg.kaiser_window(length, periodic, 5.0).numpy(),
                               torch.kaiser_window(length, periodic, 5.0).numpy(), rtol=1e-6, atol=2e-7)


@pytest.mark.parametrize("indices,shape", [([5, 7, 0, 11], (3, 4)), ([-1, -12], (3, 4)), ([3], 5),
                                           ([[1, 2], [3, 4]], (2, 1, 3))])
def test_unravel_index(indices, shape):
    got, want = tg.unravel_index(tg.tensor(indices), shape), torch.unravel_index(torch.tensor(indices), shape)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    compiled = tg.compile(lambda i: tg.unravel_index(i, shape), backend="c", fullgraph=True)(tg.tensor(indices))
    for g, w in zip(compiled, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    with pytest.raises(RuntimeError, match="must be in range"):
        tg.unravel_index(tg.tensor([100]), (3, 4))


def test_other_names():
    x = np.random.default_rng(0).standard_normal((2, 3))
    a, t = tg.tensor(x), torch.tensor(x)
    for ours, theirs in [(tg.multiply(a, a), torch.multiply(t, t)), (tg.subtract(a, a * 2, alpha=3), torch.subtract(t, t * 2, alpha=3)),
                         (tg.negative(a), torch.negative(t)), (tg.swapdims(a, 0, 1), torch.swapdims(t, 0, 1)),
                         (tg.real(a), torch.real(t)), (tg.matrix_exp(a[:, :2]), torch.matrix_exp(t[:, :2])),
                         (tg.conv1d(a[None], a[None, :, :2]), torch.conv1d(t[None], t[None, :, :2])),
                         (tg.pdist(a), torch.pdist(t)), (tg.cosine_similarity(a, a * 2), torch.cosine_similarity(t, t * 2))]:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    assert tg.is_floating_point(a) and not tg.is_complex(a) and tg.is_same_size(a, a) and tg.is_signed(a)
    assert tg.is_nonzero(tg.tensor([0.5])) and not tg.is_nonzero(tg.tensor(0))
    with pytest.raises(RuntimeError, match="more than one value"):
        tg.is_nonzero(a)

"""as_strided and as_strided_scatter against PyTorch: values (also of views with offsets),
gradients where windows overlap, writes through the view, PyTorch's refusal to write into an
overlapping view, bounds checks, and the compiled form against eager."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")
from oracle import compare_fn  # noqa: E402

CASES = [((2, 2), (4, 1), 1), ((3, 3), (1, 1), 0), ((2, 3), (0, 2), 2), ((4,), (3,), None), ((0, 2), (1, 1), 0)]


@pytest.mark.parametrize("size, stride, offset", CASES, ids=str)
def test_values_and_gradients_equal_torchs(size, stride, offset):
    """(Of a view, as PyTorch: storage outside the view is read, but gets no gradient.)"""
    x = np.random.default_rng(0).standard_normal(12)
    compare_fn(lambda t: t.as_strided(size, stride, offset), lambda t: t.as_strided(size, stride, offset), [x])
    if offset is not None:
        compare_fn(lambda t: t.reshape(3, 4)[1:].as_strided(size, stride, offset) * 2,
                   lambda t: t.reshape(3, 4)[1:].as_strided(size, stride, offset) * 2, [x])


def test_writes_go_through_and_overlapping_views_refuse_them():
    x, tx = tg.arange(12.0).reshape(3, 4), torch.arange(12.0).reshape(3, 4)
    x.as_strided((2, 2), (4, 1), 1).mul_(-1)
    tx.as_strided((2, 2), (4, 1), 1).mul_(-1)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    with pytest.raises(RuntimeError, match="more than one element"):
        tg.arange(6.0).as_strided((2, 3), (1, 1)).fill_(0)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 6"):
        tg.arange(6.0).as_strided((3, 3), (2, 1))


def test_as_strided_scatter_values_and_gradients():
    """Values and the gradient of src are PyTorch's; the gradient of input is the true one
    (zero where src overwrote it), where PyTorch 2.13's is the reverse (zero elsewhere)."""
    base, src = np.random.default_rng(2).standard_normal((3, 4)), np.random.default_rng(1).standard_normal((2, 2))
    b, s = tg.tensor(base, requires_grad=True), tg.tensor(src, requires_grad=True)
    tb, ts = torch.tensor(base, requires_grad=True), torch.tensor(src, requires_grad=True)
    out, want = tg.as_strided_scatter(b, s, (2, 2), (4, 1), 1), torch.as_strided_scatter(tb, ts, (2, 2), (4, 1), 1)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    g = np.arange(12.0).reshape(3, 4)
    out.backward(tg.tensor(g))
    want.backward(torch.tensor(g))
    np.testing.assert_array_equal(s.grad.numpy(), ts.grad.numpy())
    region = np.zeros((3, 4), bool)
    region[0:2, 1:3] = True
    np.testing.assert_array_equal(b.grad.numpy(), np.where(region, 0.0, g))
    with pytest.raises(RuntimeError, match="expected src to have a size equal"):
        tg.as_strided_scatter(tg.zeros(3, 4), tg.ones(3), (2, 2), (4, 1))


def test_compiled_sliding_windows_equal_eager():
    f = lambda t: (t.as_strided((4, 3), (2, 1)) ** 2).sum(1)
    x = tg.arange(10.0)
    np.testing.assert_allclose(tg.compile(f, fullgraph=True)(x).numpy(), f(x).numpy())

"""Fractional max pooling, ``CrossMapLRN2d`` and ``conv_tbc`` against PyTorch: values,
indices and gradients (fractional pooling given the same ``_random_samples``), modules' reprs
and state dicts, seeded sampling compiled as eagerly, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402
from oracle import assert_close, compare_fn  # noqa: E402

RNG = np.random.default_rng(7)

# (k, input shape, kernel, output_size, output_ratio)
FRACTIONAL = {
    "2d": (2, (2, 3, 9, 11), (2, 3), (4, 5), None),
    "2d-unbatched": (2, (3, 10, 7), 2, (5, 3), None),
    "2d-ratio": (2, (2, 2, 12, 9), 3, None, (0.5, 0.7)),
    "2d-one-window": (2, (1, 2, 5, 6), 2, (1, 5), None),
    "3d": (3, (2, 2, 6, 7, 8), (2, 2, 3), (3, 4, 5), None),
    "3d-ratio-unbatched": (3, (2, 7, 6, 9), 2, None, 0.5),
}


def _fractional(lib, name, samples, return_indices=False):
    k, _, kernel, size, ratio = FRACTIONAL[name]
    F = lib.nn.functional
    fn = F.fractional_max_pool2d if k == 2 else F.fractional_max_pool3d
    return lambda x: fn(x, kernel, output_size=size, output_ratio=ratio, return_indices=return_indices,
                        _random_samples=samples)


def _samples(name, dtype=np.float64):
    k, shape = FRACTIONAL[name][:2]
    return RNG.random((1 if len(shape) == k + 1 else shape[0], shape[-k - 1], k)).astype(dtype)


@pytest.mark.parametrize("name", sorted(FRACTIONAL))
def test_fractional_max_pool_matches_torch_given_the_samples(name):
    u = _samples(name)
    x = RNG.standard_normal(FRACTIONAL[name][1])
    compare_fn(_fractional(tg, name, tg.tensor(u)), _fractional(torch, name, torch.from_numpy(u)), [x])
    # the windows in float32 (PyTorch computes them in the input's dtype) and the indices
    x32, u32 = x.astype(np.float32), u.astype(np.float32)
    ours = _fractional(tg, name, tg.tensor(u32), True)(tg.tensor(x32))
    theirs = _fractional(torch, name, torch.from_numpy(u32), True)(torch.from_numpy(x32))
    for a, b in zip(ours, theirs):
        assert_close(a, b, name)


def test_fractional_max_pool_gradient_sums_where_windows_share_the_maximum():
    x = np.zeros((1, 1, 5, 5))
    x[0, 0, 2, 2] = 1.0  # every 3x3 window of the 3x3 output holds it
    u = np.full((1, 1, 2), 0.5)
    compare_fn(lambda t: tg.nn.functional.fractional_max_pool2d(t, 3, 3, _random_samples=tg.tensor(u)),
               lambda t: torch.nn.functional.fractional_max_pool2d(t, 3, 3, _random_samples=torch.from_numpy(u)),
               [x])


def test_fractional_max_pool_picks_nans_and_traced_samples_as_torch():
    """PyTorch's scan keeps the last NaN of a window; samples given as a compiled function's
    input make traced windows."""
    x = np.array([[[[1.0, np.nan, 0.5], [np.nan, 0.0, 2.0], [3.0, 1.0, np.nan]]]])
    u = np.zeros((1, 1, 2))
    ours = tg.nn.functional.fractional_max_pool2d(tg.tensor(x), 2, 2, return_indices=True,
                                                  _random_samples=tg.tensor(u))
    theirs = torch.nn.functional.fractional_max_pool2d(torch.from_numpy(x), 2, 2, return_indices=True,
                                                       _random_samples=torch.from_numpy(u))
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    x, u = tg.randn(2, 2, 9, 8), tg.rand(2, 2, 2)

    def pool(x, u):
        return tg.nn.functional.fractional_max_pool2d(x, 2, (4, 3), return_indices=True, _random_samples=u)

    for a, b in zip(tg.compile(pool, backend="c", fullgraph=True)(x, u), pool(x, u)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_fractional_max_pool_modules_as_torchs():
    u = RNG.random((1, 2, 3))
    ours = tg.nn.FractionalMaxPool3d(2, output_size=3, return_indices=True, _random_samples=tg.tensor(u))
    theirs = torch.nn.FractionalMaxPool3d(2, output_size=3, return_indices=True,
                                          _random_samples=torch.from_numpy(u))
    assert repr(ours) == repr(theirs) == "FractionalMaxPool3d()"
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["_random_samples"]
    assert ours.kernel_size == theirs.kernel_size and ours.output_size == theirs.output_size
    x = RNG.standard_normal((1, 2, 5, 6, 7))
    for a, b in zip(ours(tg.tensor(x)), theirs(torch.from_numpy(x))):
        assert_close(a, b, "module")
    two = tg.nn.FractionalMaxPool2d((2, 3), output_ratio=0.5)
    assert (two.kernel_size, two.output_ratio, list(two.state_dict())) == ((2, 3), (0.5, 0.5), [])
    assert tuple(two(tg.randn(2, 3, 8, 10)).shape) == (2, 3, 4, 5)


def test_fractional_max_pool_draws_from_the_generator_compiled_as_eagerly():
    F = tg.nn.functional
    x = tg.tensor(RNG.standard_normal((2, 3, 12, 12)).astype(np.float32))

    def pool(x):
        return F.fractional_max_pool2d(x, 2, output_size=5)

    tg.manual_seed(5)
    first, second = pool(x).numpy(), pool(x).numpy()
    assert not np.array_equal(first, second)  # fresh windows each call
    compiled = tg.compile(pool, backend="c", fullgraph=True)
    tg.manual_seed(5)
    np.testing.assert_array_equal(compiled(x).numpy(), first)
    np.testing.assert_array_equal(compiled(x).numpy(), second)


def test_fractional_max_pool_compiled_gradient_matches_eager():
    u = tg.tensor(RNG.random((2, 2, 2)))
    x = tg.tensor(RNG.standard_normal((2, 2, 9, 8)))

    def grad(x):
        x = x.detach().requires_grad_()
        out = tg.nn.functional.fractional_max_pool2d(x, 2, output_ratio=0.5, _random_samples=u)
        return tg.autograd.grad((out * out).sum(), x)[0]

    assert_close(tg.compile(grad, backend="c", fullgraph=True)(x), grad(x), "compiled")


def test_fractional_max_pool_errors_as_torchs():
    F = tg.nn.functional
    x = tg.randn(1, 2, 7, 9)
    with pytest.raises(RuntimeError, match="pool height 2 too large relative to input height 7"):
        F.fractional_max_pool2d(x, 2, output_size=(7, 3))
    with pytest.raises(RuntimeError, match="pool time 2 too large relative to input time 5"):
        F.fractional_max_pool3d(tg.randn(1, 2, 5, 7, 9), 2, output_size=(5, 3, 3))
    with pytest.raises(RuntimeError, match="_random_samples.size\\(1\\) equals to input channel size"):
        F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=tg.rand(1, 3, 2))
    with pytest.raises(ValueError, match="either an output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        tg.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        tg.nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="kernel_size must be greater than 0"):
        tg.nn.FractionalMaxPool3d(0, output_size=2)


# ----------------------------------------------------------------------------- CrossMapLRN2d
def _running_sum_lrn(x, size, alpha, beta, k):
    """PyTorch's CrossMapLRN2d forward, written with torch's differentiable ops (as ours)."""
    channels, pre_pad = x.shape[1], int((size - 1) / 2 + 1)
    square = x * x
    current = square[:, 0]
    for c in range(1, min(pre_pad, channels)):
        current = current + square[:, c]
    sums = [current]
    for c in range(1, channels):
        if c < channels - pre_pad + 1:
            current = current + square[:, c + pre_pad - 1]
        if c > pre_pad:
            current = current - square[:, c - pre_pad]
        sums.append(current)
    return (torch.stack(sums, 1) * (alpha / size) + k).pow(-beta) * x


LRN = [(6, 3, 0.5, 0.75, 1.0), (7, 5, 1e-4, 0.75, 1.0), (5, 4, 2.0, 0.5, 2.0), (3, 7, 0.3, 1.0, 1.0),
       (8, 2, 0.5, 0.75, 1.0)]


@pytest.mark.parametrize("channels,size,alpha,beta,k", LRN)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_map_lrn2d_forward_is_torchs(channels, size, alpha, beta, k, dtype):
    x = RNG.standard_normal((2, channels, 3, 4)).astype(dtype)
    out = tg.nn.CrossMapLRN2d(size, alpha, beta, k)(tg.tensor(x))
    want = torch.nn.CrossMapLRN2d(size, alpha, beta, k)(torch.from_numpy(x))
    # one ulp: libm's pow against PyTorch's
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=2 * np.finfo(dtype).eps, atol=0)


@pytest.mark.parametrize("channels,size,alpha,beta,k", LRN)
def test_cross_map_lrn2d_gradient_is_the_true_derivative(channels, size, alpha, beta, k):
    x = RNG.standard_normal((2, channels, 2, 3))
    m = tg.nn.CrossMapLRN2d(size, alpha, beta, k)
    compare_fn(m, lambda t: _running_sum_lrn(t, size, alpha, beta, k), [x])
    assert tg.autograd.gradcheck(m, (tg.tensor(x).requires_grad_(),))


def test_torchs_cross_map_lrn2d_backward_is_not_its_forwards_derivative():
    """What the module docstring says of PyTorch's backward (torch 2.13): it fails gradcheck of
    its own forward, so our gradient (the derivative) differs from it."""
    x = torch.from_numpy(RNG.standard_normal((1, 6, 2, 2))).requires_grad_()
    assert not torch.autograd.gradcheck(torch.nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0), (x,), raise_exception=False)


def test_cross_map_lrn2d_repr_compiles_and_checks_its_input():
    m = tg.nn.CrossMapLRN2d(5, alpha=1e-3)
    assert repr(m) == repr(torch.nn.CrossMapLRN2d(5, alpha=1e-3)) == "CrossMapLRN2d(5, alpha=0.001, beta=0.75, k=1)"
    x = tg.tensor(RNG.standard_normal((2, 6, 3, 3)).astype(np.float32))

    def grad(v):
        v = v.detach().requires_grad_()
        return tg.autograd.grad((m(v) * v).sum(), v)[0]

    assert_close(tg.compile(grad, backend="c", fullgraph=True)(x), grad(x), "compiled")
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D instead"):
        m(tg.randn(2, 3, 4))


# ----------------------------------------------------------------------------- conv_tbc
@pytest.mark.parametrize("pad,kernel", [(0, 3), (1, 3), (2, 2), (0, 1)])
def test_conv_tbc_matches_torch(pad, kernel):
    arrays = [RNG.standard_normal((7, 2, 3)), RNG.standard_normal((kernel, 3, 4)), RNG.standard_normal(4)]
    compare_fn(lambda x, w, b: tg.nn.functional.conv_tbc(x, w, b, pad),
               lambda x, w, b: torch.conv_tbc(x, w, b, pad), arrays)


def test_conv_tbc_compiles_and_checks_shapes():
    F = tg.nn.functional
    x, w, b = (tg.tensor(RNG.standard_normal(s).astype(np.float32)) for s in ((6, 2, 3), (2, 3, 5), (5,)))
    compiled = tg.compile(lambda x, w, b: F.conv_tbc(x, w, b, 1).tanh(), backend="c", fullgraph=True)
    np.testing.assert_allclose(compiled(x, w, b).numpy(), F.conv_tbc(x, w, b, 1).tanh().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="Input dim 2 \\(input channels\\) is not == dim 1"):
        F.conv_tbc(x, tg.randn(2, 4, 5), b)
    with pytest.raises(RuntimeError, match="Bias size must equal dim 2"):
        F.conv_tbc(x, w, tg.randn(4))
    with pytest.raises(RuntimeError, match="Input must have 3 dims"):
        F.conv_tbc(x[0], w, b)

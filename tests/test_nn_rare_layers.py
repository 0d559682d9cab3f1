"""Fractional max pooling against PyTorch: values,
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

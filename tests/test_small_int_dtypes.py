"""uint8, int8 and int16: PyTorch's promotion lattice (uint8 with int8 is int16), wrapping
arithmetic, exact shifts and integer ops, eager and compiled, against PyTorch (their C ABI in an
exported library: test_export.py). Also the promotion corners found beside them: add/sub's alpha, sub of
bools, copysign's result dtype."""
import itertools
import warnings

import numpy as np
import pytest

import tracegrad as tg
from oracle import TG_TO_TORCH_DTYPE, torch

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")
SMALL = [tg.uint8, tg.int8, tg.int16]
ALL = list(tg.dtypes.ALL)


def _values(dtype, n=6, seed=0):
    """Values across the dtype's range, its extremes included (uint8: 0..255)."""
    info = np.iinfo(dtype.np) if dtype.category == 1 else None
    rng = np.random.default_rng(seed)
    if dtype is tg.bool:
        return rng.random(n) > 0.5
    if info is None:
        return rng.uniform(-100, 100, n).astype(dtype.np)
    v = rng.integers(info.min, int(info.max) + 1, n, dtype=np.int64)
    v[:2] = info.min, info.max
    return v.astype(dtype.np)


def test_promotion_without_torch():
    assert tg.dtypes.promote(tg.uint8, tg.int8) is tg.int16
    assert tg.dtypes.promote(tg.int8, tg.int16) is tg.int16
    assert tg.dtypes.promote(tg.bool, tg.uint8) is tg.uint8
    assert (tg.ones(2, dtype=tg.uint8) + 1).dtype is tg.uint8        # a Python int: same category
    assert (tg.ones(2, dtype=tg.int8) * 1.5).dtype is tg.float32     # a float: the default float
    assert (tg.ones(2, dtype=tg.int16).sum()).dtype is tg.int64      # sums of integers: int64
    assert tg.iinfo(tg.uint8).max == 255 and tg.iinfo(tg.int8).min == -128


@needs_torch
@pytest.mark.parametrize("a,b", list(itertools.product(ALL, ALL)))
def test_promotion_matches_torch(a, b):
    ta, tb = TG_TO_TORCH_DTYPE[a], TG_TO_TORCH_DTYPE[b]
    assert TG_TO_TORCH_DTYPE[tg.result_type(tg.ones(2, dtype=a), tg.ones(2, dtype=b))] \
        is torch.result_type(torch.ones(2, dtype=ta), torch.ones(2, dtype=tb))
    # a 0-dim tensor and a Python scalar take part only by category
    assert TG_TO_TORCH_DTYPE[tg.result_type(tg.ones(2, dtype=a), tg.ones((), dtype=b))] \
        is torch.result_type(torch.ones(2, dtype=ta), torch.ones((), dtype=tb))
    for scalar in (True, 3, 2.5):
        assert TG_TO_TORCH_DTYPE[tg.result_type(tg.ones(2, dtype=a), scalar)] \
            is torch.result_type(torch.ones(2, dtype=ta), scalar)


# every one of these wraps in the dtype, as PyTorch's kernels do
PROGRAMS = {
    "arithmetic": lambda m, x, y: (x + y, x - y, x * y, -x, x.abs(), x * 3 + 7),
    "division": lambda m, x, y: (x // y, x % y, m.fmod(x, y), x / y,
                                 m.div(x, y, rounding_mode="trunc")),
    "bits": lambda m, x, y: (x & y, x | y, x ^ y, ~x, x << y, x >> y, x << 3, x >> 9),
    "number_theory": lambda m, x, y: (m.gcd(x, y), m.lcm(x, y)),
    "reductions": lambda m, x, y: (x.sum(), x.sum(1), x.amax(1), x.amin(0), x.prod(0), m.cumsum(x, 1),
                                   x.max(), x.argmax(1)),
    "compare_and_select": lambda m, x, y: (x < y, x == y, m.where(x > y, x, y), m.maximum(x, y),
                                           m.clamp(x, 2, 100)),
    "clamp_bounds_wrap": lambda m, x, y: (m.clamp(x, -5, 100), m.clamp(x, None, -1)),
    "casts": lambda m, x, y: (x.float() * 0.5, x.to(m.int64) * 1000, (x.float() * 3.7).to(x.dtype),
                              x.to(m.uint8), x.to(m.int8), x.to(m.bool)),
    "mixed": lambda m, x, y: (x + y.to(m.uint8), x * y.to(m.int8), x + y.to(m.int32), x.to(m.uint8) - 300),
}


def _compiled(fn):
    return tg.compile(fn, backend="c", fullgraph=True)


@needs_torch
@pytest.mark.parametrize("dtype", SMALL, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_small_ints_match_torch_eager_and_compiled(name, dtype):
    fn = PROGRAMS[name]
    x = _values(dtype, 12, seed=1).reshape(3, 4)
    y = _values(dtype, 12, seed=2).reshape(3, 4)
    if name == "division":
        y[y == 0] = 3
    if name == "bits":  # shift amounts: negative, within and past the width
        y = np.array([[-1, 0, 1, 7], [8, 9, 15, 16], [2, 3, 5, 70]]).astype(np.int64).clip(
            np.iinfo(dtype.np).min, np.iinfo(dtype.np).max).astype(dtype.np)
    if name == "casts":
        x = x // 2 if dtype is not tg.uint8 else x  # (float -> small int of values in range)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(torch, torch.from_numpy(x.copy()), torch.from_numpy(y.copy()))
    tx, ty = tg.tensor(x), tg.tensor(y)
    for mode, got in (("eager", fn(tg, tx, ty)), ("c", _compiled(lambda a, b: fn(tg, a, b))(tx, ty))):
        for k, (g, w) in enumerate(zip(got, want)):
            where = f"{name}[{k}] {mode} {dtype.name}"
            assert TG_TO_TORCH_DTYPE[g.dtype] is w.dtype, where
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, err_msg=where)


def test_numpy_interop_and_methods():
    image = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    t = tg.tensor(image)
    assert t.dtype is tg.uint8 and t.numpy().dtype == np.uint8
    assert tg.from_numpy(image.astype(np.int8)).dtype is tg.int8
    assert t.char().dtype is tg.int8 and t.short().dtype is tg.int16 and t.byte().dtype is tg.uint8
    assert tg.short is tg.int16 and tg.int is tg.int32
    assert (t.float() / 255).dtype is tg.float32
    assert t.numpy().tolist() == image.tolist()


def test_uint8_index_is_a_mask_with_a_warning():
    x = tg.arange(5) * 10
    mask = tg.tensor([0, 1, 1, 0, 1], dtype=tg.uint8)
    with pytest.warns(UserWarning, match="indexing with dtype tracegrad.uint8 is now deprecated"):
        assert x[mask].tolist() == [10, 20, 40]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[tg.tensor([0, 1], dtype=tg.int8)]


def test_add_and_sub_alpha_keep_the_tensors_dtype():
    x = tg.tensor([100, 7], dtype=tg.int8)
    assert tg.add(x, x, alpha=2).dtype is tg.int8
    assert tg.add(x, x, alpha=2).tolist() == [44, 21]  # 300 wraps in int8
    b = tg.tensor([True, False])
    assert tg.add(b, b, alpha=True).dtype is tg.bool
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        tg.add(x, x, alpha=0.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        tg.add(x, x, alpha=True)


def test_sub_of_bools_raises_as_torch():
    b = tg.tensor([True, False])
    for fn in (lambda: b - 1, lambda: 1 - b, lambda: tg.ones(2) - b, lambda: tg.ones(2) - True):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
            fn()
    with pytest.raises(RuntimeError, match="with two bool tensors"):
        b - b


def test_scalar_arguments_beyond_the_width_raise():
    """As PyTorch's c10 overflows(): an int8 takes [-128, 127]; a uint8 [-255, 255], wrapping."""
    for call in (lambda: tg.tensor([1], dtype=tg.int8).clamp(300),
                 lambda: tg.where(tg.tensor([True]), tg.tensor([1], dtype=tg.int8), 500),
                 lambda: tg.tensor([1], dtype=tg.uint8).clamp(None, -256)):
        with pytest.raises(RuntimeError, match="value cannot be converted to type u?int8_t without overflow"):
            call()
    assert tg.where(tg.tensor([False]), tg.tensor([1], dtype=tg.uint8), -3).tolist() == [253]
    assert tg.tensor([-1, -255, 255], dtype=tg.uint8).tolist() == [255, 1, 255]  # tensor creation too
    for values, dtype in (([300], tg.uint8), ([-256], tg.uint8), ([128], tg.int8)):
        with pytest.raises(RuntimeError, match=f"value cannot be converted to type {dtype.name} without overflow"):
            tg.tensor(values, dtype=dtype)


def test_copysign_result_dtype():
    assert tg.copysign(tg.tensor([1, 2]), tg.tensor([-1.0], dtype=tg.float64)).dtype is tg.float64
    assert tg.copysign(tg.tensor([1.0]), tg.tensor([-1.0], dtype=tg.float64)).dtype is tg.float64
    assert tg.copysign(tg.tensor([1, 2]), -1).tolist() == [-1.0, -2.0]

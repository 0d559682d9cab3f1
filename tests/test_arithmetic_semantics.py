"""Arithmetic whose results PyTorch users rely on exactly: integer fmod, remainder, div with a
rounding mode and pow in exact integer arithmetic (not through float64, which rounds above
2^53), eager, compiled (C and interpreter) and exported, against PyTorch; a zero divisor raises
ZeroDivisionError everywhere, a divisor of -1 does not trap; integers to negative powers follow
PyTorch. Floor division of floats is PyTorch's (CPython's float //, from fmod: 1.0 // 0.1 is
9), not floor(a / b); sign of NaN is PyTorch's 0. Float functions of integer tensors, and
log_ndtr's tails."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

BIG = np.array([2**62 + 12345, -(2**60) - 7, 2**53 + 1, -7, 7, -(2**63) + 5, 0, 9, -2**63], np.int64)
DIVISORS = np.array([1000003, 97, 10, 2, -2, -1, -3, 4, 7], np.int64)
# what PyTorch gives, by Python's exact integers (floor: //, trunc: toward zero; fmod: the sign
# of the dividend, remainder: of the divisor)
OPS = {
    "floor": (lambda a, b: tg.div(a, b, rounding_mode="floor"), lambda a, b: a // b),
    "trunc": (lambda a, b: tg.div(a, b, rounding_mode="trunc"),
              lambda a, b: -(-a // b) if (a < 0) != (b < 0) else a // b),
    "floordiv_operator": (lambda a, b: a // b, lambda a, b: a // b),
    "fmod": (tg.fmod, lambda a, b: a - b * (-(-a // b) if (a < 0) != (b < 0) else a // b)),
    "remainder": (tg.remainder, lambda a, b: a % b),
    "mod_operator": (lambda a, b: a % b, lambda a, b: a % b),
}


def _wrapped(values):
    return np.array([(v + 2**63) % 2**64 - 2**63 for v in values], np.int64)  # (INT_MIN // -1 wraps)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("backend", [None, "c", "interpreter"])
def test_exact_on_every_int64(name, backend):
    fn, exact = OPS[name]
    want = _wrapped([exact(int(a), int(b)) for a, b in zip(BIG, DIVISORS)])
    run = tg.compile(fn, backend=backend, fullgraph=True) if backend else fn
    got = run(tg.tensor(BIG), tg.tensor(DIVISORS))
    assert got.dtype == tg.int64
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("name", sorted(OPS))
def test_int32_and_python_scalars_match_torch(name):
    torch = pytest.importorskip("torch")
    fn, _ = OPS[name]
    a = np.arange(-20, 21, dtype=np.int32)
    b = np.resize(np.array([3, -4, 7, -1, 2], np.int32), a.shape)
    torch_fn = {"floor": lambda x, y: torch.div(x, y, rounding_mode="floor"),
                "trunc": lambda x, y: torch.div(x, y, rounding_mode="trunc"),
                "fmod": torch.fmod, "remainder": torch.remainder}.get(name, fn)
    for other, other_torch in ((tg.tensor(b), torch.tensor(b)), (3, 3), (-5, -5)):
        got = fn(tg.tensor(a), other)
        want = torch_fn(torch.tensor(a), other_torch)
        assert got.dtype.name == str(want.dtype).replace("torch.", "")
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        compiled = tg.compile(lambda x: fn(x, other), backend="c", fullgraph=True)(tg.tensor(a))
        np.testing.assert_array_equal(compiled.numpy(), want.numpy())


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("backend", [None, "c", "interpreter"])
def test_zero_divisor_raises(name, backend):
    fn, _ = OPS[name]
    run = tg.compile(fn, backend=backend) if backend else fn
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        run(tg.tensor([5, 3]), tg.tensor([2, 0]))


POWERS = [(3, 39), (-3, 39), (2, 62), (2, 63), (10, 18), (7, 0), (0, 0), (0, 5), (-1, 7), (-1, -7),
          (-1, -8), (1, -5), (2, -1), (0, -2), (-5, 3), (3, 41)]


@pytest.mark.parametrize("backend", [None, "c", "interpreter"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_pow_exact_and_negative_exponents(backend, dtype):
    """Wrapping like repeated products (PyTorch's); a negative exponent gives 1, +-1 or 0."""
    bits = 8 * np.dtype(dtype).itemsize

    def exact(a, b):
        if b < 0:
            return 1 if a == 1 else ((-1) ** (-b) if a == -1 else 0)
        v = a ** b % 2**bits
        return v - 2**bits if v >= 2 ** (bits - 1) else v

    a, b = (np.array(v, dtype) for v in zip(*POWERS))
    run = tg.compile(lambda x, y: x ** y, backend=backend, fullgraph=True) if backend else (lambda x, y: x ** y)
    got = run(tg.tensor(a), tg.tensor(b))
    assert got.dtype.name == np.dtype(dtype).name
    np.testing.assert_array_equal(got.numpy(), np.array([exact(int(x), int(y)) for x, y in zip(a, b)], dtype))
    scalar = tg.compile(lambda x: x ** 3, backend=backend) if backend else (lambda x: x ** 3)
    np.testing.assert_array_equal(scalar(tg.tensor(a)).numpy(), np.array([exact(int(x), 3) for x in a], dtype))


def test_pow_matches_torch_and_rejects_a_negative_python_exponent():
    torch = pytest.importorskip("torch")
    a, b = (np.array(v, np.int64) for v in zip(*POWERS))
    np.testing.assert_array_equal((tg.tensor(a) ** tg.tensor(b)).numpy(), (torch.tensor(a) ** torch.tensor(b)).numpy())
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        torch.tensor(a) ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        tg.tensor(a) ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        tg.pow(tg.tensor(a), -2)


def test_exported_library_names_a_zero_divisor(tmp_path):
    """The exported function computes exactly and, for a zero divisor, returns 2 with a message
    naming it (and, for a bad index, one naming that)."""
    import os

    from test_export import _call_shared_library, build

    def fn(a, b, idx):
        return a // b, a % b, tg.fmod(a, b), a.float()[idx]

    args = (tg.tensor(BIG), tg.tensor(DIVISORS), tg.tensor([0, 2]))
    ep = tg.export(fn, *args, name="intdiv")
    build(ep, tmp_path)
    library = os.path.join(str(tmp_path), "libintdiv.so")
    arrays = [t.numpy() for t in args]
    for got, want in zip(_call_shared_library(ep, library, arrays), fn(*args)):
        np.testing.assert_array_equal(got, want.numpy())
    zero = DIVISORS.copy()
    zero[3] = 0
    message = _call_shared_library(ep, library, [BIG, zero, arrays[2]], fails_with=2)
    assert message == "intdiv: an integer division by zero (outputs are unspecified)"
    message = _call_shared_library(ep, library, [BIG, DIVISORS, np.array([0, 99])], fails_with=2)
    assert message == "intdiv: an index input is out of bounds (outputs are unspecified)"


FLOAT_A = [1.0, 0.3, -1.0, 7.0, np.inf, -np.inf, 5.0, -0.0, 0.0, np.nan, 1e308, -3.5, 3.5, -5.0, 1e-300]
FLOAT_B = [0.1, 0.1, 0.1, 0.7, 0.7, 2.0, 0.0, 3.0, -3.0, 1.0, 1e-308, 0.5, -0.5, 0.0, -1e300]


@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize("backend", [None, "c", "interpreter"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float_division_with_a_rounding_mode_matches_torch(mode, backend, dtype):
    torch = pytest.importorskip("torch")
    with np.errstate(over="ignore", under="ignore"):  # (1e308 is inf in float32)
        a, b = np.array(FLOAT_A, dtype), np.array(FLOAT_B, dtype)
    want = torch.div(torch.tensor(a), torch.tensor(b), rounding_mode=mode).numpy()
    fn = lambda x, y: tg.div(x, y, rounding_mode=mode)
    got = (tg.compile(fn, backend=backend, fullgraph=True) if backend else fn)(tg.tensor(a), tg.tensor(b)).numpy()
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))  # (-0.0 kept)


def test_float_floor_division_has_zero_gradients():
    x = tg.tensor([1.0, 2.5, -0.7], requires_grad=True)
    y = tg.tensor([0.3, -0.4, 0.2], requires_grad=True)
    out = x // y
    assert out.requires_grad
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0)
    np.testing.assert_array_equal(y.grad.numpy(), 0)


@pytest.mark.parametrize("backend", [None, "c", "interpreter"])
def test_sign_of_nan_is_zero_as_in_pytorch(backend):
    """PyTorch's sign is (x > 0) - (x < 0): 0 for NaN (NumPy's is NaN), and so abs's gradient
    there."""
    fn = tg.sign if backend is None else tg.compile(tg.sign, backend=backend)
    got = fn(tg.tensor([np.nan, -np.nan, 2.0, -3.0, 0.0, -0.0, np.inf]))
    np.testing.assert_array_equal(got.numpy(), [0, 0, 1, -1, 0, 0, 1])
    x = tg.tensor([np.nan, -2.0], requires_grad=True)
    x.abs().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, -1])


FLOAT_OPS_OF_INTEGERS = ["sigmoid", "erf", "erfc", "erfinv", "lgamma", "digamma", "i0", "special.i0e",
                         "special.i1", "special.ndtri", "special.erfcx", "special.bessel_j0",
                         "special.bessel_y1", "special.modified_bessel_k0", "special.airy_ai"]


@pytest.mark.parametrize("name", FLOAT_OPS_OF_INTEGERS)
@pytest.mark.parametrize("backend", [None, "c", "interpreter"])
def test_float_functions_of_integer_tensors(name, backend):
    """An integer tensor is computed as the default float dtype (sigmoid of int64 gave zeros)."""
    fn = tg
    for part in name.split("."):
        fn = getattr(fn, part)
    ints = tg.tensor([1, 2, 3])
    run = tg.compile(fn, backend=backend) if backend else fn
    got, want = run(ints), fn(ints.float())
    assert got.dtype == tg.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_ndtr_across_its_range(dtype):
    """Finite into the far lower tail (float32's ndtr underflows from about -13.5) and accurate
    in the upper one (1 - ndtr rounds there); against PyTorch."""
    torch = pytest.importorskip("torch")
    x = np.array([-40, -20.5, -19.5, -13, -10.5, -9.5, -3, -0.5, 0, 1e-3, 0.5, 1, 2, 3, 5, 8, 10], dtype)
    got = tg.special.log_ndtr(tg.tensor(x)).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, torch.special.log_ndtr(torch.tensor(x)).numpy(),
                               rtol=4e-7 if dtype == np.float32 else 1e-12)


def test_reflected_and_in_place_division_operators_match_torch():
    """``7 // x``, and ``//=``, ``%=``, ``**=`` in place (a view of the tensor sees them)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        x = lib.tensor([7, -7])
        view = x[:1]
        row = [7 // x, 7.5 // x]
        x //= 2
        row += [x.clone(), view.clone()]
        x %= 3
        row += [x.clone(), view.clone()]
        x **= 2
        row += [x, view]
        results.append([r.numpy() for r in row])
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)

"""tg.special's own primitives (ndtri, erfcx, i0/i0e/i1/i1e, the Bessel functions, zeta) and
the functions built on them, against torch.special over wide ranges and at the edges (inf, NaN,
0, poles), their gradients (PyTorch's rules; none where PyTorch has none), and compiled (C)
against eager. SciPy, where installed, checks the Bessel functions to ~1e-15 (PyTorch's own are
off by up to ~1e-6 there). The registry tests cover gradcheck, gradgradcheck and JVPs."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -1e-300, 1e300, -1e300, 700.0, 714.0, -720.0]
LINE = np.concatenate([np.linspace(-40, 40, 4001), EDGES])
PROBABILITIES = np.concatenate([np.linspace(0, 1, 1001), np.logspace(-300, -1, 300), 1 - np.logspace(-16, -1, 100),
                                [-0.5, 1.5, np.nan]])
# PyTorch's Bessel J and Y are good to ~1e-6 absolute between 5 and 25 (its asymptotic fits)
TORCH_ABS = {"bessel_j0": 1e-6, "bessel_j1": 1e-6, "bessel_y0": 1e-6, "bessel_y1": 1e-6}
UNARY = ["ndtri", "erfcx", "i0", "i0e", "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1",
         "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "spherical_bessel_j0", "modified_bessel_k0",
         "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai"]
BESSEL_K = UNARY[-5:-1]


def _close(ours, theirs, rtol, atol, what):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs), err_msg=f"{what}: NaN positions")
    np.testing.assert_array_equal(ours[np.isinf(theirs)], theirs[np.isinf(theirs)], err_msg=f"{what}: infinities")
    finite = np.isfinite(theirs)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize("name", UNARY)
def test_values_match_torch(name):
    x = PROBABILITIES if name == "ndtri" else LINE
    ours = getattr(tg.special, name)(tg.tensor(x)).numpy()
    theirs = getattr(torch.special, name)(torch.tensor(x)).numpy()
    _close(ours, theirs, 1e-12, TORCH_ABS.get(name, 1e-300), name)
    for dtype in (tg.float32, tg.int64):  # (integers compute in the default float dtype)
        small = np.linspace(0.05, 0.95, 7) if name == "ndtri" else np.arange(-3.0, 4.0)
        o = getattr(tg.special, name)(tg.tensor(small).to(dtype))
        t = getattr(torch.special, name)(torch.tensor(small).to(getattr(torch, dtype.name)))
        assert o.dtype.name == str(t.dtype).split(".")[-1]
        _close(o.numpy(), t.numpy(), 1e-6, 1e-6, f"{name} {dtype.name}")


@pytest.mark.parametrize("name", ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "i0e", "i1e", "erfcx"])
def test_values_match_scipy(name):
    special = pytest.importorskip("scipy.special")
    reference = {"bessel_j0": special.j0, "bessel_j1": special.j1, "bessel_y0": special.y0,
                 "bessel_y1": special.y1}.get(name) or getattr(special, name)
    x = np.concatenate([np.linspace(-60, 60, 12001), np.logspace(-8, 3, 500)])
    ours = getattr(tg.special, name)(tg.tensor(x)).numpy()
    want = reference(x)
    scale = np.maximum(np.abs(want), 1.0) if name.startswith("bessel") else np.abs(want)
    finite = np.isfinite(want)
    # (erfcx below -20: SciPy's exp(x^2) rounds x^2 (~5e-14); ours splits it exactly)
    tolerance = 1e-13 if name == "erfcx" else 2e-14
    assert (np.abs(ours - want)[finite] <= tolerance * scale[finite]).all(), name


@pytest.mark.parametrize("name", BESSEL_K)
def test_bessel_k_float32_and_edges(name):
    """float32 (PyTorch computes in float; ours in double, rounded) to a few ulps, and the edges:
    inf at 0, NaN below 0, 0 (scaled: finite) at +inf, PyTorch's float results at the least
    subnormal (where its T(0.5) * x underflows)."""
    x = np.concatenate([np.logspace(-37, 2.5, 2000), np.linspace(-3, 90, 2001), [0.0, -0.0, np.inf, -np.inf, np.nan,
                                                                                   1.4e-45, 3e-45, 1e-40, 88.0, 104.0]])
    ours = getattr(tg.special, name)(tg.tensor(x, dtype=tg.float32))
    theirs = getattr(torch.special, name)(torch.tensor(x, dtype=torch.float32))
    assert ours.dtype == tg.float32
    _close(ours.numpy(), theirs.numpy(), 2e-6, 1e-44, name)
    # other subnormals: PyTorch's float T(0.5) * x rounds (up to ~0.3 in K0's log); ours is its
    # double value, rounded
    tiny = np.logspace(-44.5, -38, 50).astype(np.float32)
    subnormal = getattr(tg.special, name)(tg.tensor(tiny)).numpy()
    want = getattr(torch.special, name)(torch.tensor(tiny, dtype=torch.float64)).to(torch.float32).numpy()
    _close(subnormal, want, 1e-6, 0.0, f"{name} subnormal")


def test_airy_ai_wide_range_both_dtypes():
    """PyTorch's algorithm in the input's dtype: float64 to ~1e-16 absolute (its amplitude is at
    most ~0.54), float32 to an ulp or two; the branch ends (+-2.09, 103.892), far out on both
    sides, NaN at +-inf, exact zeros where PyTorch's underflow."""
    x = np.concatenate([np.linspace(-60, 110, 20001), -np.logspace(-3, 8, 300), np.logspace(-3, 3, 300),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, -2.09, 2.09, 103.892, 103.9, 8.3203353, 26.0, 27.0]])
    for dtype, tolerance in ((tg.float64, 2e-16), (tg.float32, 1.2e-7)):
        ours = tg.special.airy_ai(tg.tensor(x, dtype=dtype))
        theirs = torch.special.airy_ai(torch.tensor(x, dtype=getattr(torch, dtype.name))).numpy()
        assert ours.dtype == dtype
        _close(ours.numpy(), theirs, 0.0, tolerance, f"airy_ai {dtype.name}")
        np.testing.assert_array_equal(ours.numpy() == 0, theirs == 0)


def test_zeta_values_and_edges():
    x = np.array([1.0, 0.5, 2.0, 2.0, 2.0, 3.0, 2.0, 2.0, 2.5, np.inf, np.nan, 2.0, 4.5, 30.0, 1.01])
    q = np.array([1.0, 1.0, 0.0, -1.0, -1.5, -2.5, np.inf, 1e-300, -1.5, 2.0, 1.0, np.nan, 0.3, 0.9, 7.0])
    _close(tg.special.zeta(tg.tensor(x), tg.tensor(q)).numpy(), torch.special.zeta(torch.tensor(x), torch.tensor(q)).numpy(),
           1e-13, 0.0, "zeta")
    grid_x, grid_q = np.meshgrid(np.linspace(1.1, 20, 40), np.linspace(0.05, 30, 40))
    _close(tg.special.zeta(tg.tensor(grid_x), tg.tensor(grid_q)).numpy(),
           torch.special.zeta(torch.tensor(grid_x), torch.tensor(grid_q)).numpy(), 1e-13, 0.0, "zeta grid")
    np.testing.assert_allclose(tg.special.zeta(2, tg.tensor([1.0, 2.0])).numpy(), [np.pi ** 2 / 6, np.pi ** 2 / 6 - 1])
    # zeta(2, q) ~ 1/q for huge q: 1e-300 at 1e300, where PyTorch's underflows to 0
    assert tg.special.zeta(tg.tensor(2.0, dtype=tg.float64), 1e300).item() == pytest.approx(1e-300, rel=1e-12)
    assert tg.special.zeta(tg.tensor([2.0, 3.0]), 1).dtype == tg.float32  # (a Python number takes the tensor's dtype)


def _grad(lib, name, x, *rest):
    t = lib.tensor(x, requires_grad=True)
    out = getattr(lib.special, name)(*rest, t) if rest else getattr(lib.special, name)(t)
    if not out.requires_grad:
        return None
    return lib.autograd.grad(out.sum(), t)[0].numpy()


@pytest.mark.parametrize("name", UNARY)
def test_gradients_are_pytorchs(name):
    """Values of the derivative (including PyTorch's limits at 0 for i1/i1e), and no gradient
    where PyTorch has none (bessel_*, modified_bessel_*, spherical_bessel_j0)."""
    x = np.linspace(0.02, 0.98, 9) if name == "ndtri" else np.array([-30.0, -3.0, -0.5, 0.0, 1e-20, 0.7, 4.0, 25.0])
    ours, theirs = _grad(tg, name, x), _grad(torch, name, x)
    if theirs is None:
        assert ours is None, f"{name}: torch has no gradient"
        return
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-300, err_msg=name)


def test_zeta_derivative_only_in_q():
    x = tg.tensor([2.0, 3.5], requires_grad=True)
    q = tg.tensor([0.5, 4.0], requires_grad=True)
    tx, tq = torch.tensor([2.0, 3.5], requires_grad=True), torch.tensor([0.5, 4.0], requires_grad=True)
    out, ref = tg.special.zeta(x, q), torch.special.zeta(tx, tq)
    assert out.requires_grad
    np.testing.assert_allclose(tg.autograd.grad(out.sum(), q, retain_graph=True)[0].numpy(),
                               torch.autograd.grad(ref.sum(), tq, retain_graph=True)[0].numpy(), rtol=1e-12)
    for f in (lambda: tg.autograd.grad(out.sum(), x, retain_graph=True), lambda: out.sum().backward()):
        with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
            f()
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        tg.func.jvp(lambda a: tg.special.zeta(a, tg.tensor([1.0, 2.0])), (tg.tensor([2.0, 3.0]),), (tg.ones(2),))


def test_compiled_equals_eager():
    """Every function in one C program (fullgraph), values and the gradients that exist."""
    x = tg.tensor(np.concatenate([np.linspace(-30, 30, 61), [0.0, np.inf, np.nan]]))
    p = tg.tensor(np.concatenate([np.logspace(-300, -1, 20), np.linspace(0.1, 0.9, 9), [0.0, 1.0]]))

    def fn(x, p):
        outs = [getattr(tg.special, name)(p if name == "ndtri" else x) for name in UNARY]
        outs.append(tg.special.zeta(x.detach().abs() + 1.5, x.abs() + 0.5))  # (no derivative in x)
        grads = tg.autograd.grad(sum(o.sum() for o in outs if o.requires_grad), [x, p])
        return outs, grads

    compiled = tg.compile(fn, backend="c", fullgraph=True)
    got = compiled(x.detach().requires_grad_(), p.detach().requires_grad_())
    want = fn(x.detach().requires_grad_(), p.detach().requires_grad_())
    assert type(compiled.programs[0].executable).__name__ == "CExecutable"
    for g, w in zip([*got[0], *got[1]], [*want[0], *want[1]]):
        _close(g.detach().numpy(), w.detach().numpy(), 1e-12, 1e-300, "compiled")  # (ndtri's gradient exp(x^2 / 2) at x ~ -37)

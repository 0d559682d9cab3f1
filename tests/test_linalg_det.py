"""Derivatives of det, slogdet and logdet at singular and nearly singular matrices (the cofactor
primitive, ops/determinant.py) against PyTorch and finite differences, eagerly and compiled.
Regular matrices are covered by tests/test_linalg.py and the registry tests."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(3)
RANK1 = np.array([[1.0, 2.0], [2.0, 4.0]])  # det exactly 0 in LAPACK's LU
RANK2 = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
DEFICIENT = RNG.standard_normal((4, 4))
DEFICIENT[:, 0] = DEFICIENT[:, 1] + DEFICIENT[:, 2]  # rank 3, det ~1e-17 from rounding
RANK_N_MINUS_2 = np.outer([1.0, 2.0, 3.0], [1.0, 0.0, 2.0])  # cofactors all zero
NEAR = RANK1 + np.array([[0.0, 0.0], [0.0, 1e-12]])
SINGULAR = [RANK1, RANK2, DEFICIENT, RANK_N_MINUS_2, np.zeros((3, 3)), NEAR,
            np.stack([RANK1, np.array([[2.0, 1.0], [1.0, 3.0]])])]


def _cofactors(a):
    """The cofactor matrix by minors (the definition), in float64."""
    a = np.asarray(a, dtype=np.float64)
    n = a.shape[-1]
    out = np.empty_like(a)
    for idx in np.ndindex(a.shape[:-2]):
        for i in range(n):
            for j in range(n):
                minor = np.delete(np.delete(a[idx], i, 0), j, 1)
                out[idx + (i, j)] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return out


def _torch_det_grad(x):
    """PyTorch's gradient through its SVD formula (what it uses when differentiating twice; its
    plain backward returns zeros at an exactly zero determinant)."""
    t = torch.tensor(x, requires_grad=True)
    return torch.autograd.grad(torch.linalg.det(t).sum(), t, create_graph=True)[0].detach().numpy()


@pytest.mark.parametrize("k", range(len(SINGULAR)))
def test_det_gradient_is_the_cofactor_matrix(k):
    x = SINGULAR[k]
    a = tg.tensor(x, requires_grad=True)
    tg.linalg.det(a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), _cofactors(x), atol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), _torch_det_grad(x), atol=1e-12)
    compiled = tg.compile(lambda t: tg.autograd.grad(tg.linalg.det(t).sum(), t)[0], backend="c", fullgraph=True)
    np.testing.assert_allclose(compiled(tg.tensor(x, requires_grad=True)).numpy(), _cofactors(x), atol=1e-12)
    # forward mode: the directional derivative <C(A), T>
    direction = RNG.standard_normal(x.shape)
    _, tangent = tg.func.jvp(tg.linalg.det, (tg.tensor(x),), (tg.tensor(direction),))
    np.testing.assert_allclose(tangent.numpy(), (_cofactors(x) * direction).sum((-2, -1)), atol=1e-12)


@pytest.mark.parametrize("k", range(len(SINGULAR) - 1))
def test_det_second_derivative_at_singular_matrices(k):
    """By finite differences, and against PyTorch's where its value is exact (at exactly singular
    matrices; near one, PyTorch's loses digits: for 2 x 2 the second derivative is the constant
    ``<C(V), .>`` of the direction V, which ours keeps)."""
    x = tg.tensor(SINGULAR[k], requires_grad=True)
    assert tg.autograd.gradgradcheck(tg.linalg.det, (x,))
    v = RNG.standard_normal(SINGULAR[k].shape)
    ours = tg.autograd.grad((_cofactor(x) * tg.tensor(v)).sum(), x)[0].numpy()
    if SINGULAR[k] is NEAR:
        np.testing.assert_allclose(ours, _cofactors(v), atol=1e-12)
        return
    if not SINGULAR[k].any():  # (det is cubic: 0 at 0; PyTorch's is NaN there)
        np.testing.assert_array_equal(ours, 0.0)
        return
    t = torch.tensor(SINGULAR[k], requires_grad=True)
    g = torch.autograd.grad(torch.linalg.det(t), t, create_graph=True)[0]
    theirs = torch.autograd.grad((g * torch.tensor(v)).sum(), t)[0]
    np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-10)


def _cofactor(t):
    return tg.autograd.grad(tg.linalg.det(t), t, create_graph=True)[0]


@pytest.mark.parametrize("x", [RANK1, RANK2, DEFICIENT, NEAR], ids=["rank1", "rank2", "deficient", "near"])
def test_det_third_derivative_where_singular_values_are_distinct(x):
    """By finite differences only: PyTorch's third derivative at a singular matrix disagrees with
    finite differences of its own second. (With repeated singular values, two zero ones
    included, it is undefined: it goes through the SVD's derivative, ops/determinant.py.)"""
    assert tg.autograd.gradgradcheck(_cofactor, (tg.tensor(x, requires_grad=True),))


def test_slogdet_and_logdet_at_singular_matrices():
    """log|det| is -inf, its gradient A^-T infinite (no error): +-inf where a cofactor is not
    zero, eagerly and compiled. (Its signs are those of a cofactor over a zero whose sign is an
    accident of rounding: PyTorch's -0 gives the opposite ones on RANK1.)"""
    compiled = tg.compile(lambda t: tg.autograd.grad(tg.linalg.slogdet(t).logabsdet, t)[0], backend="c", fullgraph=True)
    for x in (RANK1, RANK2):
        for f in (lambda a: tg.linalg.slogdet(a).logabsdet, tg.logdet):
            a = tg.tensor(x, requires_grad=True)
            out = f(a)
            assert out.item() == -np.inf
            out.backward()
            assert np.isinf(a.grad.numpy()[_cofactors(x) != 0]).all()
        got = compiled(tg.tensor(x, requires_grad=True)).numpy()
        assert np.isinf(got[_cofactors(x) != 0]).all()


def test_slogdet_near_singular_and_large():
    """Near a singular matrix the gradient is A^-T to PyTorch's digits; a 300 x 300 determinant
    overflows while slogdet does not (values and gradients as PyTorch's)."""
    big = RNG.standard_normal((300, 300)) * 30
    for x in (NEAR, DEFICIENT + 1e-9 * np.eye(4), big):
        ours, theirs = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        o, t = tg.linalg.slogdet(ours), torch.linalg.slogdet(theirs)
        assert o.sign.item() == t.sign.item()
        np.testing.assert_allclose(o.logabsdet.item(), t.logabsdet.item(), rtol=1e-7)  # (LAPACKs differ)
        o.logabsdet.backward()
        t.logabsdet.backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-9 * np.abs(theirs.grad.numpy()).max())
    assert tg.linalg.det(tg.tensor(big)).item() in (np.inf, -np.inf)  # (silently, as PyTorch's)
    compiled = tg.compile(lambda a: tuple(tg.linalg.slogdet(a)), backend="c", fullgraph=True)
    for g, w in zip(compiled(tg.tensor(big)), tg.linalg.slogdet(tg.tensor(big))):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10)


def test_logdet_sign_cases_match_torch():
    for x in (np.array([[0.0, 2.0], [3.0, 0.0]]), np.array([[2.0, 0.0], [0.0, 3.0]]), RANK1):
        ours, theirs = tg.logdet(tg.tensor(x)), torch.logdet(torch.tensor(x))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

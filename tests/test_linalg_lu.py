"""The LU family of tg.linalg against torch.linalg (values, int32 pivots, gradients, shapes,
errors) and compiled (the C kernels of ops/lu.py) against eager. The primitives' own rules
are also in the registry tests (tests/test_ops.py)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(5)
SQUARE = RNG.standard_normal((2, 4, 4))
WIDE = RNG.standard_normal((2, 3, 5))
TALL = RNG.standard_normal((5, 3))
RHS = RNG.standard_normal((3, 1, 4, 2))


def _parts(L, result):
    """A named tuple's tensors, the int32 ones as floats (so that one cotangent fits all)."""
    return [x if x.dtype in (L.float64, L.float32) else x.to(L.float64) for x in result]


def _lu_solve_case(left, adjoint):
    def case(L, a, b):
        rhs = b if left else b.mT
        return L.linalg.lu_solve(*L.linalg.lu_factor(a), rhs, left=left, adjoint=adjoint)
    return case, [SQUARE, RHS]


CASES = {
    "lu_factor-square": (lambda L, a: _parts(L, L.linalg.lu_factor(a)), [SQUARE]),
    "lu_factor-wide": (lambda L, a: _parts(L, L.linalg.lu_factor(a)), [WIDE]),
    "lu_factor_ex-tall": (lambda L, a: _parts(L, L.linalg.lu_factor_ex(a)), [TALL]),
    "lu-square": (lambda L, a: list(L.linalg.lu(a)), [SQUARE]),
    "lu-wide": (lambda L, a: list(L.linalg.lu(a)), [WIDE]),
    "lu-tall": (lambda L, a: list(L.linalg.lu(a)), [TALL]),
    "lu_unpack": (lambda L, a: list(L.lu_unpack(*L.linalg.lu_factor(a))), [WIDE]),
    "lu_unpack-parts": (lambda L, a: [L.lu_unpack(*L.linalg.lu_factor(a), unpack_pivots=False).U,
                                      L.lu_unpack(*L.linalg.lu_factor(a), unpack_data=False).P], [TALL]),
    **{f"lu_solve-left{int(left)}-adjoint{int(adj)}": _lu_solve_case(left, adj)
       for left in (True, False) for adj in (True, False)},
}


def _run(lib, fn, arrays):
    ins = [lib.tensor(a, requires_grad=True) for a in arrays]
    return ins, fn(lib, *ins)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    fn, arrays = CASES[name]
    ours_in, ours = _run(tg, fn, arrays)
    theirs_in, theirs = _run(torch, fn, arrays)
    loss_ours, loss_theirs = 0, 0
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape), name
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
        if t.requires_grad:
            cot = RNG.standard_normal(tuple(t.shape))
            loss_ours = loss_ours + (o * tg.tensor(cot)).sum()
            loss_theirs = loss_theirs + (t * torch.tensor(cot)).sum()
    loss_ours.backward()
    loss_theirs.backward()
    for a, b in zip(ours_in, theirs_in):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_equals_eager(name):
    """Values and gradients in one C program (fullgraph: no graph break, no interpreter)."""
    fn, arrays = CASES[name]

    def step(*xs):
        outs = fn(tg, *xs)
        loss = sum((o * (1 + tg.arange(o.numel(), dtype=o.dtype).reshape(o.shape) * 0.01)).sum()
                   for o in outs if o.requires_grad)
        return [o.detach() for o in outs], tg.autograd.grad(loss, list(xs))

    compiled = tg.compile(step, backend="c", fullgraph=True)
    got = compiled(*[tg.tensor(a, requires_grad=True) for a in arrays])
    want = step(*[tg.tensor(a, requires_grad=True) for a in arrays])
    assert type(compiled.programs[0].executable).__name__ == "CExecutable"
    for g, w in zip([*got[0], *got[1]], [*want[0], *want[1]]):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


def test_pivots_info_and_named_results():
    A = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]])
    result = tg.linalg.lu_factor(A)
    assert type(result).__name__ == "linalg_lu_factor" and result._fields == ("LU", "pivots")
    assert result.pivots.dtype == tg.int32 and result.pivots.tolist() == [3, 3, 3]
    assert tg.linalg.lu_factor_ex(A)._fields == ("LU", "pivots", "info")
    assert tg.linalg.lu(A)._fields == ("P", "L", "U")
    assert type(tg.lu_unpack(*result)).__name__ == "lu_unpack"
    # singular matrices: the factorization completes, info names the first zero pivot
    for x in (np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((3, 3)), np.zeros((2, 0, 3)),
              np.array([[[1.0, 2.0], [3.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]]])):
        ours, theirs = tg.linalg.lu_factor_ex(tg.tensor(x)), torch.linalg.lu_factor_ex(torch.tensor(x))
        for o, t in zip(ours, theirs):
            assert tuple(o.shape) == tuple(t.shape) and str(o.dtype)[-5:] == str(t.dtype)[-5:]
            np.testing.assert_allclose(o.numpy(), t.numpy())
        for o, t in zip(tg.linalg.lu(tg.tensor(x)), torch.linalg.lu(torch.tensor(x))):
            np.testing.assert_allclose(o.numpy(), t.numpy())
    compiled = tg.compile(lambda a: tuple(tg.linalg.lu_factor_ex(a)), backend="c", fullgraph=True)
    singular = tg.tensor([[[1.0, 2.0], [3.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]]])
    for g, w in zip(compiled(singular), tg.linalg.lu_factor_ex(singular)):
        assert g.dtype == w.dtype and np.array_equal(g.numpy(), w.numpy())


def test_float32_and_empty():
    x = SQUARE.astype(np.float32)
    ours, theirs = tg.linalg.lu_factor(tg.tensor(x)), torch.linalg.lu_factor(torch.tensor(x))
    assert ours.LU.dtype == tg.float32
    np.testing.assert_allclose(ours.LU.numpy(), theirs.LU.numpy(), rtol=1e-5, atol=1e-6)
    compiled = tg.compile(lambda a: tuple(tg.linalg.lu(a)), backend="c")
    for g, w in zip(compiled(tg.tensor(x)), tg.linalg.lu(tg.tensor(x))):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)
    for shape in ((0, 3), (3, 0), (2, 0, 0)):
        for o, t in zip(tg.linalg.lu(tg.zeros(*shape)), torch.linalg.lu(torch.zeros(*shape))):
            assert tuple(o.shape) == tuple(t.shape)


def test_errors():
    singular = tg.tensor([[[2.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]])
    message = r"\(Batch element 1\): U\[2,2\] is zero and using it on lu_solve would result in a division by zero"
    for f in (tg.linalg.lu_factor, tg.compile(tg.linalg.lu_factor, backend="c"),
              lambda a: tg.linalg.lu_factor_ex(a, check_errors=True)):
        with pytest.raises(RuntimeError, match=message):
            f(singular)
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        tg.linalg.lu(tg.eye(2), pivot=False)
    with pytest.raises(RuntimeError, match="Expected tensor with 2 or more dimensions"):
        tg.linalg.lu_factor(tg.ones(3))
    with pytest.raises(RuntimeError, match="floating point.*int64"):
        tg.linalg.lu_factor(tg.ones(2, 2, dtype=tg.int64))
    LU, pivots = tg.linalg.lu_factor(tg.tensor(SQUARE[0]))
    with pytest.raises(RuntimeError, match="B must have at least 2 dimensions"):
        tg.linalg.lu_solve(LU, pivots, tg.ones(4))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(4x4 and 3x1\)"):
        tg.linalg.lu_solve(LU, pivots, tg.ones(3, 1, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="pivots should be a Tensor of scalar type torch.int32"):
        tg.linalg.lu_solve(LU, pivots.long(), tg.ones(4, 1, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are 2 by 3"):
        tg.linalg.lu_solve(tg.ones(2, 3), pivots, tg.ones(2, 1))
    with pytest.raises(RuntimeError, match="must be between 1 and LU.size\\(-2\\) inclusive"):
        tg.lu_unpack(LU, tg.tensor([5, 1, 3, 4], dtype=tg.int32))
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be a contiguous tensor of torch.int32"):
        tg.lu_unpack(LU, pivots.long())

"""Views sharing storage and version counters, repr against PyTorch, DLPack both ways and
``__array__``."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(0)


# ----------------------------------------------------------------------------- views
VIEWS = {
    "reshape": lambda t: t.reshape(4, 3),
    "view": lambda t: t.view(2, 6),
    "transpose": lambda t: t.transpose(0, 1),
    "permute": lambda t: t.permute(1, 0),
    "T": lambda t: t.T,
    "slice": lambda t: t[1:, ::2],
    "int_index": lambda t: t[1],
    "none_ellipsis": lambda t: t[None, ..., 2],
    "unsqueeze": lambda t: t.unsqueeze(0),
    "squeeze": lambda t: t[:1].squeeze(0),
    "expand": lambda t: t[:1].expand(5, 4),
    "narrow": lambda t: t.narrow(1, 1, 2),
    "split": lambda t: t.split(2, 1)[1],
    "chunk": lambda t: t.chunk(3, 0)[2],
    "unbind": lambda t: t.unbind(1)[0],
    "flatten": lambda t: t.flatten(),
    "detach": lambda t: t.detach(),
    "view_of_view": lambda t: t[1:].T[1:],
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_views_share_storage_and_version_counter(name):
    base = tg.tensor(RNG.standard_normal((3, 4)))
    view = VIEWS[name](base)
    assert np.shares_memory(view.numpy(), base.numpy())
    ref_base = torch.from_numpy(base.numpy().copy())
    ref_view = VIEWS[name](ref_base)
    np.testing.assert_array_equal(view.numpy(), ref_view.numpy())
    assert base._version == view._version == 0
    if name != "expand":  # writing into an expanded view is an error in both libraries
        view.add_(1.0)
        ref_view.add_(1.0)
        np.testing.assert_array_equal(base.numpy(), ref_base.numpy())
        assert base._version == view._version == ref_base._version == 1
    base.mul_(2.0)
    assert view._version == base._version


def test_writing_into_expanded_view_is_an_error():
    for base in (tg.ones(1, 4), tg.ones(1, 4, requires_grad=True).mul(1)):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            base.expand(3, 4).mul_(2)


def test_non_views_do_not_share_storage():
    base = tg.tensor(RNG.standard_normal((3, 4)))
    for copy in (base.clone(), base.T.contiguous(), base * 1, base[[0, 2]], base.flip(0),
                 tg.cat([base, base])):
        assert not np.shares_memory(copy.numpy(), base.numpy())
        assert copy._version == 0


def test_contiguous_is_a_no_op_on_contiguous_tensors():
    base = tg.ones(2, 3)
    assert np.shares_memory(base.contiguous().numpy(), base.numpy())


def test_version_counts_every_inplace_write():
    x = tg.zeros(4)
    ops = [lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.sub_(1), lambda t: t.div_(2),
           lambda t: t.clamp_(0, 1), lambda t: t.zero_(), lambda t: t.fill_(3),
           lambda t: t.copy_(tg.ones(4)), lambda t: t.__setitem__(0, 5.0),
           lambda t: t.__setitem__([1, 2], 6.0), lambda t: t.index_add_(0, tg.tensor([0]), tg.ones(1))]
    for i, op in enumerate(ops, 1):
        op(x)
        assert x._version == i
    np.testing.assert_array_equal(x.numpy(), [6.0, 6.0, 6.0, 1.0])


# ----------------------------------------------------------------------------- repr
def _torch_repr(t):
    return repr(t).replace("torch.", "tracegrad.")


@pytest.mark.parametrize("data", [
    [1.0, 2.5], [1, 2, 3], [True, False], [[1.5, -2.0], [30.0, 4.25]], 3.0, 7, True,
    [1e10, 1.0], [1e-5, 1.0], [0.1234567, 100.0], [], [float("nan"), float("inf"), -1.0],
    [-0.0, 1.0], np.arange(2000.0), RNG.standard_normal((3, 40)), RNG.standard_normal((50, 30)),
    RNG.integers(-100, 100, (5, 30)), RNG.random((4, 4, 4)) > 0.5, RNG.standard_normal((2, 3, 4)),
    np.zeros((2, 0)),
], ids=lambda d: type(d).__name__ + str(np.shape(d)))
def test_repr_matches_torch(data):
    assert repr(tg.tensor(data)) == _torch_repr(torch.tensor(np.asarray(data) if isinstance(data, np.ndarray) else data))


def test_repr_with_dtype_and_autograd_suffixes_matches_torch():
    a = RNG.standard_normal((3, 9))
    x, y = tg.tensor(a, dtype=tg.float32, requires_grad=True), torch.tensor(a, dtype=torch.float32,
                                                                          requires_grad=True)
    assert repr(x) == _torch_repr(y)
    assert repr(x * 2) == _torch_repr(y * 2)
    assert repr(x.double().exp()) == _torch_repr(y.double().exp())
    assert repr(tg.tensor([1, 2], dtype=tg.int32)) == _torch_repr(torch.tensor([1, 2], dtype=torch.int32))
    assert repr(tg.zeros(0, dtype=tg.float64)) == _torch_repr(torch.zeros(0, dtype=torch.float64))


# ----------------------------------------------------------------------------- dlpack, __array__
def test_dlpack_from_torch_shares_memory():
    src = torch.arange(6.0).reshape(2, 3)
    t = tg.from_dlpack(src)
    assert t.dtype is tg.float32 and tuple(t.shape) == (2, 3)
    src[0, 0] = 42.0
    assert t[0, 0].item() == 42.0


def test_dlpack_to_torch_and_numpy_shares_memory():
    t = tg.tensor(RNG.standard_normal((2, 3)))
    r = torch.from_dlpack(t)
    assert r.dtype == torch.float64
    r[1, 2] = -7.0
    assert t[1, 2].item() == -7.0
    n = np.from_dlpack(t)
    assert np.shares_memory(n, t.numpy())
    assert t.__dlpack_device__() == r.__dlpack_device__()


def test_dlpack_roundtrip_every_dtype():
    for dt in (tg.float32, tg.float64, tg.int64, tg.int32, tg.bool):
        t = tg.ones(3, dtype=dt)
        back = tg.from_dlpack(torch.from_dlpack(t))
        assert back.dtype is dt
        np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_dlpack_refuses_tensors_requiring_grad():
    with pytest.raises(RuntimeError, match="require gradient"):
        torch.from_dlpack(tg.ones(2, requires_grad=True))


def test_array_protocol():
    t = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(t)
    assert np.shares_memory(a, t.numpy())
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert not np.shares_memory(np.array(t, copy=True), t.numpy())
    np.testing.assert_array_equal(np.add(t, 1), [[2.0, 3.0], [4.0, 5.0]])
    with pytest.raises(TypeError):  # like torch: no implicit ndarray operands
        np.ones(2) * t


def test_from_numpy_shares_memory_and_tensor_copies():
    a = np.zeros(3)
    shared, copied = tg.from_numpy(a), tg.tensor(a)
    a[0] = 1.0
    assert shared[0].item() == 1.0 and copied[0].item() == 0.0

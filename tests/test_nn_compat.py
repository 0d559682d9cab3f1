"""nn.Buffer, SyncBatchNorm (one process), DataParallel (no devices), Container, NLLLoss2d,
RNNBase/RNNCellBase with PyTorch's signatures, the 3-D pooling additions (max_unpool3d,
lp_pool3d, max_pool3d_with_indices, their modules), against PyTorch."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")
from oracle import compare_fn  # noqa: E402

rng = np.random.default_rng(0)


def test_buffer_registers_on_assignment_like_torch():
    for lib in (tg, torch):
        m = lib.nn.Module()
        m.kept = lib.nn.Buffer(lib.zeros(2))
        m.scratch = lib.nn.Buffer(lib.ones(1), persistent=False)
        assert list(m.state_dict()) == ["kept"] and [n for n, _ in m.named_buffers()] == ["kept", "scratch"]
        assert isinstance(m.kept, lib.nn.Buffer) and not isinstance(lib.ones(1), lib.nn.Buffer)


def test_sync_batchnorm_is_batch_norm_in_one_process():
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    ours, theirs = tg.nn.SyncBatchNorm(3), torch.nn.BatchNorm1d(3)
    for _ in range(2):
        np.testing.assert_allclose(ours(tg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    for k, v in ours.state_dict().items():
        np.testing.assert_allclose(v.numpy(), theirs.state_dict()[k].numpy(), rtol=1e-6, err_msg=k)
    assert repr(tg.nn.SyncBatchNorm(3)) == repr(torch.nn.SyncBatchNorm(3))
    net = tg.nn.Sequential(tg.nn.Conv2d(2, 3, 1), tg.nn.BatchNorm2d(3))
    bn = net[1]
    converted = tg.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert isinstance(converted[1], tg.nn.SyncBatchNorm) and converted[1].weight is bn.weight
    assert list(converted.state_dict()) == list(torch.nn.SyncBatchNorm.convert_sync_batchnorm(
        torch.nn.Sequential(torch.nn.Conv2d(2, 3, 1), torch.nn.BatchNorm2d(3))).state_dict())


def test_data_parallel_container_and_nllloss2d():
    inner = tg.nn.Linear(3, 2)
    dp = tg.nn.DataParallel(inner)
    x = tg.randn(4, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), inner(x).detach().numpy())
    assert list(dp.state_dict()) == list(torch.nn.DataParallel(torch.nn.Linear(3, 2)).state_dict())
    with pytest.warns(UserWarning, match="nn.Container is deprecated"):
        c = tg.nn.Container(fc=tg.nn.Linear(2, 2))
    assert list(c.state_dict()) == ["fc.weight", "fc.bias"]
    logits, target = rng.standard_normal((2, 3, 4, 4)), rng.integers(0, 3, (2, 4, 4))
    got = tg.nn.NLLLoss2d()(tg.tensor(logits), tg.tensor(target))
    want = torch.nn.NLLLoss2d()(torch.tensor(logits), torch.tensor(target))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)


def test_rnn_bases_take_pytorchs_arguments():
    base = tg.nn.RNNBase("GRU", 3, 4, num_layers=2)
    t_base = torch.nn.RNNBase("GRU", 3, 4, num_layers=2)
    assert [(k, tuple(v.shape)) for k, v in base.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in t_base.state_dict().items()]
    with pytest.raises(ValueError, match="Unrecognized RNN mode"):
        tg.nn.RNNBase("SRU", 3, 4)
    assert tg.nn.RNN(2, 3, nonlinearity="relu").mode == torch.nn.RNN(2, 3, nonlinearity="relu").mode
    assert repr(tg.nn.LSTMCell(2, 3)) == repr(torch.nn.LSTMCell(2, 3))
    assert isinstance(tg.nn.GRUCell(2, 3), tg.nn.RNNCellBase)


def test_3d_pooling_additions_equal_torchs():
    x = rng.standard_normal((1, 2, 4, 6, 6))
    compare_fn(lambda v: tg.nn.functional.lp_pool3d(v, 2.0, 2), lambda v: torch.nn.functional.lp_pool3d(v, 2.0, 2),
               [np.abs(x) + 0.1])
    out, idx = tg.nn.functional.max_pool3d_with_indices(tg.tensor(x), 2)
    t_out, t_idx = torch.nn.functional.max_pool3d_with_indices(torch.tensor(x), 2)
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    compare_fn(lambda v: tg.nn.functional.max_unpool3d(v, idx, 2),
               lambda v: torch.nn.functional.max_unpool3d(v, t_idx, 2), [out.numpy()])
    unpooled = tg.nn.MaxUnpool3d(2)(out, idx)
    np.testing.assert_array_equal(unpooled.numpy(), torch.nn.MaxUnpool3d(2)(t_out, t_idx).numpy())
    assert repr(tg.nn.LPPool3d(2, 3)) == repr(torch.nn.LPPool3d(2, 3))
    assert repr(tg.nn.MaxUnpool3d(2)) == repr(torch.nn.MaxUnpool3d(2))


@pytest.mark.parametrize("batched", [True, False])
def test_adaptive_log_softmax_equals_torchs_and_compiles(batched):
    ours = tg.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=[5, 12], div_value=2.0, head_bias=True)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=[5, 12], div_value=2.0, head_bias=True)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = rng.standard_normal((6, 8)).astype(np.float32)
    target = np.array([0, 4, 5, 11, 12, 19])
    if not batched:
        x, target = x[3], target[3]
    a, b = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = ours(a, tg.tensor(target)), theirs(b, torch.tensor(target))
    np.testing.assert_allclose(out.output.detach().numpy(), t_out.output.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.loss.backward()
    t_out.loss.backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-6)
    for (k, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert (p.grad is None) == (q.grad is None), k  # a cluster without targets: no gradient
        if q.grad is not None:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=k)
    if batched:
        np.testing.assert_allclose(ours.log_prob(tg.tensor(x)).detach().numpy(),
                                   theirs.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(ours.predict(tg.tensor(x)).numpy(), theirs.predict(torch.tensor(x)).numpy())
        compiled = tg.compile(lambda v, t: ours(v, t).loss, fullgraph=True)
        np.testing.assert_allclose(compiled(tg.tensor(x), tg.tensor(target)).item(), t_out.loss.item(), rtol=1e-5)
        with pytest.raises(RuntimeError, match="Target values should be in"):
            ours(tg.tensor(x), tg.tensor(target + 1))


def test_sdpa_kernel_selects_and_restores_backends():
    from tracegrad.nn.attention import SDPBackend, enabled_backends, sdpa_kernel
    from torch.nn.attention import SDPBackend as TorchBackend, sdpa_kernel as torch_sdpa_kernel

    assert {b.name: int(b) for b in SDPBackend} == {b.name: int(b) for b in TorchBackend.__members__.values()}
    q = rng.standard_normal((1, 2, 5, 4)).astype(np.float32)
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        assert enabled_backends() == (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION)
        with sdpa_kernel(SDPBackend.MATH):
            got = tg.nn.functional.scaled_dot_product_attention(tg.tensor(q), tg.tensor(q), tg.tensor(q), is_causal=True)
        assert enabled_backends() == (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION)
    with torch_sdpa_kernel(TorchBackend.MATH):
        want = torch.nn.functional.scaled_dot_product_attention(torch.tensor(q), torch.tensor(q), torch.tensor(q),
                                                                is_causal=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="instance of SDPBackend"):
        with sdpa_kernel(["math"]):
            pass


@pytest.mark.parametrize("kwargs", [dict(), dict(reduction="sum", label_smoothing=0.1), dict(reduction="none"),
                                    dict(ignore_index=1), dict(weight=np.array([0.2, 1.0, 3.0]))], ids=str)
@pytest.mark.parametrize("out_features", [(), (2,)])
def test_linear_cross_entropy_equals_torchs(kwargs, out_features):
    x = rng.standard_normal((5, 4))
    w = rng.standard_normal((3, *out_features, 4))
    b = rng.standard_normal((3, *out_features))
    target = rng.integers(0, 3, (5, *out_features))
    kw = dict(kwargs)
    ours_kw = {k: (tg.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    theirs_kw = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    compare_fn(lambda xx, ww, bb: tg.nn.functional.linear_cross_entropy(xx, ww, tg.tensor(target), linear_bias=bb,
                                                                        **ours_kw),
               lambda xx, ww, bb: torch.nn.functional.linear_cross_entropy(xx, ww, torch.tensor(target),
                                                                           linear_bias=bb, **theirs_kw),
               [x, w, b])


def test_linear_cross_entropy_module_and_options():
    ours = tg.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True)
    theirs = torch.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x, t = rng.standard_normal((5, 4)).astype(np.float32), rng.integers(0, 3, (5, 2))
    np.testing.assert_allclose(ours(tg.tensor(x), tg.tensor(t)).item(), theirs(torch.tensor(x), torch.tensor(t)).item(),
                               rtol=1e-5)
    chunked = tg.nn.LinearCrossEntropyLoss(4, 3, options=tg.nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    plain = tg.nn.LinearCrossEntropyLoss(4, 3)
    plain.load_state_dict(chunked.state_dict())
    assert chunked(tg.tensor(x), tg.tensor(t[:, 0])).item() == plain(tg.tensor(x), tg.tensor(t[:, 0])).item()
    with pytest.raises(ValueError, match="invalid acc_policy"):
        tg.nn.LinearCrossEntropyOptions(acc_policy="fastest")
    with pytest.raises(RuntimeError, match="expected linear_bias shape"):
        tg.nn.functional.linear_cross_entropy(tg.ones(2, 4), tg.ones(3, 4), tg.tensor([0, 1]), linear_bias=tg.ones(2))

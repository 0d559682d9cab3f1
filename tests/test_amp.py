"""tg.autocast / tg.amp against torch.autocast on CPU: which ops cast to the region's dtype and
which to float32 (linear algebra included), the values and gradients of a small network, nesting, the compiled state
guard, custom_fwd/custom_bwd, and GradScaler against torch.amp.GradScaler."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from oracle import torch

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 6)).astype(np.float32)
IMG = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)


def _network(m, weights):
    net = m.nn.Sequential(m.nn.Linear(6, 5), m.nn.ReLU(), m.nn.Linear(5, 3))
    conv = m.nn.Conv2d(3, 4, 3)
    for key, module in (("net", net), ("conv", conv)):
        for name, p in module.named_parameters():
            with m.no_grad():
                p.copy_(m.tensor(weights[key, name]))
    return net, conv


def _region(m, weights, dtype_name):
    net, conv = _network(m, weights)
    x, img = m.tensor(X), m.tensor(IMG)
    with m.autocast("cpu", dtype=getattr(m, dtype_name)):
        out = net(x)
        loss = m.nn.functional.cross_entropy(out, m.tensor([0, 1, 2, 0, 1, 2, 0, 1]))
        results = [out, loss, conv(img), x @ x.T, x.double() @ x.double().T, m.softmax(out, -1),
                   m.cat([out, x[:, :3]]), m.nn.functional.mse_loss(out, out.detach() * 0.5),
                   m.cdist(x, x),  # float32, and its inner product is not cast again
                   m.linalg.solve(m.eye(6) * 2 + x.T @ x, x.T), m.linalg.vecdot(x, x)]
        with m.autocast("cpu", enabled=False):
            results.append(x @ x.T)
        flags = (m.is_autocast_enabled("cpu"), m.is_autocast_enabled(), str(m.get_autocast_dtype("cpu")))
    loss.backward()
    return results, [p.grad for p in net.parameters()], flags


@needs_torch
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
def test_region_matches_torch(dtype_name):
    torch.manual_seed(0)
    net, conv = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)), torch.nn.Conv2d(3, 4, 3)
    weights = {(k, n): p.detach().numpy().copy() for k, mod in (("net", net), ("conv", conv))
               for n, p in mod.named_parameters()}
    want, want_grads, want_flags = _region(torch, weights, dtype_name)
    got, got_grads, got_flags = _region(tg, weights, dtype_name)
    assert got_flags[:2] == want_flags[:2] and got_flags[2].split(".")[-1] == want_flags[2].split(".")[-1]
    for k, (g, w) in enumerate(zip(got, want)):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], k
        np.testing.assert_allclose(g.detach().double().numpy(), w.detach().double().numpy(), rtol=2e-2, atol=2e-2,
                                   err_msg=str(k))
    for g, w in zip(got_grads, want_grads):
        assert g.dtype is tg.float32  # parameters and their gradients stay float32
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=2e-2, atol=2e-3)


def test_state_nesting_and_decorator():
    assert tg.autocast("cpu").fast_dtype is tg.bfloat16 and not tg.is_autocast_enabled("cpu")
    with tg.autocast("cpu", dtype=tg.float16):
        assert tg.get_autocast_dtype("cpu") is tg.float16
        with tg.autocast("cpu", enabled=False):
            assert not tg.is_autocast_enabled("cpu") and (tg.ones(2, 2) @ tg.ones(2, 2)).dtype is tg.float32
        assert tg.is_autocast_enabled("cpu")

    @tg.autocast("cpu")
    def product(a):
        return a @ a

    assert product(tg.ones(2, 2)).dtype is tg.bfloat16 and not tg.is_autocast_enabled("cpu")
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
        region = tg.autocast("cuda")
    with region:
        assert (tg.ones(2, 2) @ tg.ones(2, 2)).dtype is tg.float32
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        tg.autocast("cpu", dtype=tg.float64)


def test_compiled_function_guards_the_autocast_state():
    layer = tg.nn.Linear(4, 3)
    step = tg.compile(lambda x: layer(x).sum(), backend="c", fullgraph=True)
    x = tg.ones(2, 4)
    assert step(x).dtype is tg.float32
    with tg.autocast("cpu"):
        assert step(x).dtype is tg.bfloat16
    assert step(x).dtype is tg.float32 and len(step.programs) == 2
    inside = tg.compile(lambda x: tg.autocast("cpu")(layer)(x), backend="c", fullgraph=True)
    assert inside(x).dtype is tg.bfloat16


def test_custom_fwd_and_bwd():
    seen = {}

    class Square(tg.autograd.Function):
        @staticmethod
        @tg.amp.custom_fwd(device_type="cpu", cast_inputs=tg.float32)
        def forward(ctx, x):
            seen["forward"] = (x.dtype, tg.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @tg.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            seen["backward"] = tg.is_autocast_enabled("cpu")
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    x = tg.ones(3, dtype=tg.bfloat16, requires_grad=True)
    with tg.autocast("cpu"):
        y = Square.apply(x)
    y.sum().backward()
    assert seen == {"forward": (tg.float32, False), "backward": True}
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def _scaler_run(m, grads):
    w = m.zeros(2, requires_grad=True)
    opt = m.optim.SGD([w], lr=1.0)
    scaler = m.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    scales, values = [], []
    for g in grads:
        opt.zero_grad()
        scaler.scale((w * m.tensor(g)).sum()).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        values.append(w.detach().numpy().copy())
    return scales, values


@needs_torch
def test_grad_scaler_matches_torch():
    grads = [[1.0, 2.0], [float("inf"), 1.0], [0.5, 0.5], [1.0, 1.0], [2.0, -1.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _scaler_run(torch, grads)
    got = _scaler_run(tg, grads)
    assert got[0] == want[0]  # the scales: backoff after the inf step, growth every 2 clean ones
    np.testing.assert_allclose(np.array(got[1]), np.array(want[1]))


def test_grad_scaler_rules():
    w = tg.ones(2, requires_grad=True)
    opt = tg.optim.SGD([w], lr=0.1)
    scaler = tg.amp.GradScaler("cpu")
    scaler.scale(w.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    with pytest.warns(UserWarning, match="Disabling"):
        disabled = tg.amp.GradScaler("cuda")
    assert not disabled.is_enabled() and disabled.scale(w) is w

"""Cuda tensors on this machine's GPU, or where there is none under the emulation
(TRACEGRAD_CUDA_EMULATE=1: tests/cuda_mode.py), issue 23: device memory through the runtime's
cudaMalloc/cudaMemcpy (host memory under the emulation), eager ops as single-op CUDA programs,
autograd on them, and compiled training steps that stay on the device and match the CPU."""
from __future__ import annotations

import copy
import logging

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn as nn
from cuda_mode import use_device_or_emulation
from tracegrad.compiler.backends import cuda
from tracegrad.compiler.backends.cuda import runtime
from tracegrad.core.storage import DeviceArray


@pytest.fixture
def on_cuda(monkeypatch):
    """The GPU where there is one, else the emulation."""
    use_device_or_emulation(monkeypatch)


def test_placement_and_copies_back(on_cuda):
    assert tg.cuda.is_available() and tg.cuda.device_count() == 1
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]]).cuda()
    assert x.device == tg.device("cuda:0") and x.is_cuda and not x.is_cpu
    assert isinstance(x._value, DeviceArray)
    assert x.to("cpu").device == tg.device("cpu") and x.cpu().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert x.to("cuda") is x and x[1, 0].item() == 3.0
    assert repr(x) == "tensor([[1., 2.],\n        [3., 4.]], device='cuda:0')"
    for make in (lambda: tg.zeros(2, 3, device="cuda"), lambda: tg.randn(2, 3, device="cuda"),
                 lambda: tg.ones_like(x), lambda: tg.arange(6, device="cuda"), lambda: tg.full((2,), 7.0, device="cuda")):
        assert make().device.type == "cuda"
    tg.set_default_device("cuda")
    try:
        assert tg.zeros(2).device.type == "cuda"
    finally:
        tg.set_default_device(None)
    assert tg.zeros(2).device.type == "cpu"
    tg.cuda.synchronize()
    tg.cuda.manual_seed(0)
    assert tg.cuda.memory_allocated() > 0


def test_numpy_and_mixed_devices_raise_pytorchs_errors(on_cuda):
    x = tg.ones(3, device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu"):
        x.numpy()
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at "
                                           "least two devices, cuda:0 and cpu!"):
        x + tg.ones(3)
    assert (x + tg.tensor(2.0)).cpu().tolist() == [3.0, 3.0, 3.0]  # (a 0-dim CPU tensor is a scalar)


def test_without_gpu_or_emulation_cuda_raises_pytorchs_error(monkeypatch):
    monkeypatch.delenv(cuda.EMULATE_ENV, raising=False)
    if cuda.gpu_arch() is not None:
        pytest.skip("this machine has a GPU")
    assert not tg.cuda.is_available()
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        tg.ones(2).cuda()


def test_eager_ops_views_and_in_place_writes(on_cuda):
    tg.manual_seed(0)
    a = tg.randn(4, 5)
    b = tg.randn(5, 3)
    ga, gb = a.cuda(), b.cuda()
    checks = [
        (ga @ gb, a @ b), ((ga * 2 - 1).exp().sum(1), (a * 2 - 1).exp().sum(1)),
        (ga.T, a.T), (ga[1:3, ::2], a[1:3, ::2]), (ga.reshape(20), a.reshape(20)),
        (ga.T.reshape(20), a.T.reshape(20)), (tg.where(ga > 0, ga, gb.sum()), tg.where(a > 0, a, b.sum())),
        (ga.amax(0), a.amax(0)), (ga.to(tg.int64), a.to(tg.int64)), (ga.cumsum(1), a.cumsum(1)),
    ]
    for got, want in checks:
        assert got.device.type == "cuda" and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert ga.T._value.buffer is ga._value.buffer  # a view shares the device buffer
    ga[1:3, 0] = 10.0  # an in-place write through a view lands in the base's device memory
    a[1:3, 0] = 10.0
    ga.add_(1)
    a.add_(1)
    np.testing.assert_allclose(ga.cpu().numpy(), a.numpy())


def test_an_op_without_a_cuda_rule_runs_on_the_host_and_says_so_once(on_cuda, caplog):
    from tracegrad import _logging

    x = tg.randn(3, 4)
    _logging.set_logs(devices=True)
    try:
        with caplog.at_level(logging.INFO, logger="tracegrad"):
            got = [x.cuda().cumprod(1) for _ in range(2)]
    finally:
        _logging.set_logs()
    np.testing.assert_allclose(got[1].cpu().numpy(), x.cumprod(1).numpy(), rtol=1e-6)
    said = [r for r in caplog.records if "runs on the host" in r.getMessage()]
    assert len(said) == 1 and "cumprod" in said[0].getMessage()


def test_autograd_on_cuda_tensors(on_cuda):
    tg.manual_seed(1)
    w = tg.randn(3, 4, requires_grad=True)
    x = tg.randn(5, 3)
    gw = w.detach().cuda().requires_grad_()
    ((x.cuda() @ gw).tanh() ** 2).mean().backward()
    ((x @ w).tanh() ** 2).mean().backward()
    assert gw.grad.device.type == "cuda"
    np.testing.assert_allclose(gw.grad.cpu().numpy(), w.grad.numpy(), rtol=1e-5, atol=1e-7)
    # through a copy between devices: the gradient goes back to the CPU
    v = tg.randn(3, requires_grad=True)
    (v.cuda() * 3).sum().backward()
    assert v.grad.device.type == "cpu" and v.grad.tolist() == [3.0, 3.0, 3.0]


def _step(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    return tg.compile(step)


@pytest.mark.parametrize("make_opt", [lambda p: tg.optim.SGD(p, lr=0.05, momentum=0.9),
                                      lambda p: tg.optim.Adam(p, lr=0.01)], ids=["sgd", "adam"])
def test_compiled_training_steps_stay_on_the_device_and_match_the_cpu(on_cuda, make_opt, monkeypatch):
    tg.manual_seed(3)
    cpu_model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    gpu_model = copy.deepcopy(cpu_model).to("cuda")
    params = list(gpu_model.parameters())
    storage = [p._value.buffer for p in params]
    steps = [_step(cpu_model, make_opt(cpu_model.parameters())), _step(gpu_model, make_opt(params))]
    tg.manual_seed(4)
    rt = runtime.get()
    copies = []  # host <-> device copies the compiled step makes (after the first call: none)
    for name in ("to_host", "to_device"):
        monkeypatch.setattr(rt, name, lambda *a, _f=getattr(rt, name), _n=name: (copies.append(_n), _f(*a))[1])
    for k in range(20):
        x, y = tg.randn(16, 8), tg.randn(16, 4)
        want = steps[0](x, y)
        xg, yg = x.cuda(), y.cuda()
        del copies[:]
        got = steps[1](xg, yg)
        assert not copies or k == 0, copies
        assert got.device.type == "cuda"
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    exe = steps[1].programs[0].executable
    assert isinstance(exe, cuda.CudaExecutable) and len(steps[1].programs) == 1
    for p, q, buf, r in zip(cpu_model.parameters(), params, storage, gpu_model.parameters()):
        assert r is q and q._value.buffer is buf  # the same tensors, updated in their device memory
        assert q.grad.device.type == "cuda"
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_compiled_function_retraces_when_its_tensors_change_device(on_cuda):
    f = tg.compile(lambda x: (x * 2).sum())
    assert f(tg.ones(3)).device.type == "cpu"
    assert f(tg.ones(3).cuda()).device.type == "cuda"
    assert f(tg.ones(3)).device.type == "cpu" and len(f.programs) == 2
    assert "x: Tensor f32[3] requires_grad=False on cuda:0" in f.programs[1].guards
    assert isinstance(f.programs[1].executable, cuda.CudaExecutable)
    lin = nn.Linear(3, 2)
    g = tg.compile(lambda x: lin(x).sum())
    want = g(tg.ones(2, 3)).item()
    lin.to("cuda")  # the same parameters, moved: the program built for the CPU no longer applies
    got = g(tg.ones(2, 3).cuda())
    assert got.device.type == "cuda" and len(g.programs) == 2
    np.testing.assert_allclose(got.item(), want, rtol=1e-6)


def test_a_graph_without_cuda_rules_falls_back_through_host_copies(on_cuda):
    """cumsum has no CUDA lowering: the step runs on the interpreter with the usual warning, its tensors staying cuda tensors; a compiled forward's backward runs too."""
    tg.manual_seed(0)
    m = nn.Linear(6, 5).cuda()
    opt = tg.optim.SGD(m.parameters(), lr=0.1)

    def step(x, t):
        opt.zero_grad()
        loss = ((m(x).cumsum(1) - t) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    x, t = tg.randn(4, 6), tg.randn(4, 5)
    ref = copy.deepcopy(m).cpu()
    ref_opt = tg.optim.SGD(ref.parameters(), lr=0.1)
    with pytest.warns(RuntimeWarning, match="no CUDA lowering for op 'cumsum'"):
        got = tg.compile(step)(x.cuda(), t.cuda())
    ref_opt.zero_grad()
    want = ((ref(x).cumsum(1) - t) ** 2).mean()
    want.backward()
    ref_opt.step()
    assert got.device.type == "cuda" and m.weight.device.type == "cuda"
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
    np.testing.assert_allclose(m.weight.detach().cpu().numpy(), ref.weight.detach().numpy(), rtol=1e-5, atol=1e-7)
    w = tg.randn(6, 3, requires_grad=True, device="cuda")
    out = tg.compile(lambda a: (a @ w).tanh().sum())(x.cuda())
    out.backward()
    w_cpu = w.detach().cpu().requires_grad_()
    (x @ w_cpu).tanh().sum().backward()
    assert w.grad.device.type == "cuda"
    np.testing.assert_allclose(w.grad.cpu().numpy(), w_cpu.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert tg.tril(tg.ones(3, 3, device="cuda")).cpu().tolist() == tg.tril(tg.ones(3, 3)).tolist()


def test_nn_layers_take_device_cuda_and_the_default_device(on_cuda):
    layers = [nn.Linear(3, 2, device="cuda"), nn.Linear(3, 2, True, "cuda"), nn.Conv2d(3, 4, 3, device="cuda"),
              nn.BatchNorm1d(4, device="cuda"), nn.Embedding(5, 3, device="cuda")]
    for layer in layers:
        assert all(t.device.type == "cuda" for t in (*layer.parameters(), *layer.buffers())), layer
    tg.set_default_device("cuda")
    try:
        model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.LayerNorm(4))
        assert model(tg.ones(2, 3)).device.type == "cuda"
    finally:
        tg.set_default_device(None)
    assert nn.Linear(3, 2).weight.device.type == "cpu"
    with pytest.raises(NotImplementedError, match="make it on the CPU and move it"):
        tg.empty_strided((2, 2), (1, 2), device="cuda")  # (an API still making CPU tensors only: refused)


def test_tril_triu_indices_windows_range_asarray_and_make_tensor_take_device_cuda(on_cuda):
    for fn in (tg.tril_indices, tg.triu_indices):
        got = fn(4, 3, -1, device="cuda")
        assert got.device.type == "cuda" and got.cpu().tolist() == fn(4, 3, -1).tolist()
    tg.set_default_device("cuda")
    try:
        assert tg.tril_indices(2, 2).device.type == "cuda"  # (None: the default device, as PyTorch's)
    finally:
        tg.set_default_device(None)
    for make in (lambda d: tg.range(0, 3, device=d), lambda d: tg.hann_window(5, device=d),
                 lambda d: tg.kaiser_window(4, device=d), lambda d: tg.asarray([1.0, 2.0], device=d),
                 lambda d: tg.asarray([1.0, 2.0], device=d, copy=True)):
        got = make("cuda")
        assert got.device.type == "cuda" and got.cpu().tolist() == make(None).tolist()
    tg.manual_seed(0)
    want = tg.testing.make_tensor(2, 3, dtype=tg.float32, low=-1, high=1)
    tg.manual_seed(0)
    got = tg.testing.make_tensor((2, 3), dtype=tg.float32, device="cuda", low=-1, high=1, requires_grad=True)
    assert got.device.type == "cuda" and got.requires_grad and got.is_leaf
    np.testing.assert_array_equal(got.detach().cpu().numpy(), want.numpy())


def test_saving_pickling_and_loading_cuda_tensors(on_cuda, tmp_path):
    import pickle

    model = nn.Linear(3, 2).cuda()
    tg.save(model.state_dict(), tmp_path / "m.tg")
    back = tg.load(tmp_path / "m.tg")
    assert back["weight"].device.type == "cuda"  # (as PyTorch: back where it was saved from)
    assert tg.load(tmp_path / "m.tg", map_location="cpu")["weight"].device.type == "cpu"
    cpu_model = nn.Linear(3, 2)
    cpu_model.load_state_dict(tg.load(tmp_path / "m.tg", map_location="cpu"))
    model.load_state_dict(cpu_model.state_dict())  # (copied into the device parameters)
    np.testing.assert_array_equal(model.weight.detach().cpu().numpy(), cpu_model.weight.detach().numpy())
    x = pickle.loads(pickle.dumps(tg.arange(4.0, device="cuda")))
    assert x.device.type == "cuda" and x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
    assert copy.deepcopy(x).device.type == "cuda"


def test_backward_rules_helpers_new_tensors_and_views_stay_on_the_device(on_cuda):
    tg.manual_seed(5)
    x = tg.randn(4, 6)
    idx = tg.tensor([2, 0, 3])
    g = x.cuda().requires_grad_()
    (g[idx] * 2).sum().backward()  # (index's backward scatters into zeros it makes itself)
    want = x.clone().requires_grad_()
    (want[idx] * 2).sum().backward()
    assert g.grad.device.type == "cuda"
    np.testing.assert_array_equal(g.grad.cpu().numpy(), want.grad.numpy())
    h = tg.ones(2, device="cuda")
    made = (h.new_zeros(2, 3), h.new_ones(2), h.new_full((2,), 1.5), h.new_tensor([1.0, 2.0]), h.new_empty(1))
    assert all(t.device.type == "cuda" for t in made)
    assert g.detach().view(2, 12).device.type == "cuda"
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        g.detach().T.view(24)
    assert g.detach().T.reshape(24)._value.buffer is not g._value.buffer  # (a copy, as NumPy's)


def test_traced_values_carry_the_device_of_the_compiled_call(on_cuda):
    """Inside a compiled function, ``.device`` of an intermediate reads as eagerly, so code that
    branches on it, makes a constant ``device=x.device`` or moves ``.to(x.device)`` traces
    without a break."""
    def step(x):
        y = x * 2
        assert y.device == x.device and y.is_cuda == x.is_cuda
        z = y.to(x.device) + tg.zeros(3, device=y.device) + tg.ones(3).to(y.device)
        return z + 10 if y.device.type == "cuda" else z

    f = tg.compile(step, fullgraph=True)
    got = f(tg.ones(3, device="cuda"))
    assert got.device.type == "cuda" and got.cpu().tolist() == [13.0, 13.0, 13.0]
    assert f(tg.ones(3)).tolist() == [3.0, 3.0, 3.0]
    w = tg.ones(3, device="cuda")  # (a lifted cuda tensor makes the trace's device cuda too)
    g = tg.compile(lambda s: (w * s + tg.ones(3, device=(w * s).device)).sum(), fullgraph=True)
    assert g(tg.tensor(2.0)).device.type == "cuda" and g(tg.tensor(2.0)).item() == 9.0

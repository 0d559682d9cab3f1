"""Devices as PyTorch names them, on a machine and build without CUDA: PyTorch's CPU boilerplate
runs unchanged, and asking for a GPU raises the error PyTorch's CPU build raises (never a CPU
tensor in its place)."""
from __future__ import annotations

import pickle

import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

GPU_REQUESTS = [
    lambda m: m.zeros(2, device="cuda"),
    lambda m: m.ones(2, device="cuda:0"),
    lambda m: m.tensor([1.0], device="cuda"),
    lambda m: m.arange(3, device="cuda"),
    lambda m: m.randn(2, device="cuda"),
    lambda m: m.zeros_like(m.ones(2), device="cuda"),
    lambda m: m.ones(2).cuda(),
    lambda m: m.ones(2).to("cuda"),
    lambda m: m.ones(2).to(m.device("cuda"), m.float64),
    lambda m: m.nn.Linear(2, 2, device="cuda"),
    lambda m: m.nn.Linear(2, 2).cuda(),
    lambda m: m.nn.Linear(2, 2).to("cuda"),
    lambda m: m.cuda.synchronize(),
    lambda m: m.cuda.current_device(),
    lambda m: _default_then_zeros(m, "cuda"),
]


def _default_then_zeros(m, dev):
    m.set_default_device(dev)
    try:
        return m.zeros(2)
    finally:
        m.set_default_device(None)  # (None, not "cpu": torch keeps a device mode installed for "cpu")


@pytest.mark.parametrize("request_gpu", GPU_REQUESTS)
def test_asking_for_a_gpu_raises_as_pytorchs_cpu_build(request_gpu):
    with pytest.raises(AssertionError, match="not compiled with CUDA enabled") as theirs:
        request_gpu(torch)
    with pytest.raises(type(theirs.value), match="Torch not compiled with CUDA enabled"):
        request_gpu(tg)


def test_cpu_boilerplate_runs_unchanged():
    for m in (torch, tg):
        device = m.device("cuda" if m.cuda.is_available() else "cpu")
        model = m.nn.Linear(3, 2).to(device)
        x = m.randn(4, 3, device=device)
        y = model(x.to(device)).sum()
        y.backward()
        assert str(device) == "cpu" and x.device == device and x.device.type == "cpu"
        assert model.weight.grad.device == m.device("cpu")
        assert not x.is_cuda and m.cuda.device_count() == 0
        m.cuda.manual_seed(0)
        m.cuda.manual_seed_all(0)
        m.cuda.empty_cache()
        assert m.cuda.memory_allocated() == 0
        m.backends.cudnn.benchmark = True
        m.backends.cudnn.deterministic = True
        m.backends.cuda.matmul.allow_tf32 = True
        assert not m.backends.cudnn.is_available() and not m.backends.mps.is_available()
        m.backends.cudnn.benchmark = m.backends.cudnn.deterministic = False
        m.backends.cuda.matmul.allow_tf32 = False
        assert m.get_default_device() == m.device("cpu")
        m.set_default_device("cpu")
        assert m.zeros_like(x, device=x.device).device == device
        m.set_default_device(None)  # (torch keeps a device mode installed until this)


@pytest.mark.parametrize("spec", ["cpu", "cuda", "cuda:1", "mps", "meta"])
def test_device_objects_as_pytorchs(spec):
    ours, theirs = tg.device(spec), torch.device(spec)
    assert (str(ours), repr(ours), ours.type, ours.index) == (str(theirs), repr(theirs), theirs.type, theirs.index)
    assert ours == tg.device(spec) and hash(ours) == hash(tg.device(spec))
    assert ours != str(ours)  # as PyTorch: a device is not its string
    assert pickle.loads(pickle.dumps(ours)) == ours


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "cuda:-1"])
def test_bad_device_strings_raise_as_pytorch(bad):
    with pytest.raises(RuntimeError) as theirs:
        torch.device(bad)
    with pytest.raises(RuntimeError):
        tg.device(bad)
    assert type(theirs.value) is RuntimeError


def test_to_takes_devices_dtypes_and_other_tensors():
    x = tg.ones(2)
    assert x.to("cpu") is x and x.to(tg.device("cpu")) is x
    assert x.to("cpu", tg.float64).dtype is tg.float64
    assert x.to(device="cpu", dtype=tg.float16).dtype is tg.float16
    assert x.to(tg.zeros(1, dtype=tg.float64)).dtype is tg.float64
    y = x.to("cpu", copy=True)
    assert y is not x and y.tolist() == x.tolist()
    with tg.device("cpu"):
        assert tg.zeros(1).device == tg.device("cpu")
    assert tg.Generator().device == tg.device("cpu")

"""Every public function on cuda tensors (issue 23), under the emulation: the argument forms
of the differential sweep (tests/compat_sweep.py: ``x`` a float (3, 4) tensor, ``y`` another,
``sq`` a 4x4 matrix, ``img`` an image...) are built once on the CPU and once on cuda; each form
the CPU call accepts must give the same values on cuda, with its tensor results on cuda. A new
composite is checked here for free: one that makes a helper tensor on the CPU (a factory
without ``device=``) raises the mixed-devices error here.

What this tests is placement (where composites make their helpers and results), not the CUDA
kernels (tests/test_cuda_ops.py checks those, registry-driven): so that the sweep does not
compile one program per distinct op call (thousands of host C++ builds), the single-op programs
of eager ops are replaced by their NumPy kernels on host copies, the path an op without a CUDA
lowering takes (compiler/backends/cuda/eager.py). Views stay views of the device buffer.
Needs no torch."""
from __future__ import annotations

import inspect
import types
import warnings

import pytest

import compat_sweep
import tracegrad as tg
from tracegrad.compiler.backends import cuda
from tracegrad.compiler.backends.cuda import eager

# Forms not run on cuda, by name, with the reason. A number argument given a tensor of more
# than one element (``full_like(x, y)``, ``linspace(x, 1, True)``, ``normal_(x, y)``) is read
# as numbers on the host: a cuda tensor there raises the numpy TypeError instead of being
# copied over (PyTorch takes only a 0-dim or one-element tensor there anyway).
UNSUPPORTED = {
    "torch.full_like": "fill_value a tensor of 12 elements, read as a number on the host",
    "torch.linspace": "start a tensor of 12 elements, read as a number on the host",
    "torch.logspace": "start a tensor of 12 elements, read as a number on the host",
    "torch.scalar_tensor": "a tensor of 12 elements as the number, read on the host",
    "Tensor.exponential_": "lambd a tensor, read as a number on the host",
    "Tensor.log_normal_": "mean/std tensors, read as numbers on the host",
    "Tensor.normal_": "mean/std tensors, read as numbers on the host",
    "Tensor.uniform_": "bounds tensors, read as numbers on the host",
}

NAMESPACES = [("torch", lambda: tg, False), ("Tensor", lambda: tg.Tensor, True),
              ("nn.functional", lambda: tg.nn.functional, False), ("linalg", lambda: tg.linalg, False),
              ("special", lambda: tg.special, False)]


@pytest.fixture
def emulated_placement(monkeypatch):
    monkeypatch.setenv(cuda.EMULATE_ENV, "1")
    monkeypatch.setattr(eager, "_build_single", lambda *a: None)  # (NumPy kernels on host copies)
    monkeypatch.setattr(eager, "_log_host", lambda op: None)


def _public(ns):
    for name in sorted(dir(ns)):
        obj = getattr(ns, name, None)
        if name.startswith("_") or compat_sweep.NOT_CALLED.match(name) or obj is None:
            continue
        if isinstance(obj, type) or inspect.ismodule(obj) or not callable(obj):
            continue
        yield name, obj


def _to_host(out):
    """``out`` with its tensors copied to the CPU, and the devices of those that were tensors."""
    if isinstance(out, tg.Tensor):
        return out.detach().cpu(), [out.device.type]
    if isinstance(out, (tuple, list)):
        parts = [_to_host(o) for o in out]
        return [p for p, _ in parts], [d for _, ds in parts for d in ds]
    return out, []


def _differences(label, ns, method):
    cpu = compat_sweep._builders(types.SimpleNamespace(tensor=tg.tensor))
    dev = compat_sweep._builders(types.SimpleNamespace(tensor=lambda a: tg.tensor(a, device="cuda")))
    found = {}
    for name, obj in _public(ns):
        if f"{label}.{name}" in UNSUPPORTED:
            continue
        fn = name if method else obj
        for (tag, build_cpu), (_, build_dev) in zip(cpu, dev):
            if method and tag.startswith("(input="):
                continue
            # Each call from the same seed: random functions (dropout...) then draw the same values
            # on both devices (the emulated device's generator is the host's), and two draws that
            # agree by chance cannot pass for a deterministic function whatever ran before.
            tg.manual_seed(0)
            err, want = compat_sweep._call(fn, method, *build_cpu())
            if err is not None:
                continue  # (a form this function does not take)
            tg.manual_seed(0)
            random = not compat_sweep._same(want, compat_sweep._call(fn, method, *build_cpu())[1])
            tg.manual_seed(0)
            err, got = compat_sweep._call(fn, method, *build_dev())
            tg.set_grad_enabled(True)
            tg.set_default_dtype(tg.float32)
            if err is not None:
                found.setdefault(f"{label}.{name}", f"{tag}: {err.__name__}: {str(got).splitlines()[0][:100]}")
                continue
            host, devices = _to_host(got)
            if any(d != "cuda" for d in devices):
                found.setdefault(f"{label}.{name}", f"{tag}: a result on the CPU")
            elif not random and not compat_sweep._same(want, host):
                found.setdefault(f"{label}.{name}", f"{tag}: other values than on the CPU")
    return found


@pytest.mark.parametrize("label,namespace,method", NAMESPACES, ids=[n for n, _, _ in NAMESPACES])
def test_public_functions_on_cuda_tensors_equal_the_cpu(emulated_placement, label, namespace, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = _differences(label, namespace(), method)
    assert not found, "\n".join(f"{k}: {v}" for k, v in found.items())


def test_the_sweep_catches_a_composite_with_a_cpu_helper(emulated_placement):
    """A composite written the way this test exists to catch: a helper made without device=."""
    def shifted(x):
        return x + tg.arange(x.shape[-1])

    ns = types.SimpleNamespace(shifted=shifted)
    found = _differences("torch", ns, False)
    assert "same device" in found["torch.shifted"]
    ns.shifted = tg.core.placement.on_inputs_device(shifted)  # (the rule composites follow)
    assert _differences("torch", ns, False) == {}


def _inputs(dev):
    tg.manual_seed(0)
    return types.SimpleNamespace(
        x=tg.randn(3, 4, device=dev), sq=tg.randn(4, 4, device=dev) + 4 * tg.eye(4, device=dev),
        v=tg.randn(4, device=dev), idx=tg.tensor([0, 2, 1], device=dev), img=tg.randn(1, 2, 6, 6, device=dev),
        q=tg.randn(1, 2, 5, 4, device=dev), theta=tg.eye(2, 3, device=dev).unsqueeze(0), dev=dev)


F = tg.nn.functional
# Calls the sweep's argument forms do not reach (an index target, a 1-D diag, a causal mask...)
# of composites that make helper tensors: each on cuda equals the CPU.
CALLS = {
    "diag of a vector": lambda a: tg.diag(a.v),
    "repeat_interleave by a tensor": lambda a: tg.repeat_interleave(a.x, tg.tensor([1, 2, 0], device=a.dev), dim=0),
    "Tensor.unfold": lambda a: a.x.unfold(1, 2, 1),
    "one_hot": lambda a: F.one_hot(a.idx, 4),
    "multi_margin_loss": lambda a: F.multi_margin_loss(a.x, a.idx),
    "cross_entropy, label smoothing": lambda a: F.cross_entropy(a.x, a.idx, label_smoothing=0.1),
    "causal attention": lambda a: F.scaled_dot_product_attention(a.q, a.q, a.q, is_causal=True),
    "householder_product": lambda a: tg.linalg.householder_product(a.sq, a.v[:3]),
    "matrix_power 0": lambda a: tg.linalg.matrix_power(a.sq, 0),
    "lu_unpack": lambda a: tg.lu_unpack(*tg.linalg.lu_factor(a.sq)),
    "nonzero_static": lambda a: tg.nonzero_static(a.x > 0, size=5),
    "grid_sample": lambda a: F.grid_sample(a.img, F.affine_grid(a.theta, (1, 2, 4, 4), align_corners=False),
                                           align_corners=False),
    "fractional_max_pool2d": lambda a: F.fractional_max_pool2d(a.img, 2, output_size=(3, 3),
                                                               _random_samples=tg.full((1, 2, 2), 0.5, device=a.dev)),
    "avg_pool2d without padding counts": lambda a: F.avg_pool2d(a.img, 3, padding=1, count_include_pad=False),
    "ctc_loss": lambda a: F.ctc_loss(a.q[0, 0].reshape(5, 1, 4).log_softmax(2), tg.tensor([[1, 2]], device=a.dev),
                                     [5], [2]),
    "cumprod backward": lambda a: tg.autograd.grad(a.x.requires_grad_().cumprod(1).sum(), a.x)[0],
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_composites_the_sweep_does_not_reach_on_cuda_tensors(emulated_placement, name):
    want, _ = _to_host(CALLS[name](_inputs(None)))
    got, devices = _to_host(CALLS[name](_inputs("cuda")))
    assert devices and all(d == "cuda" for d in devices)
    assert compat_sweep._same(want, got)

"""Registry-driven: every op sample (tracegrad/ops/samples.py) the CUDA backend lowers runs through
it on this machine's GPU, or where there is none under the emulation (TRACEGRAD_CUDA_EMULATE=1:
tests/cuda_mode.py), and equals the interpreter, in float64 and
float32. The cases of a dtype are one program (each case its own inputs and output), so the
generated CUDA is compiled once per dtype rather than once per case: about 100 cases of 70
ops. A case whose op has no CUDA rule is left out by name (``Unsupported``); any other error
while lowering fails the test."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from cuda_mode import build_mode, use_device_or_emulation
from tracegrad.compiler.backends import cuda
from tracegrad.compiler.backends import interpreter
from tracegrad.compiler.backends.cuda.lower import lower
from tracegrad.compiler.ir.graph import Graph
from tracegrad.core.dtypes import from_numpy_dtype
from tracegrad.ops import samples
from tracegrad.ops.registry import REGISTRY

# ops every CUDA program of a training step needs: they must be among the lowered ones
CORE = {"add", "sub", "mul", "div", "neg", "exp", "log", "tanh", "sigmoid", "relu", "where", "sum",
        "amax", "matmul", "reshape", "permute", "expand", "slice", "cast", "pow", "sqrt", "maximum"}


def _add_case(g, op, arrays, attrs, tag):
    ins = [g.add_input(a.shape, from_numpy_dtype(a.dtype), f"{tag}_{i}") for i, a in enumerate(arrays)]
    shape, dtype = op.infer(*ins, **attrs)
    return g.add_node(op, ins, dict(attrs), shape, dtype)


def lowered_cases(dtype):
    """[(op name, case index, arrays, attrs)] of every sample case the CUDA backend lowers."""
    out = []
    for name in sorted(REGISTRY):
        if name == "nonzero":  # (its shape depends on the data: it never appears in a graph)
            continue
        op = REGISTRY[name]
        for k, (arrays, attrs) in enumerate(samples.cases(op, dtype)):
            g = Graph(name=f"{name}_{k}")
            g.outputs = [_add_case(g, op, arrays, attrs, "x")]
            try:
                lower(g)
            except cuda.Unsupported:
                continue
            out.append((name, k, arrays, attrs))
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_every_lowered_registry_sample_equals_the_interpreter(monkeypatch, dtype):
    use_device_or_emulation(monkeypatch)
    cases = lowered_cases(dtype)
    assert CORE <= {name for name, *_ in cases}, CORE - {name for name, *_ in cases}
    g = Graph(name=f"registry_samples_{np.dtype(dtype).name}")
    inputs = []
    for n, (name, k, arrays, attrs) in enumerate(cases):
        g.outputs.append(_add_case(g, REGISTRY[name], arrays, attrs, f"c{n}"))
        inputs.extend(arrays)
    exe = cuda.build(g)
    assert exe.mode == build_mode()
    got = exe(inputs)
    want = interpreter.build(g)(inputs)
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-5)
    for (name, k, _, _), gv, wv in zip(cases, got, want):
        wv = np.asarray(wv)
        assert gv.dtype == wv.dtype and gv.shape == wv.shape, f"{name}[{k}]"
        np.testing.assert_allclose(gv, wv, **tol, err_msg=f"{name}[{k}]")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_sources_build_with_nvcc_for_sm_90(tmp_path):
    """What a GPU build compiles, compiled here without a GPU: the registry samples' program,
    the device runtime (memory calls) and a strided copy (negative strides, a cast)."""
    from tracegrad.compiler.backends.cuda import eager, runtime

    g = Graph(name="registry_samples")
    for n, (name, k, arrays, attrs) in enumerate(lowered_cases(np.float32)):
        g.outputs.append(_add_case(g, REGISTRY[name], arrays, attrs, f"c{n}"))
    sources = {"program": cuda.render(lower(g), g.name), "runtime": runtime._SOURCE,
               "copy": eager.copy_source((4, 6), (1, -4), (6, 1), "<f4", "<f8")}
    for name, source in sources.items():
        path = tmp_path / f"{name}.cu"
        path.write_text(source)
        out = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(path), "-o", str(tmp_path / f"{name}.o")],
                             capture_output=True, text=True)
        assert out.returncode == 0, f"{name}: {out.stderr[-3000:]}"


def test_every_registry_sample_runs_eagerly_on_cuda_tensors(monkeypatch):
    """Eager dispatch on cuda tensors, every op sample the lowered-program test above does not
    cover: the ops without a CUDA rule (their NumPy kernels on host copies) and the views
    (strides over the device buffer), against the same calls on CPU tensors (float64)."""
    import tracegrad as tg
    from tracegrad.compiler.backends.cuda.rules import RULES

    use_device_or_emulation(monkeypatch)
    lowered = {(name, k) for name, k, _, _ in lowered_cases(np.float64)}
    ran = 0
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        rule = RULES.lookup(op)
        for k, (arrays, attrs) in enumerate(samples.cases(op, np.float64)):
            if (name, k) in lowered and (rule is None or rule.kind != "view"):
                continue
            want = op(*[tg.from_numpy(a.copy()) for a in arrays], **attrs)
            got = op(*[tg.from_numpy(a.copy()).cuda() for a in arrays], **attrs)
            assert got.device.type == "cuda", f"{name}[{k}]"
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-12, atol=1e-12,
                                       equal_nan=True, err_msg=f"{name}[{k}]")
            ran += 1
    assert ran > 100
    x = tg.randn(4, 5, dtype=tg.float64)
    g = x.cuda()
    np.testing.assert_array_equal(g[g > 0].cpu().numpy(), x[x > 0].numpy())  # (nonzero: a host count)
    g[g < 0] = 0.0
    x[x < 0] = 0.0
    np.testing.assert_array_equal(g.cpu().numpy(), x.numpy())

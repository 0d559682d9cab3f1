"""float16 and bfloat16: eager as PyTorch's (every op's result rounded to the dtype), compiled by
the C backend in float32 with narrow storage (backends/c/half.py): every registry op against its
float64 result, a training step against eager, PyTorch's values and errors."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from oracle import TG_TO_TORCH_DTYPE, torch
from test_backend_c import _run
from tracegrad.ops import samples
from tracegrad.ops.registry import REGISTRY

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _linalg(op):
    return op.name.startswith("linalg_")


CASES = [(name, k) for name in sorted(REGISTRY) for k in range(len(samples.cases(REGISTRY[name])))
         if name != "nonzero" and not _linalg(REGISTRY[name])]
NARROW = [tg.float16, tg.bfloat16]
TOLERANCE = {tg.float16: 1e-2, tg.bfloat16: 6e-2}  # (a few units of the last place: eps 1e-3, 8e-3)


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_compiled_narrow_float_matches_float64(name, k, dtype):
    """Each op (and its gradients) compiled on float16 or bfloat16 inputs: the float64 result,
    within the dtype's precision (where that result is representable: not past its max)."""
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op, dtype.np)[k]
    diff = samples.differentiable_positions(op, arrays) if op.differentiable else []
    wide = [a.astype(np.float64) if a.dtype == dtype.np else a for a in arrays]
    want, _ = _run("interpreter", op, wide, attrs, diff)
    got, prog = _run("c", op, arrays, attrs, diff)
    assert type(prog.executable).__name__ == "CExecutable"
    for j, (w, g) in enumerate(zip(want, got)):
        if w is None:
            assert g is None
            continue
        if w.dtype == np.float64 and "dtype" not in attrs:
            assert g.dtype == dtype.np, f"output {j}"
        w, g = w.astype(np.float64), g.astype(np.float64)
        representable = ~(np.isfinite(w) & (np.abs(w) > tg.finfo(dtype).max))
        np.testing.assert_allclose(g[representable], w[representable], rtol=TOLERANCE[dtype],
                                   atol=TOLERANCE[dtype], err_msg=f"output {j}")


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted({n for n, op in REGISTRY.items() if _linalg(op) and op.sample}))
def test_linear_algebra_refuses_narrow_floats(name, dtype):
    """As PyTorch's: LAPACK has no half precision."""
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op, dtype.np)[0]
    with pytest.raises(RuntimeError, match=f"Low precision dtypes not supported. Got {dtype.torch_name}"):
        op(*[tg.tensor(a) for a in arrays], **attrs)


def test_dtype_basics():
    x = tg.tensor(np.array([1.5, -2.25], np.float16))
    assert x.dtype is tg.float16 is tg.half and x.numpy().dtype == np.float16
    assert tg.ones(2).half().dtype is tg.float16 and x.float().dtype is tg.float32
    assert (x * 2.5).dtype is tg.float16                   # a Python float keeps float16
    assert (x + tg.ones(2, dtype=tg.int64)).dtype is tg.float16
    assert (x + tg.ones(2)).dtype is tg.float32
    assert (x + tg.ones(2, dtype=tg.bfloat16)).dtype is tg.float32  # neither holds the other
    assert tg.finfo(tg.float16).max == 65504.0 and tg.finfo(tg.bfloat16).eps == 2.0 ** -7
    assert tg.nn.Linear(2, 3).half().weight.dtype is tg.float16
    assert tg.nn.Linear(2, 3).bfloat16().weight.dtype is tg.bfloat16
    b = tg.tensor([1.0, 3.14159], dtype=tg.bfloat16)
    assert b.tolist() == [1.0, 3.140625] and "dtype=tracegrad.bfloat16" in repr(b)
    for narrow in (x, b):
        with pytest.raises(NotImplementedError, match=f"{narrow.dtype.name} of in 'x' has no C ABI code"):
            tg.export(lambda x: x * 2, narrow, name="twice")


@needs_torch
@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
def test_promotion_with_narrow_floats_matches_torch(dtype):
    for d in tg.dtypes.ALL:
        a, b = tg.ones(2, dtype=dtype), tg.ones(2, dtype=d)
        assert TG_TO_TORCH_DTYPE[tg.result_type(a, b)] is torch.result_type(
            torch.ones(2, dtype=TG_TO_TORCH_DTYPE[dtype]), torch.ones(2, dtype=TG_TO_TORCH_DTYPE[d]))


EAGER = {
    "linear": lambda m, x, w: m.nn.functional.linear(x, w),
    "softmax": lambda m, x, w: m.nn.functional.log_softmax(x, -1),
    "layer_norm": lambda m, x, w: m.nn.functional.layer_norm(x, (6,)),
    "gelu": lambda m, x, w: m.nn.functional.gelu(x),
    "reductions": lambda m, x, w: m.stack([x.sum(1), x.mean(1), x.var(1), x.amax(1)]),
    "cross_entropy": lambda m, x, w: m.nn.functional.cross_entropy(x, m.tensor([0, 1, 2, 3])),
    "sort": lambda m, x, w: x.sort(1).values,
    "mixed": lambda m, x, w: x + x.to(m.float32) + 1.5 + x.to(m.int32),
    "overflow": lambda m, x, w: x * 3.3 + 70000.0,
}


@needs_torch
@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(EAGER))
def test_eager_narrow_floats_match_torch(name, dtype):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((5, 6)).astype(np.float32)
    torch_dtype = TG_TO_TORCH_DTYPE[dtype]
    fn = EAGER[name]
    want = fn(torch, torch.from_numpy(x).to(torch_dtype), torch.from_numpy(w).to(torch_dtype))
    got = fn(tg, tg.tensor(x).to(dtype), tg.tensor(w).to(dtype))
    assert TG_TO_TORCH_DTYPE[got.dtype] is want.dtype
    tol = TOLERANCE[dtype] / 2
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
def test_compiled_training_step_matches_eager(dtype):
    rng = np.random.default_rng(0)
    x = tg.tensor(rng.standard_normal((32, 8)).astype(np.float32)).to(dtype)
    y = tg.tensor(rng.integers(0, 3, 32))

    def make():
        tg.manual_seed(0)
        model = tg.nn.Sequential(tg.nn.Linear(8, 16), tg.nn.ReLU(), tg.nn.Linear(16, 3)).to(dtype)
        opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = tg.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return model, step

    (eager_model, eager_step), (model, step) = make(), make()
    step = tg.compile(step, backend="c", fullgraph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no fallback)
        for _ in range(10):
            want, got = eager_step(x, y), step(x, y)
    assert got.dtype is dtype and abs(float(got) - float(want)) < TOLERANCE[dtype]
    for p, q in zip(eager_model.parameters(), model.parameters()):
        assert q.dtype is dtype
        np.testing.assert_allclose(q.double().detach().numpy(), p.double().detach().numpy(),
                                   atol=TOLERANCE[dtype] / 2)

"""float16: eager as PyTorch's (NumPy rounds every op's result to float16), compiled by the C
backend in float32 with float16 storage (backends/c/half.py): every registry op against its
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


@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_compiled_float16_matches_float64(name, k):
    """Each op (and its gradients) compiled on float16 inputs: the float64 result rounded to
    float16, within float16's precision (where that result is representable: not past 65504)."""
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op, np.float16)[k]
    diff = samples.differentiable_positions(op, arrays) if op.differentiable else []
    wide = [a.astype(np.float64) if a.dtype == np.float16 else a for a in arrays]
    want, _ = _run("interpreter", op, wide, attrs, diff)
    got, prog = _run("c", op, arrays, attrs, diff)
    assert type(prog.executable).__name__ == "CExecutable"
    for j, (w, g) in enumerate(zip(want, got)):
        if w is None:
            assert g is None
            continue
        if w.dtype == np.float64 and "dtype" not in attrs:
            assert g.dtype == np.float16, f"output {j}"
        w, g = w.astype(np.float64), g.astype(np.float64)
        representable = ~(np.isfinite(w) & (np.abs(w) > 65504))
        np.testing.assert_allclose(g[representable], w[representable], rtol=1e-2, atol=1e-2,
                                   err_msg=f"output {j}")


@pytest.mark.parametrize("name", sorted({n for n, op in REGISTRY.items() if _linalg(op) and op.sample}))
def test_linear_algebra_refuses_float16(name):
    """As PyTorch's: LAPACK has no half precision."""
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op, np.float16)[0]
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        op(*[tg.tensor(a) for a in arrays], **attrs)


def test_dtype_basics():
    x = tg.tensor(np.array([1.5, -2.25], np.float16))
    assert x.dtype is tg.float16 is tg.half and x.numpy().dtype == np.float16
    assert tg.ones(2).half().dtype is tg.float16 and x.float().dtype is tg.float32
    assert (x * 2.5).dtype is tg.float16                   # a Python float keeps float16
    assert (x + tg.ones(2, dtype=tg.int64)).dtype is tg.float16
    assert (x + tg.ones(2)).dtype is tg.float32
    assert tg.finfo(tg.float16).max == 65504.0
    assert tg.nn.Linear(2, 3).half().weight.dtype is tg.float16
    with pytest.raises(NotImplementedError, match="float16 of in 'x' has no C ABI code"):
        tg.export(lambda x: x * 2, x, name="double")


@needs_torch
def test_promotion_with_float16_matches_torch():
    for d in tg.dtypes.ALL:
        a, b = tg.ones(2, dtype=tg.float16), tg.ones(2, dtype=d)
        assert TG_TO_TORCH_DTYPE[tg.result_type(a, b)] is torch.result_type(
            torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=TG_TO_TORCH_DTYPE[d]))


EAGER = {
    "linear": lambda m, x, w: m.nn.functional.linear(x, w),
    "softmax": lambda m, x, w: m.nn.functional.log_softmax(x, -1),
    "layer_norm": lambda m, x, w: m.nn.functional.layer_norm(x, (6,)),
    "gelu": lambda m, x, w: m.nn.functional.gelu(x),
    "reductions": lambda m, x, w: m.stack([x.sum(1), x.mean(1), x.var(1), x.amax(1)]),
    "cross_entropy": lambda m, x, w: m.nn.functional.cross_entropy(x, m.tensor([0, 1, 2, 3])),
    "mixed": lambda m, x, w: x + x.to(m.float32) + 1.5 + x.to(m.int32),
    "overflow": lambda m, x, w: x * 3.3 + 70000.0,
}


@needs_torch
@pytest.mark.parametrize("name", sorted(EAGER))
def test_eager_float16_matches_torch(name):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 6)).astype(np.float16), rng.standard_normal((5, 6)).astype(np.float16)
    fn = EAGER[name]
    want = fn(torch, torch.from_numpy(x), torch.from_numpy(w))
    got = fn(tg, tg.tensor(x), tg.tensor(w))
    assert TG_TO_TORCH_DTYPE[got.dtype] is want.dtype
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.double().numpy(), rtol=5e-3, atol=5e-3)


def test_compiled_float16_training_step_matches_eager():
    rng = np.random.default_rng(0)
    x = tg.tensor(rng.standard_normal((32, 8)).astype(np.float16))
    y = tg.tensor(rng.integers(0, 3, 32))

    def make():
        tg.manual_seed(0)
        model = tg.nn.Sequential(tg.nn.Linear(8, 16), tg.nn.ReLU(), tg.nn.Linear(16, 3)).half()
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
    assert got.dtype is tg.float16 and abs(float(got) - float(want)) < 1e-2
    for p, q in zip(eager_model.parameters(), model.parameters()):
        assert q.dtype is tg.float16
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), atol=5e-3)

"""Lazy modules (tracegrad/nn/lazy.py) and uninitialized parameters (nn/parameter.py) against
PyTorch: reprs and state dicts before the first call, the module each becomes, its parameters'
shapes and initialisation (the eager layer's, from the same seed), outputs and gradients with
torch's layer loaded from ours, optimizers built before materialization, loading state dicts;
errors; and lazy layers inside a compiled training step against eager."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(3)

# name: (constructor args, kwargs, the input's shape, the eager layer and its args once sized)
LAZY = {
    "LazyLinear": ((4,), {}, (2, 5), ("Linear", (5, 4))),
    "LazyConv1d": ((4, 3), {"padding": 1, "bias": False}, (2, 6, 7), ("Conv1d", (6, 4, 3), {"padding": 1, "bias": False})),
    "LazyConv2d": ((4, 3), {"groups": 2, "stride": 2}, (2, 6, 7, 5), ("Conv2d", (6, 4, 3), {"groups": 2, "stride": 2})),
    "LazyConv3d": ((4, 2), {}, (6, 3, 4, 3), ("Conv3d", (6, 4, 2))),
    "LazyConvTranspose1d": ((4, 3), {"stride": 2}, (2, 6, 5), ("ConvTranspose1d", (6, 4, 3), {"stride": 2})),
    "LazyConvTranspose2d": ((4, 3), {"groups": 2, "output_padding": 1, "stride": 2}, (1, 6, 3, 4),
                            ("ConvTranspose2d", (6, 4, 3), {"groups": 2, "output_padding": 1, "stride": 2})),
    "LazyConvTranspose3d": ((4, 2), {"stride": 2}, (1, 6, 2, 3, 2), ("ConvTranspose3d", (6, 4, 2), {"stride": 2})),
    "LazyBatchNorm1d": ((), {}, (5, 6), ("BatchNorm1d", (6,))),
    "LazyBatchNorm2d": ((), {"momentum": 0.3, "bias": False}, (3, 6, 4, 2), ("BatchNorm2d", (6,), {"momentum": 0.3, "bias": False})),
    "LazyBatchNorm3d": ((), {"affine": False}, (2, 6, 3, 2, 2), ("BatchNorm3d", (6,), {"affine": False})),
    "LazyInstanceNorm1d": ((), {}, (2, 6, 5), ("InstanceNorm1d", (6,), {"affine": True, "track_running_stats": True})),
    "LazyInstanceNorm2d": ((), {"track_running_stats": False}, (2, 6, 4, 3),
                           ("InstanceNorm2d", (6,), {"affine": True})),
    "LazyInstanceNorm3d": ((), {"affine": False}, (2, 6, 3, 2, 3), ("InstanceNorm3d", (6,), {"track_running_stats": True})),
}


def _eager(name):
    spec = LAZY[name][3]
    return spec[0], spec[1], spec[2] if len(spec) > 2 else {}


@pytest.mark.parametrize("name", sorted(LAZY))
def test_lazy_module_matches_torch_before_and_after_its_first_call(name):
    args, kwargs, shape, _ = LAZY[name]
    ours, theirs = getattr(tg.nn, name)(*args, **kwargs).double(), getattr(torch.nn, name)(*args, **kwargs).double()
    assert repr(ours) == repr(theirs)
    assert ours.has_uninitialized_params() == theirs.has_uninitialized_params()
    state, reference = ours.state_dict(), theirs.state_dict()
    assert list(state) == list(reference)
    assert [type(v).__name__ for v in state.values()] == [type(v).__name__ for v in reference.values()]
    x = RNG.standard_normal(shape)
    xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)  # (materializes both)
    eager_name = _eager(name)[0]
    assert type(ours) is getattr(tg.nn, eager_name) and type(theirs) is getattr(torch.nn, eager_name)
    assert repr(ours) == repr(theirs)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]
    assert all(p.dtype == tg.float64 for p in ours.parameters())
    # the same computation with torch's layer holding our initial values
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    theirs.train(False), ours.train(False)
    yo, yt = ours(xo), theirs(xt)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = RNG.standard_normal(tuple(yt.shape))
    yo.backward(tg.tensor(cot))
    yt.backward(torch.tensor(cot))
    for a, b in [(xo, xt)] + list(zip(ours.parameters(), theirs.parameters())):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(LAZY))
def test_materialized_values_are_the_eager_layers_from_the_same_seed(name):
    args, kwargs, shape, _ = LAZY[name]
    eager_name, eager_args, eager_kwargs = _eager(name)
    tg.manual_seed(5)
    lazy = getattr(tg.nn, name)(*args, **kwargs)
    x = tg.tensor(RNG.standard_normal(shape).astype(np.float32))
    lazy.eval()(x)
    tg.manual_seed(5)
    eager = getattr(tg.nn, eager_name)(*eager_args, **eager_kwargs)
    want = eager.state_dict()
    for key, value in lazy.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), want[key].numpy(), err_msg=key)


def test_uninitialized_parameters_and_buffers_as_torchs():
    p, b = tg.nn.UninitializedParameter(), tg.nn.UninitializedBuffer(dtype=tg.float64)
    assert repr(p) == repr(torch.nn.UninitializedParameter()) == "<UninitializedParameter>"
    assert repr(b) == "<UninitializedBuffer>" and b.dtype == tg.float64 and not b.requires_grad
    assert isinstance(p, tg.nn.Parameter) and p.requires_grad
    assert tg.nn.parameter.is_lazy(p) and tg.nn.parameter.is_lazy(b) and not tg.nn.parameter.is_lazy(tg.ones(1))
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        p.shape
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
        p.sum()
    with pytest.raises(RuntimeError, match="shape of an uninitialized parameter"):  # (torch: ValueError)
        p + 1  # (broadcasting reads the shape first)
    assert repr(copy.deepcopy(p)) == repr(pickle.loads(pickle.dumps(p))) == "<UninitializedParameter>"
    p.materialize((2, 3))
    b.materialize((4,))
    assert type(p) is tg.nn.Parameter and p.shape == (2, 3) and p.requires_grad and p.dtype == tg.float32
    assert type(b) is tg.Tensor and b.shape == (4,) and b.dtype == tg.float64


@pytest.mark.parametrize("optimizer, kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.01})])
def test_an_optimizer_built_before_materialization_works_as_torchs(optimizer, kwargs):
    ours, theirs = tg.nn.LazyLinear(3), torch.nn.LazyLinear(3)
    opt_o = getattr(tg.optim, optimizer)(ours.parameters(), **kwargs)
    opt_t = getattr(torch.optim, optimizer)(theirs.parameters(), **kwargs)
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    ours(tg.tensor(x)), theirs(torch.tensor(x))
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    for _ in range(2):
        for model, opt, lib in ((ours, opt_o, tg), (theirs, opt_t, torch)):
            opt.zero_grad()
            model(lib.tensor(x)).square().sum().backward()
            opt.step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_state_dicts_load_into_lazy_modules_as_torchs():
    source = tg.nn.Linear(5, 3)
    lazy = tg.nn.LazyLinear(3)
    assert not lazy.load_state_dict(source.state_dict()).missing_keys
    assert type(lazy) is tg.nn.LazyLinear and not lazy.has_uninitialized_params()  # (a Linear at its forward)
    np.testing.assert_array_equal(lazy.weight.detach().numpy(), source.weight.detach().numpy())
    with pytest.raises(RuntimeError, match="in_features inferred from input: 4 is not equal"):
        copy.deepcopy(lazy)(tg.ones(2, 4))
    lazy(tg.ones(2, 5))
    assert type(lazy) is tg.nn.Linear and lazy.in_features == 5
    still_lazy = tg.nn.LazyBatchNorm1d()
    still_lazy.load_state_dict(tg.nn.LazyBatchNorm1d().state_dict())
    assert still_lazy.has_uninitialized_params()
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        tg.nn.Linear(4, 3).load_state_dict(tg.nn.LazyLinear(3).state_dict())
    # a copy is initialised on its own
    original = tg.nn.LazyConv1d(2, 3)
    twin = copy.deepcopy(original)
    twin(tg.ones(1, 4, 5))
    assert original.has_uninitialized_params() and type(original) is tg.nn.LazyConv1d
    original(tg.ones(1, 6, 5))
    assert original.weight.shape == (2, 6, 3) and twin.weight.shape == (2, 4, 3)


def test_bad_first_inputs_name_what_was_expected():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        tg.nn.LazyConv2d(4, 3, groups=2)(tg.ones(1, 3, 5, 5))
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d"):
        tg.nn.LazyConv2d(4, 3)(tg.ones(2, 3, 5, 5, 5))
    # unbatched instance norm takes its features from dim 0 (PyTorch's reads dim 1 and then fails)
    norm = tg.nn.LazyInstanceNorm1d()
    assert norm(tg.tensor(RNG.standard_normal((3, 7)))).shape == (3, 7) and norm.num_features == 3


def test_lazy_layers_in_a_compiled_training_step_equal_eager():
    """The first compiled call traces the step; the lazy layers initialise eagerly during the
    trace (once), and the step's values equal an eager run from the same seed."""
    def build():
        tg.manual_seed(1)
        model = tg.nn.Sequential(tg.nn.LazyConv2d(4, 3), tg.nn.LazyBatchNorm2d(), tg.nn.ReLU(), tg.nn.Flatten(),
                                 tg.nn.LazyLinear(2))
        # (built before materialization: the momentum buffers are made in the first step's trace.
        # SGD: the conv bias before a batch norm has a zero gradient in exact arithmetic, and
        # Adam would scale its rounding noise up to full-size steps)
        return model, tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(model, opt, x, y):
        opt.zero_grad()
        loss = tg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x = tg.tensor(RNG.standard_normal((3, 2, 6, 5)).astype(np.float32))
    y = tg.tensor(np.array([0, 1, 1]))
    model, opt = build()
    eager = [step(model, opt, x, y).item() for _ in range(3)]
    want = [v.numpy().copy() for v in model.state_dict().values()]
    model, opt = build()
    compiled = tg.compile(lambda x, y: step(model, opt, x, y), fullgraph=True)
    got = [compiled(x, y).item() for _ in range(3)]
    np.testing.assert_allclose(got, eager, rtol=1e-5)
    for value, w in zip(model.state_dict().values(), want):
        np.testing.assert_allclose(value.numpy(), w, rtol=1e-4, atol=1e-5)

"""Training parity with PyTorch: the same initial weights (copied from torch modules), the same
data, tens of steps; losses and every parameter agree after each step (float32, rtol ~1e-4)."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn as nn

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-4, 1e-5


def copy_weights(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()})
    return ours


def mlp(lib):
    return lib.Sequential(lib.Linear(20, 32), lib.ReLU(), lib.Linear(32, 32), lib.Tanh(),
                          lib.Linear(32, 5))


def convnet(lib):
    # (N, 1, 8, 8) -> conv 4x8x8 -> pool 4x4x4 -> conv 8x2x2 -> 32 features -> 3 classes
    return lib.Sequential(lib.Conv2d(1, 4, 3, padding=1), lib.GELU(), lib.MaxPool2d(2),
                          lib.Conv2d(4, 8, 3), lib.Flatten(), lib.LayerNorm(32), lib.Dropout(0.0),
                          lib.GELU(approximate="tanh"), lib.Linear(32, 3))


class EmbedRegressor:
    """Embedding -> mean over tokens -> Linear -> sigmoid, trained with BCEWithLogits."""

    @staticmethod
    def build(lib):
        return lib.Sequential(lib.Embedding(12, 6, padding_idx=0), lib.Flatten(), lib.Linear(24, 1))


def batches(kind, steps, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if kind == "mlp":
            x = rng.standard_normal((16, 20)).astype(np.float32)
            y = rng.integers(0, 5, 16)
        elif kind == "conv":
            x = rng.standard_normal((8, 1, 8, 8)).astype(np.float32)
            y = rng.integers(0, 3, 8)
        else:
            x = rng.integers(0, 12, (16, 4))
            y = (rng.random((16, 1)) > 0.5).astype(np.float32)
        yield x, y


def assert_same_training(kind, build, loss_name, make_ours, make_theirs, steps, backend=None):
    """``backend`` None trains eagerly; otherwise the whole step (zero_grad, forward, loss,
    backward, optimizer step) is one tg.compile'd program (fullgraph: no silent fallback)."""
    torch.manual_seed(0)
    theirs = build(torch.nn)
    ours = copy_weights(build(nn), theirs)
    opt, ref = make_ours(ours.parameters()), make_theirs(theirs.parameters())
    loss_t, loss_g = getattr(torch.nn, loss_name)(), getattr(nn, loss_name)()

    def our_step(x, y):
        opt.zero_grad()
        loss = loss_g(ours(x), y)
        loss.backward()
        opt.step()
        return loss

    step_fn = our_step if backend is None else tg.compile(our_step, backend=backend, fullgraph=True)
    for step, (x, y) in enumerate(batches(kind, steps)):
        ref.zero_grad()
        lt = loss_t(theirs(torch.tensor(x)), torch.tensor(y))
        lt.backward()
        ref.step()
        lg = step_fn(tg.tensor(x), tg.tensor(y))
        np.testing.assert_allclose(lg.item(), lt.item(), rtol=RTOL, atol=ATOL, err_msg=f"loss at step {step}")
        for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=RTOL, atol=ATOL,
                                       err_msg=f"{name} after step {step}")
    if backend is not None:
        assert len(step_fn.programs) == 1, [p.guards for p in step_fn.programs]


OPTIMIZERS = {
    "sgd_momentum": (lambda p: tg.optim.SGD(p, lr=0.05, momentum=0.9),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    "sgd_nesterov_wd": (lambda p: tg.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
                        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    "adam": (lambda p: tg.optim.Adam(p, lr=3e-3), lambda p: torch.optim.Adam(p, lr=3e-3)),
    "adamw": (lambda p: tg.optim.AdamW(p, lr=3e-3, weight_decay=0.05),
              lambda p: torch.optim.AdamW(p, lr=3e-3, weight_decay=0.05)),
}


BACKENDS = [None, "interpreter", "c"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_mlp_training_matches_torch(name, backend):
    make_ours, make_theirs = OPTIMIZERS[name]
    assert_same_training("mlp", mlp, "CrossEntropyLoss", make_ours, make_theirs, steps=30,
                         backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "adamw"])
def test_convnet_training_matches_torch(name, backend):
    make_ours, make_theirs = OPTIMIZERS[name]
    assert_same_training("conv", convnet, "CrossEntropyLoss", make_ours, make_theirs, steps=20,
                         backend=backend)


def test_embedding_bce_training_matches_torch():
    make_ours, make_theirs = OPTIMIZERS["adamw"]
    assert_same_training("embed", EmbedRegressor.build, "BCEWithLogitsLoss", make_ours, make_theirs,
                         steps=20)


def test_training_reduces_loss():
    """A sanity check on learning itself: a separable problem is fit within 60 steps."""
    tg.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 20)).astype(np.float32)
    y = (x[:, :5].argmax(1)).astype(np.int64)
    model = mlp(nn)
    opt = tg.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    first = None
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(model(tg.tensor(x)), tg.tensor(y))
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.2 * first

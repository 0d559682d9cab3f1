"""CTC loss (tracegrad/nn/losses_ctc.py, nn.CTCLoss) against PyTorch: losses for padded and
concatenated targets, every reduction, blank, zero_infinity, unbatched input; gradients at the
logits of a log_softmax (where PyTorch's fused backward is the true one: see the module's
docstring); our gradient on log_probs is the true derivative (gradcheck); errors; and compiled
training steps against eager."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402
import tracegrad.nn.functional as F  # noqa: E402

RNG = np.random.default_rng(5)
STEPS, BATCH, CLASSES = 9, 4, 5
LOGITS = RNG.standard_normal((STEPS, BATCH, CLASSES))
TARGETS = RNG.integers(1, CLASSES, (BATCH, 4))
TARGETS[0, 1] = TARGETS[0, 0]  # a repeated label: its alignments need a blank between
INPUT_LENGTHS, TARGET_LENGTHS = [9, 7, 5, 3], [4, 3, 0, 2]


def _targets(form, blank=0):
    labels = np.where(TARGETS == blank, (blank + 1) % CLASSES, TARGETS)  # (never the blank)
    if form == "padded":
        return labels
    return np.concatenate([labels[i, :n] for i, n in enumerate(TARGET_LENGTHS)])


def _both(fn, logits=LOGITS):
    """``fn(library, logits leaf)`` for tracegrad and torch: (ours, theirs, our leaf, their leaf)."""
    a, b = tg.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    return fn(tg, a), fn(torch, b), a, b


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("form", ["padded", "concatenated"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("blank", [0, CLASSES - 1])
def test_ctc_loss_and_gradient_match_torch(form, reduction, blank):
    targets = _targets(form, blank)

    def loss(L, logits):
        lengths = (L.tensor(INPUT_LENGTHS), L.tensor(TARGET_LENGTHS))
        return L.nn.functional.ctc_loss(logits.log_softmax(-1), L.tensor(targets), *lengths, blank=blank,
                                        reduction=reduction)

    ours, theirs, a, b = _both(loss)
    _close(ours, theirs)
    cot = RNG.standard_normal(tuple(theirs.shape))
    ours.backward(tg.tensor(cot))
    theirs.backward(torch.tensor(cot))
    _close(a.grad, b.grad)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_unreachable_targets_give_infinity_or_zero(zero_infinity):
    input_lengths = [2, 7, 5, 0]  # a target of 4 with a repeat needs 5 steps; a target of 2 in 0 steps

    def loss(L, logits):
        return L.nn.functional.ctc_loss(logits.log_softmax(-1), L.tensor(TARGETS), L.tensor(input_lengths),
                                        L.tensor(TARGET_LENGTHS), reduction="none", zero_infinity=zero_infinity)

    ours, theirs, a, b = _both(loss)
    _close(ours, theirs)
    assert np.isinf(ours.detach().numpy()).sum() == (0 if zero_infinity else 2)
    assert (ours.detach().numpy() == 0).sum() == (2 if zero_infinity else 0)
    # (with zero_infinity the zeroed losses have zero gradients, as torch's; PyTorch's
    # gradients of infinite losses are NaN, even where they are not used, ours zero: only the
    # samples with finite losses are compared)
    finite = torch.isfinite(theirs)
    ours[tg.tensor(finite.numpy())].sum().backward()
    theirs[finite].sum().backward()
    _close(a.grad[:, tg.tensor(finite.numpy())], b.grad[:, finite])
    assert not a.grad[:, tg.tensor(~finite.numpy())].numpy().any()


def test_unbatched_input_and_the_module_match_torch():
    def loss(L, logits):
        return L.nn.functional.ctc_loss(logits[:, 0].log_softmax(-1), L.tensor(TARGETS[0]), L.tensor(9),
                                        L.tensor(4))

    ours, theirs, a, b = _both(loss)
    _close(ours, theirs)
    ours.backward()
    theirs.backward()
    _close(a.grad, b.grad)
    module, reference = tg.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True), \
        torch.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert repr(module) == repr(reference) == "CTCLoss()"
    args = lambda L: (L.tensor(LOGITS).log_softmax(-1), L.tensor(TARGETS), L.tensor(INPUT_LENGTHS),
                      L.tensor(TARGET_LENGTHS))
    _close(module(*args(tg)), reference(*args(torch)))


def test_the_gradient_on_log_probs_is_the_true_derivative():
    log_probs = tg.tensor(LOGITS[:6, :2]).log_softmax(-1).detach().requires_grad_()
    targets, lengths = tg.tensor(TARGETS[:2, :3]), (tg.tensor([6, 5]), tg.tensor([3, 2]))
    assert tg.autograd.gradcheck(lambda lp: F.ctc_loss(lp, targets, *lengths, reduction="sum"), (log_probs,))


def test_minus_infinity_log_probs_keep_gradients_finite():
    logits = LOGITS.copy()
    logits[:, :, 3] = -np.inf  # a class no target uses has probability 0
    targets = np.where(TARGETS == 3, 1, TARGETS)

    def loss(L, lp):
        return L.nn.functional.ctc_loss(lp, L.tensor(targets), L.tensor(INPUT_LENGTHS), L.tensor(TARGET_LENGTHS))

    log_probs = np.asarray(torch.tensor(logits).log_softmax(-1))
    ours, theirs, a, _ = _both(loss, log_probs)
    _close(ours, theirs)
    ours.backward()
    assert np.isfinite(a.grad.numpy()).all()


@pytest.mark.parametrize("call, match", [
    (lambda lp, t: F.ctc_loss(lp, t, [9] * 4, [4] * 4, blank=5), "blank must be in label range"),
    (lambda lp, t: F.ctc_loss(lp, t, [9] * 3, [4] * 4), "input_lengths must be of size batch_size"),
    (lambda lp, t: F.ctc_loss(lp, t, [10] * 4, [4] * 4), "input_lengths to have values from 0 to 9"),
    (lambda lp, t: F.ctc_loss(lp, t, [9] * 4, [5] * 4), "target_lengths to have values from 0 to 4"),
    (lambda lp, t: F.ctc_loss(lp, t[:, 0], [9] * 4, [2] * 4), "hold sum\\(target_lengths\\) = 8 labels, got 4"),
    (lambda lp, t: F.ctc_loss(lp, t[:3], [9] * 4, [2] * 4), "padded targets must be \\(batch_size=4, S\\)"),
    (lambda lp, t: F.ctc_loss(lp[0, 0], t, [9] * 4, [2] * 4), "\\(T, N, C\\) or unbatched \\(T, C\\)")])
def test_bad_input_names_what_was_expected(call, match):
    with pytest.raises(RuntimeError, match=match):
        call(tg.tensor(LOGITS), tg.tensor(TARGETS))
    with pytest.raises(ValueError, match="x is not a valid value for reduction"):
        tg.nn.CTCLoss(reduction="x")


@pytest.mark.parametrize("form", ["padded", "concatenated"])
def test_compiled_ctc_training_step_equals_eager(form):
    """The lengths are arguments (traced): concatenated targets are then padded to a bound
    (every label), which changes nothing."""
    tg.manual_seed(0)
    layer = tg.nn.Linear(3, CLASSES)
    x = tg.tensor(RNG.standard_normal((STEPS, BATCH, 3)).astype(np.float32))
    targets = tg.tensor(_targets(form))

    def step(x, targets, input_lengths, target_lengths):
        loss = F.ctc_loss(layer(x).log_softmax(-1), targets, input_lengths, target_lengths)
        loss.backward()
        return loss

    lengths = (tg.tensor(INPUT_LENGTHS), tg.tensor(TARGET_LENGTHS))
    eager = step(x, targets, *lengths).item()
    want = [p.grad.numpy().copy() for p in layer.parameters()]
    layer.zero_grad()
    got = tg.compile(step, fullgraph=True)(x, targets, *lengths).item()
    np.testing.assert_allclose(got, eager, rtol=1e-5)
    for p, w in zip(layer.parameters(), want):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-4, atol=1e-6)

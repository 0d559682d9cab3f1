"""``ctc_loss`` (Connectionist Temporal Classification, PyTorch's ``F.ctc_loss``), re-exported
by ``tracegrad.nn.functional``: the negative log-likelihood of each target under every
alignment of it to the input's time steps (blanks between and around the labels, labels
repeated), summed by the forward algorithm.

The forward algorithm runs over the extended target (blank, l1, blank, l2, ..., blank) of each
sample, all samples at once, one time step at a time (a Python loop: a compiled function
unrolls it); each step is a ``logsumexp`` of the three states it can come from. It is made of
tracegrad ops, so autograd (and a compiled backward) differentiate it. Unreachable states hold
a large negative number rather than -inf, which keeps their gradients finite (a -inf would make
NaNs through logsumexp); a sample whose target no alignment reaches gets an infinite loss.

The gradient is the true derivative with respect to ``log_probs``. PyTorch's backward returns
``exp(log_probs) - posterior``, which is the gradient with respect to the logits of a
``log_softmax`` (PyTorch issues #52241, #82545): through ``log_softmax``, as PyTorch's
documentation asks, the two agree; on ``log_probs`` themselves they differ by that term.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> log_probs = tg.zeros(4, 1, 3).log_softmax(-1)
>>> F.ctc_loss(log_probs, tg.tensor([[1, 2]]), tg.tensor([4]), tg.tensor([2]), reduction="sum")
tensor(1.6864)
"""
from __future__ import annotations

import numpy as np

from ...core.placement import on_host as _on_host
from ... import amp as _amp
from ...core import creation, dtypes
from ..._api import functional as T
from ...core.tensor import Tensor
from .._known import known_values

__all__ = ["ctc_loss"]

# the log-probability of an unreachable state: far below any real one, yet finite (see above)
_UNREACHABLE = -1e30


@_amp.float32
@_on_host  # (the lengths and targets are read as numbers on the host)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """CTC loss of ``log_probs`` ``(T, N, C)`` (or unbatched ``(T, C)``) for ``targets``:
    padded ``(N, S)`` or concatenated ``(sum(target_lengths),)`` class indices (never
    ``blank``). ``input_lengths`` and ``target_lengths`` (tensors or sequences of ints) give
    each sample's length. ``reduction``: ``'none'`` (the per-sample losses), ``'sum'``, or
    ``'mean'`` (each loss divided by its target length, then the batch mean);
    ``zero_infinity`` makes infinite losses (and their gradients) zero.

    >>> import tracegrad as tg
    >>> import tracegrad.nn.functional as F
    >>> log_probs = tg.tensor([[0.6, 0.4], [0.5, 0.5]]).log()
    >>> # the alignments of "1" to 2 steps: "1 1", "1 -", "- 1": -log(.4*.5 + .4*.5 + .6*.5)
    >>> F.ctc_loss(log_probs, tg.tensor([1]), tg.tensor(2), tg.tensor(1), reduction="none")
    tensor(0.3567)
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_probs.ndim not in (2, 3) or not log_probs.dtype.is_floating_point:
        raise RuntimeError(f"ctc_loss: expected log_probs of floats, (T, N, C) or unbatched (T, C), got "
                           f"{log_probs.dtype} of size {list(log_probs.shape)}")
    unbatched = log_probs.ndim == 2
    lp = T.unsqueeze(log_probs, 1) if unbatched else log_probs
    steps, batch, classes = lp.shape
    if not 0 <= blank < classes:
        raise RuntimeError(f"blank must be in label range: got blank={blank} for {classes} classes")
    input_lengths = _lengths(input_lengths, batch, "input_lengths")
    target_lengths = _lengths(target_lengths, batch, "target_lengths")
    _check_lengths(input_lengths, steps, "input_lengths")
    labels = _padded_targets(T.unsqueeze(targets, 0) if unbatched and targets.ndim == 1 else targets,
                             target_lengths, batch, blank)
    log_likelihood = _forward_algorithm(lp, labels, input_lengths, target_lengths, blank)
    reachable = T.gt(log_likelihood, _UNREACHABLE / 2)
    nll = T.neg(T.where(reachable, log_likelihood, 0.0))
    loss = T.where(reachable, nll, 0.0 if zero_infinity else float("inf"))
    if reduction == "none":
        return T.squeeze(loss, 0) if unbatched else loss
    if reduction == "sum":
        return T.sum(loss)
    return T.mean(T.div(loss, T.cast(T.clamp(target_lengths, min=1), loss.dtype)))


def _lengths(lengths, batch, name):
    """``lengths`` (a tensor, an int, or a sequence of ints) as an int64 tensor ``(batch,)``."""
    if isinstance(lengths, Tensor):
        lengths = T.reshape(T.cast(lengths, dtypes.int64), (-1,))
    else:
        lengths = creation.tensor(np.asarray(lengths, dtype=np.int64).reshape(-1))
    if lengths.shape[0] != batch:
        raise RuntimeError(f"{name} must be of size batch_size ({batch}), got {lengths.shape[0]} lengths")
    return lengths


def _check_lengths(lengths, most, name):
    values = known_values(lengths)  # (traced lengths go unchecked, as any traced value)
    if values is not None and values.size and (values.min() < 0 or values.max() > most):
        raise RuntimeError(f"Expected {name} to have values from 0 to {most}, but got {values.tolist()}")


def _padded_targets(targets, target_lengths, batch, blank):
    """``(N, S)`` int64 labels, ``blank`` past each target's end, from padded ``(N, S)`` or
    concatenated 1-D targets."""
    targets = T.cast(targets, dtypes.int64)
    known = known_values(target_lengths)
    if targets.ndim == 2:
        if targets.shape[0] != batch:
            raise RuntimeError(f"ctc_loss: padded targets must be (batch_size={batch}, S), got size "
                               f"{list(targets.shape)}")
        _check_lengths(target_lengths, targets.shape[1], "target_lengths")
        padded = targets
    elif targets.ndim == 1:
        if known is not None and int(known.sum()) != targets.shape[0]:
            raise RuntimeError(f"ctc_loss: concatenated targets must hold sum(target_lengths) = "
                               f"{int(known.sum())} labels, got {targets.shape[0]}")
        _check_lengths(target_lengths, targets.shape[0], "target_lengths")
        # the longest target sets the padded width; traced lengths: every label (a bound)
        longest = int(known.max()) if known is not None and known.size else targets.shape[0]
        starts = T.sub(T.cumsum(target_lengths, 0), target_lengths)
        rows = T.add(T.unsqueeze(starts, 1), creation.arange(longest))
        last = max(targets.shape[0] - 1, 0)
        padded = T.reshape(T.index_select(targets, 0, T.reshape(T.clamp(rows, 0, last), (-1,))),
                           (batch, longest)) if targets.shape[0] else creation.zeros(batch, longest,
                                                                                     dtype=dtypes.int64)
    else:
        raise RuntimeError(f"ctc_loss: targets must be padded (N, S) or concatenated 1-D, got size "
                           f"{list(targets.shape)}")
    inside = T.lt(creation.arange(padded.shape[1]), T.unsqueeze(target_lengths, 1))
    return T.where(inside, padded, blank)


def _forward_algorithm(lp, labels, input_lengths, target_lengths, blank):
    """The log-likelihood ``(N,)`` of each target: the forward variables over the extended
    target, from before the first step through each sample's own last step."""
    steps, batch, _ = lp.shape
    width = 2 * labels.shape[1] + 1
    blanks = creation.full((batch, labels.shape[1]), blank, dtype=dtypes.int64)
    extended = T.cat([T.reshape(T.stack([blanks, labels], 2), (batch, width - 1)),
                      creation.full((batch, 1), blank, dtype=dtypes.int64)], 1)
    # each step's log-probability of each extended state, floored: a -inf would make NaNs
    emit = T.maximum(T.gather(lp, 2, T.expand(T.unsqueeze(extended, 0), (steps, batch, width))),
                     _UNREACHABLE)
    # a label may follow the label two states back (skipping the blank between) unless equal
    before = T.cat([creation.full((batch, 2), blank, dtype=dtypes.int64), extended[:, :-2]], 1)
    skip = T.where(T.logical_and(T.ne(extended, blank), T.ne(extended, before)), 0.0, _UNREACHABLE)
    skip = T.cast(skip, lp.dtype)
    # before the first step: all mass on the state before the first blank, which the first
    # blank (state 0, by staying) and the first label (state 1, by a step) both follow
    start = np.full((batch, width), _UNREACHABLE)
    start[:, 0] = 0.0
    alpha = creation.tensor(start, dtype=lp.dtype)
    floor = creation.full((batch, 1), _UNREACHABLE, dtype=lp.dtype)
    for t in range(steps):
        one_back = T.cat([floor, alpha[:, :-1]], 1)
        two_back = T.add(T.cat([floor, floor, alpha[:, :-2]], 1), skip)
        step = T.add(T.logsumexp(T.stack([alpha, one_back, two_back]), 0), emit[t])
        alpha = T.where(T.unsqueeze(T.gt(input_lengths, t), 1), step, alpha)
    # the target ends on its last label or on the blank after it (state 2S or 2S - 1)
    last_blank = T.mul(target_lengths, 2)
    ends_on_blank = T.gather(alpha, 1, T.unsqueeze(last_blank, 1))
    ends_on_label = T.gather(alpha, 1, T.unsqueeze(T.clamp(T.sub(last_blank, 1), min=0), 1))
    ends_on_label = T.where(T.unsqueeze(T.gt(target_lengths, 0), 1), ends_on_label, _UNREACHABLE)
    return T.logsumexp(T.cat([ends_on_blank, ends_on_label], 1), 1)

"""Packed sequences (tracegrad/nn/utils/rnn.py) and the recurrent layers on them
(tracegrad/nn/rnn.py) against PyTorch: packed data, batch sizes and indices, padding back,
the layers' packed outputs and final states (each sequence's own last step), gradients to the
packed data and the weights; errors; and compiled functions against eager (lengths known, or
traced: a graph break naming why)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.nn.utils import rnn as TR  # noqa: E402

import tracegrad as tg  # noqa: E402
from tracegrad.nn.utils import rnn as R  # noqa: E402

RNG = np.random.default_rng(11)
LENGTHS = [3, 6, 1, 4]  # (unsorted, no ties: torch's unstable sort orders ties its own way)


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol, atol=tol)


def _same_packed(ours, theirs):
    _close(ours.data, theirs.data)
    for name in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        a, b = getattr(ours, name), getattr(theirs, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.dtype == tg.int64 and a.tolist() == b.tolist(), name


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_and_pad_match_torch(batch_first, enforce_sorted):
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    x = RNG.standard_normal((4, 6, 2) if batch_first else (6, 4, 2))
    xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    po = R.pack_padded_sequence(xo, lengths, batch_first, enforce_sorted)
    pt = TR.pack_padded_sequence(xt, lengths, batch_first, enforce_sorted)
    _same_packed(po, pt)
    assert repr(po).startswith("PackedSequence(data=tensor(")
    for kwargs in ({}, {"batch_first": not batch_first, "padding_value": -2.0, "total_length": 8}):
        (ao, lo), (at, lt) = R.pad_packed_sequence(po, **kwargs), TR.pad_packed_sequence(pt, **kwargs)
        _close(ao, at)
        assert lo.dtype == tg.int64 and lo.tolist() == lt.tolist()
    cot = RNG.standard_normal(tuple(po.data.shape))
    po.data.backward(tg.tensor(cot))
    pt.data.backward(torch.tensor(cot))
    _close(xo.grad, xt.grad)


def test_lengths_as_tensors_and_the_sequence_helpers_match_torch():
    seqs = [RNG.standard_normal((n, 2)) for n in LENGTHS]
    ours = [tg.tensor(s, requires_grad=True) for s in seqs]
    theirs = [torch.tensor(s, requires_grad=True) for s in seqs]
    po, pt = R.pack_sequence(ours, enforce_sorted=False), TR.pack_sequence(theirs, enforce_sorted=False)
    _same_packed(po, pt)
    for a, b in zip(R.unpack_sequence(po), TR.unpack_sequence(pt)):
        _close(a, b)
    padded = RNG.standard_normal((6, 4, 2))
    for batch_first in (False, True):
        src = padded.transpose(1, 0, 2) if batch_first else padded
        got = R.unpad_sequence(tg.tensor(src), tg.tensor(LENGTHS), batch_first)
        want = TR.unpad_sequence(torch.tensor(src.copy()), torch.tensor(LENGTHS), batch_first)
        for a, b in zip(got, want):
            _close(a, b)
    # float lengths in a tensor are read as ints, as torch's
    by_tensor = R.pack_padded_sequence(tg.tensor(padded), tg.tensor([6.0, 4.0, 3.0, 1.0]))
    _same_packed(by_tensor, TR.pack_padded_sequence(torch.tensor(padded), torch.tensor([6.0, 4.0, 3.0, 1.0])))
    assert R.invert_permutation(tg.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert R.invert_permutation(None) is None


def test_packed_sequence_conversions():
    packed = R.pack_sequence([tg.tensor([1.0, 2.0]), tg.tensor([3.0])])
    assert packed.float() is packed and packed.cpu() is packed and not packed.is_cuda
    double = packed.double()
    assert double.data.dtype == tg.float64 and double.batch_sizes is packed.batch_sizes
    assert packed.to(tg.int64).data.dtype == tg.int64
    data, sizes, sorted_indices, unsorted_indices = packed  # (a namedtuple, as torch's)
    assert sizes.tolist() == [2, 1] and sorted_indices is None and unsorted_indices is None
    assert R.PackedSequence((data, sizes)).batch_sizes is sizes


@pytest.mark.parametrize("call, error, match", [
    (lambda x: R.pack_padded_sequence(x, [2, 3, 1, 1]), RuntimeError, "sorted in decreasing order"),
    (lambda x: R.pack_padded_sequence(x, [3, 2]), RuntimeError, r"got 2 \(batch_size=4\)"),
    (lambda x: R.pack_padded_sequence(x, [3, 2, 0, 0]), RuntimeError, "greater than 0"),
    (lambda x: R.pack_padded_sequence(x, [7, 2, 1, 1]), RuntimeError, "longer than the input's 6"),
    (lambda x: R.pack_padded_sequence(x, tg.tensor([[3, 2, 1, 1]])), RuntimeError, "1D"),
    (lambda x: R.pack_padded_sequence(x, ["3", 2, 1, 1]), RuntimeError, "list of ints"),
    (lambda x: R.pad_packed_sequence(R.pack_padded_sequence(x, [6, 2, 1, 1]), total_length=5), ValueError,
     "total_length=5 and max sequence length being 6"),
    (lambda x: tg.nn.GRU(2, 3)(R.pack_padded_sequence(x[..., None], [6, 2, 1, 1])), RuntimeError,
     "must have 2 dimensions"),
    (lambda x: tg.nn.LSTM(2, 3)(R.pack_padded_sequence(x, [6, 2, 1, 1]), (tg.zeros(1, 3, 3), tg.zeros(1, 3, 3))),
     RuntimeError, r"expected hidden state of shape \(1, 4, 3\)")])
def test_bad_input_names_what_was_expected(call, error, match):
    with pytest.raises(error, match=match):
        call(tg.zeros(6, 4, 2))


def _layer_pair(name, kwargs):
    tg.manual_seed(0)
    ours = getattr(tg.nn, name)(3, 5, dtype=tg.float64, **kwargs)
    theirs = getattr(torch.nn, name)(3, 5, dtype=torch.float64, **kwargs)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return ours, theirs


def _states(h):
    return h if isinstance(h, tuple) else (h,)


@pytest.mark.parametrize("name, kwargs", [
    ("LSTM", {}), ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}), ("GRU", {}),
    ("RNN", {"bidirectional": True}), ("RNN", {"nonlinearity": "relu", "bias": False})], ids=str)
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_recurrent_layers_on_packed_sequences_match_torch(name, kwargs, enforce_sorted):
    ours, theirs = _layer_pair(name, kwargs)
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    x = RNG.standard_normal((6, 4, 3))
    xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    po, pt = R.pack_padded_sequence(xo, lengths, False, enforce_sorted), \
        TR.pack_padded_sequence(xt, lengths, False, enforce_sorted)
    (oo, ho), (ot, ht) = ours(po), theirs(pt)
    assert isinstance(oo, R.PackedSequence)
    _same_packed(oo, ot)
    for a, b in zip(_states(ho), _states(ht)):
        _close(a, b)
    # gradients through the padded output and the final states to the input and the weights
    (ao, _), (at, _) = R.pad_packed_sequence(oo), TR.pad_packed_sequence(ot)
    (ao.square().sum() + sum((h * h).sum() for h in _states(ho))).backward()
    (at.square().sum() + sum((h * h).sum() for h in _states(ht))).backward()
    _close(xo.grad, xt.grad, 1e-9)
    for (n, p), q in zip(ours.named_parameters(), theirs.parameters()):
        _close(p.grad, q.grad, 1e-9)
    # initial states given, in the caller's batch order
    h0 = tuple(RNG.standard_normal(tuple(h.shape)) for h in _states(ht))
    given = (lambda L: tuple(L.tensor(h) for h in h0) if name == "LSTM" else L.tensor(h0[0]))
    (oo, ho), (ot, ht) = ours(po, given(tg)), theirs(pt, given(torch))
    _close(oo.data, ot.data)
    for a, b in zip(_states(ho), _states(ht)):
        _close(a, b)


def test_packed_training_step_compiles_to_eager_values():
    """Packing with lengths known at trace time (Python ints, a tensor made inside) is captured
    whole (fullgraph); the compiled step's loss and gradients equal eager's."""
    tg.manual_seed(0)
    lstm, head = tg.nn.LSTM(3, 4, num_layers=2, bidirectional=True), tg.nn.Linear(8, 2)
    params = list(lstm.parameters()) + list(head.parameters())

    def step(x, lengths_inside):
        lengths = tg.tensor(LENGTHS) if lengths_inside else LENGTHS
        packed = R.pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, (h, _) = lstm(packed)
        padded, _ = R.pad_packed_sequence(out, batch_first=True)
        loss = head(padded).square().mean() + h.square().sum()
        loss.backward()
        return loss

    x = tg.tensor(RNG.standard_normal((6, 4, 3)).astype(np.float32), requires_grad=True)
    eager = step(x, False)
    want = [p.grad.numpy().copy() for p in [x] + params]
    for inside in (False, True):
        for p in [x] + params:
            p.grad = None
        got = tg.compile(lambda x: step(x, inside), fullgraph=True)(x)
        np.testing.assert_allclose(got.item(), eager.item(), rtol=1e-5)
        for p, w in zip([x] + params, want):
            np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-4, atol=1e-6)


def test_traced_lengths_break_the_graph_naming_why():
    tg.manual_seed(0)
    gru = tg.nn.GRU(3, 4)

    def run(x, lengths):
        out, _ = gru(R.pack_padded_sequence(x, lengths, enforce_sorted=False))
        return R.pad_packed_sequence(out)[0].sum()

    x, lengths = tg.tensor(RNG.standard_normal((6, 4, 3)).astype(np.float32)), tg.tensor(LENGTHS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = tg.compile(run)(x, lengths)
    assert any("graph break" in str(w.message) and "values of 'lengths'" in str(w.message) for w in caught)
    np.testing.assert_allclose(got.item(), run(x, lengths).item(), rtol=1e-6)
    with pytest.raises(tg.compiler.CompileError, match="packed layout needs the values of 'lengths'"):
        tg.compile(run, fullgraph=True)(x, lengths)

"""``tg.nn.utils.rnn`` (PyTorch's ``torch.nn.utils.rnn``): variable-length sequences for the
recurrent layers. ``pad_sequence`` stacks them padded; a ``PackedSequence`` holds them packed
time step by time step, the longest first (``pack_padded_sequence``, ``pack_sequence``), which
``nn.RNN``/``LSTM``/``GRU`` take and return; ``pad_packed_sequence``, ``unpack_sequence`` and
``unpad_sequence`` undo it.

The packed layout (``batch_sizes``) is Python ints: the lengths must be known where the layout
is made (a list of ints, or a tensor with values; inside a compiled function a tensor made
there). Lengths that are traced values break the graph, naming why. Packing and unpacking are
one ``index_select`` with a constant index each, so gradients flow to the packed data.

>>> import tracegrad as tg
>>> from tracegrad.nn.utils.rnn import pack_sequence, pad_packed_sequence, pad_sequence
>>> pad_sequence([tg.ones(2), tg.ones(3)], batch_first=True)
tensor([[1., 1., 0.],
        [1., 1., 1.]])
>>> packed = pack_sequence([tg.tensor([1, 2, 3]), tg.tensor([4, 5]), tg.tensor([6])])
>>> packed  # doctest: +NORMALIZE_WHITESPACE
PackedSequence(data=tensor([1, 4, 6, 2, 5, 3]), batch_sizes=tensor([3, 2, 1]),
               sorted_indices=None, unsorted_indices=None)
>>> padded, lengths = pad_packed_sequence(packed, batch_first=True)
>>> padded
tensor([[1, 2, 3],
        [4, 5, 0],
        [6, 0, 0]])
>>> lengths
tensor([3, 2, 1])
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...core import creation, dtypes
from ..._api import functional as T
from ...core import tracing as trace
from ...core.tensor import Tensor
from .._known import known_values
from ..functional import pad

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence(namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices",
                                                    "unsorted_indices"])):
    """Sequences packed time step by time step: ``data`` ``(sum(lengths), *)`` holds step 0 of
    every sequence, then step 1 of those at least 2 long, ...; ``batch_sizes[t]`` how many
    sequences step t has (int64); ``sorted_indices`` the original batch index of each packed
    column (None when the batch was already sorted), ``unsorted_indices`` its inverse. Made by
    ``pack_padded_sequence`` or ``pack_sequence``, not by hand."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # (PyTorch's legacy form: data is the pair (data, batch_sizes))
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise TypeError("PackedSequence: expected data and batch_sizes, or a (data, batch_sizes) "
                                f"pair, got {type(data).__name__}")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """``data`` converted as ``Tensor.to``; ``self`` when it already is (the indices stay
        int64, ``batch_sizes`` too)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def float(self):
        return self.to(dtype=dtypes.float32)

    def double(self):
        return self.to(dtype=dtypes.float64)

    def long(self):
        return self.to(dtype=dtypes.int64)

    def int(self):
        return self.to(dtype=dtypes.int32)

    def cpu(self, *args, **kwargs):
        return self

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    """The inverse of a permutation (a 1-D int64 tensor): ``out[permutation[i]] = i``; None
    stays None.

    >>> import tracegrad as tg
    >>> from tracegrad.nn.utils.rnn import invert_permutation
    >>> invert_permutation(tg.tensor([2, 0, 1]))
    tensor([1, 2, 0])
    """
    if permutation is None:
        return None
    return T.argsort(permutation)


def _concrete_ints(values, what, name):
    """``values`` (a list of ints or a 1-D tensor) as Python ints: the packed layout is made
    of them. A tensor the trace does not know the values of breaks the graph."""
    if isinstance(values, Tensor):
        if values.ndim != 1:
            raise RuntimeError(f"{what}: '{name}' should be a 1D int64 tensor, but got a {values.ndim}D "
                               f"{values.dtype} tensor")
        known = known_values(values)
        if known is None:
            trace.graph_break(f"{what}: the packed layout needs the values of '{name}', which are not "
                              "known while tracing (an argument of the compiled function, or a tensor it "
                              "reads from outside); pack inside the function, with the lengths as Python "
                              "ints or a tensor made there")
        return [int(v) for v in known.tolist()]
    values = list(values)
    if not all(isinstance(v, (int, np.integer)) for v in values):
        raise RuntimeError(f"{what}: '{name}' should be a 1D tensor or a list of ints, got {values!r}")
    return [int(v) for v in values]


def _int64(values):
    return creation.tensor(np.asarray(values, dtype=np.int64).reshape(-1))


def _batch_sizes(lengths):
    """How many of the (sorted, decreasing) ``lengths`` reach each time step. Applied to batch
    sizes it gives the lengths back (each sequence's length: the steps whose batch reaches it)."""
    return [sum(1 for n in lengths if n > t) for t in range(lengths[0])]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack ``input`` ``(T, B, *)`` (or ``(B, T, *)``), padded sequences of ``lengths``, into a
    ``PackedSequence``. With ``enforce_sorted`` the lengths must be decreasing; otherwise the
    batch is sorted (longest first, stable) and ``sorted_indices`` records how.

    >>> import tracegrad as tg
    >>> from tracegrad.nn.utils.rnn import pack_padded_sequence
    >>> seq = tg.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    >>> pack_padded_sequence(seq, [2, 1, 3], batch_first=True, enforce_sorted=False)
    ... # doctest: +NORMALIZE_WHITESPACE
    PackedSequence(data=tensor([4, 1, 3, 5, 2, 6]), batch_sizes=tensor([3, 2, 1]),
                   sorted_indices=tensor([2, 0, 1]), unsorted_indices=tensor([1, 2, 0]))
    """
    lengths = _concrete_ints(lengths, "pack_padded_sequence", "lengths")
    if input.ndim < 2:
        raise RuntimeError(f"pack_padded_sequence: expected an input of at least 2 dims (time and batch), "
                           f"got size {list(input.shape)}")
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch})")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                               "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                               "pack_sequence to sidestep this requirement if you do not need ONNX "
                               "exportability.")
        order, sorted_indices = list(range(batch)), None
    else:
        order = sorted(range(batch), key=lambda i: -lengths[i])  # (stable: ties keep their order)
        sorted_indices = _int64(order)
    if min(lengths) <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in "
                           "'lengths' that is <= 0")
    if max(lengths) > steps:
        raise RuntimeError(f"pack_padded_sequence: a length of {max(lengths)} is longer than the input's "
                           f"{steps} time steps")
    sizes = _batch_sizes([lengths[i] for i in order])
    # row of (t, packed column b) in the input flattened over its first two dims
    rows = [order[b] * steps + t if batch_first else t * batch + order[b]
            for t, n in enumerate(sizes) for b in range(n)]
    flat = T.reshape(input, (steps * batch,) + tuple(input.shape[2:]))
    data = T.index_select(flat, 0, _int64(rows))
    return PackedSequence(data, _int64(sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """``(padded, lengths)`` from a ``PackedSequence``: ``padded`` ``(T, B, *)`` (or ``(B, T,
    *)``) with ``padding_value`` past each sequence's end, ``T`` the longest length (or
    ``total_length``); the batch in its original order (before any sorting)."""
    sizes = _concrete_ints(sequence.batch_sizes, "pad_packed_sequence", "batch_sizes")
    steps, batch = len(sizes), sizes[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in "
                             f"input, but got total_length={total_length} and max sequence length being "
                             f"{steps}")
        steps = total_length
    data = sequence.data
    # one extra row of padding: every padded position reads it
    filler = creation.full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype)
    extended = T.cat([data, filler], 0)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    pad_row = int(starts[-1])
    where = lambda t, b: int(starts[t]) + b if t < len(sizes) and b < sizes[t] else pad_row
    rows = [where(t, b) for b in range(batch) for t in range(steps)] if batch_first else \
        [where(t, b) for t in range(steps) for b in range(batch)]
    shape = ((batch, steps) if batch_first else (steps, batch)) + tuple(data.shape[1:])
    padded = T.reshape(T.index_select(extended, 0, _int64(rows)), shape)
    lengths = _int64(_batch_sizes(sizes))  # (batch == sizes[0])
    if sequence.unsorted_indices is not None:
        padded = T.index_select(padded, 0 if batch_first else 1, sequence.unsorted_indices)
        lengths = T.index_select(lengths, 0, sequence.unsorted_indices)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """``(longest, batch, *)`` (or ``(batch, longest, *)``) from sequences ``(length, *)``,
    each padded with ``padding_value`` on ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        sides = [0, 0] * (s.ndim - 1) + ([0, missing] if padding_side == "right" else [missing, 0])
        padded.append(pad(s, sides, value=padding_value) if missing else s)
    return T.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of ``padded_sequences`` ``(T, B, *)`` (or ``(B, T, *)``), each cut to its
    length. (PyTorch's also transposes a time-major input in place; this one leaves it be.)

    >>> import tracegrad as tg
    >>> from tracegrad.nn.utils.rnn import unpad_sequence
    >>> unpad_sequence(tg.tensor([[1, 2, 3], [4, 5, 0]]), tg.tensor([3, 2]), batch_first=True)
    [tensor([1, 2, 3]), tensor([4, 5])]
    """
    lengths = _concrete_ints(lengths, "unpad_sequence", "lengths")
    batch = padded_sequences.shape[0 if batch_first else 1]
    if len(lengths) != batch:
        raise ValueError(f"unpad_sequence: got {len(lengths)} lengths for a batch of {batch} sequences")
    if batch_first:
        return [padded_sequences[i, :n] for i, n in enumerate(lengths)]
    return [padded_sequences[:n, i] for i, n in enumerate(lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences ``(length, *)`` (decreasing lengths, unless ``enforce_sorted``
    is False): ``pad_sequence`` then ``pack_padded_sequence``."""
    return pack_padded_sequence(pad_sequence(sequences), [s.shape[0] for s in sequences],
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a ``PackedSequence`` holds, in their original order.

    >>> import tracegrad as tg
    >>> from tracegrad.nn.utils.rnn import pack_sequence, unpack_sequence
    >>> unpack_sequence(pack_sequence([tg.tensor([1, 2]), tg.tensor([3, 4, 5])], enforce_sorted=False))
    [tensor([1, 2]), tensor([3, 4, 5])]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

"""``tg.nn.utils.rnn`` (PyTorch's ``torch.nn.utils.rnn``): ``pad_sequence`` stacks sequences
of different lengths, padded, for the recurrent layers. (Packed sequences are not supported:
pad, and mask or select by length.)

>>> import tracegrad as tg
>>> from tracegrad.nn.utils.rnn import pad_sequence
>>> pad_sequence([tg.ones(2), tg.ones(3)], batch_first=True)
tensor([[1., 1., 0.],
        [1., 1., 1.]])
"""
from __future__ import annotations

from ... import functional as T
from ..functional import pad

__all__ = ["pad_sequence"]


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

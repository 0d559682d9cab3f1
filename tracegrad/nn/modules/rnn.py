"""Recurrent layers with PyTorch's parameters, gate orders, shapes and reprs: ``RNN``,
``LSTM``, ``GRU`` (stacked, bidirectional, ``batch_first``, dropout between layers) and the
cells ``RNNCell``, ``LSTMCell``, ``GRUCell``. The input projection of every time step is one
matrix product per layer and direction; the recurrence is a Python loop, which a compiled
function unrolls into one program (a fixed sequence length per program, as any shape).
The layers also take a ``PackedSequence`` (``tg.nn.utils.rnn``) and return one: each step then
runs on the sequences that reach it, and the final states are each sequence's own last.

>>> import tracegrad as tg
>>> _ = tg.manual_seed(0)
>>> lstm = tg.nn.LSTM(4, 8, num_layers=2, batch_first=True)
>>> out, (h, c) = lstm(tg.randn(3, 5, 4))
>>> out.shape, h.shape
(tracegrad.Size([3, 5, 8]), tracegrad.Size([2, 3, 8]))
"""
from __future__ import annotations

import math

from ...core import creation
from ..._api import functional as T
from .. import functional as F
from .. import init
from .module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, _concrete_ints
from ...core.device import check_device as _check_device

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_step(mode, gi, h, w_hh, b_hh):
    """One step of a plain RNN from ``gi`` (the input's projection, biased)."""
    pre = T.add(gi, F.linear(h, w_hh, b_hh))
    return T.tanh(pre) if mode == "RNN_TANH" else T.relu(pre)


def _lstm_step(gi, state, w_hh, b_hh):
    h, c = state
    i, f, g, o = T.chunk(T.add(gi, F.linear(h, w_hh, b_hh)), 4, -1)
    c = T.add(T.mul(T.sigmoid(f), c), T.mul(T.sigmoid(i), T.tanh(g)))
    return T.mul(T.sigmoid(o), T.tanh(c)), c


def _gru_step(gi, h, w_hh, b_hh):
    i_r, i_z, i_n = T.chunk(gi, 3, -1)
    h_r, h_z, h_n = T.chunk(F.linear(h, w_hh, b_hh), 3, -1)
    r = T.sigmoid(T.add(i_r, h_r))
    z = T.sigmoid(T.add(i_z, h_z))
    n = T.tanh(T.add(i_n, T.mul(r, h_n)))
    return T.add(T.mul(T.sub(1.0, z), n), T.mul(z, h))


def _step(mode, gi, state, w_hh, b_hh):
    if mode == "LSTM":
        return _lstm_step(gi, state, w_hh, b_hh)
    if mode == "GRU":
        return _gru_step(gi, state, w_hh, b_hh)
    return _rnn_step(mode, gi, state, w_hh, b_hh)


def _rows(state, start, stop):
    """Rows ``start:stop`` (sequences of the batch) of h, or of both h and c."""
    return tuple(s[start:stop] for s in state) if isinstance(state, tuple) else state[start:stop]


def _joined(*states):
    """The states (h, or (h, c)) of consecutive groups of sequences, as one."""
    if len(states) == 1:
        return states[0]
    if isinstance(states[0], tuple):
        return tuple(T.cat(parts, 0) for parts in zip(*states))
    return T.cat(states, 0)


def _run_direction(mode, inputs, state, w_hh, b_hh, w_hr, reverse):
    """One layer and direction over the time steps' projected inputs (each ``(sequences at
    that step, gates)``) from ``state`` (h, or (h, c) for LSTM, of the whole batch): the
    outputs of every step and the final state, each sequence's at its own last step.

    A packed batch (sequences sorted longest first) shrinks over time: going forward, the
    sequences that end leave it with their final state; in reverse they join it as their
    first step comes, with their initial state. Padded input has the whole batch at every step,
    and then nothing is sliced."""
    order = range(len(inputs) - 1, -1, -1) if reverse else range(len(inputs))
    outputs, ended, current = [None] * len(inputs), [], state
    for t in order:
        n, have = inputs[t].shape[0], _batch_of(current)
        if n < have:  # (in reverse only before the first step: the batch then grows)
            if not reverse:
                ended.append(_rows(current, n, have))
            current = _rows(current, 0, n)
        elif n > have:
            current = _joined(current, _rows(state, have, n))
        current = _step(mode, inputs[t], current, w_hh, b_hh)
        if w_hr is not None:  # (LSTM with proj_size: h = (o * tanh(c)) W_hr^T)
            current = (F.linear(current[0], w_hr), current[1])
        outputs[t] = current[0] if mode == "LSTM" else current
    return outputs, _joined(current, *reversed(ended))


def _batch_of(state):
    return (state[0] if isinstance(state, tuple) else state).shape[0]


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters ``weight_ih_l{k}[_reverse]``, ``weight_hh_l{k}``,
    ``bias_ih_l{k}``, ``bias_hh_l{k}``, all initialised U(-1/sqrt(hidden), 1/sqrt(hidden)).
    ``mode`` is "LSTM", "GRU", "RNN_TANH" or "RNN_RELU" (PyTorch's; the subclasses pass it)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        self.__dict__["mode"] = mode
        super().__init__()
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size and self.mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability "
                             "of an element being zeroed")
        if hidden_size <= 0 or num_layers <= 0:
            raise ValueError(f"hidden_size and num_layers must be positive, got {hidden_size} and {num_layers}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gates = _GATES[self.mode] * hidden_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size or hidden_size  # (the size of h: projected, with proj_size)
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                width = input_size if layer == 0 else real_hidden * directions
                shapes = [("weight_ih", (gates, width)), ("weight_hh", (gates, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(creation.empty(*shape, dtype=dtype)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size)
        for name in self._flat_weights_names:
            init.uniform_(getattr(self, name), -bound, bound)

    def _weights(self, layer, d):
        suffix = f"_l{layer}" + ("_reverse" if d else "")
        get = lambda n: getattr(self, n + suffix) if self.bias or n.startswith("weight") else None
        w_hr = getattr(self, "weight_hr" + suffix) if self.proj_size else None
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), w_hr

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        if packed:  # (batch_first does not apply: the packed data is (sum of lengths, input_size))
            x, _, sorted_indices, unsorted_indices = input
            sizes = _concrete_ints(input.batch_sizes, type(self).__name__, "batch_sizes")
            if x.ndim != 2:
                raise RuntimeError(f"{type(self).__name__}: packed input data must have 2 dimensions, "
                                   f"got {x.ndim}")
            unbatched = False
        else:
            if input.ndim not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D instead")
            unbatched = input.ndim == 2
            x = T.unsqueeze(input, 1) if unbatched else (T.transpose(input, 0, 1) if self.batch_first else input)
            sizes = [x.shape[1]] * x.shape[0]
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]}")
        directions = 2 if self.bidirectional else 1
        states = self._initial_states(hx, sizes[0], x.dtype, directions, unbatched)
        if packed and sorted_indices is not None:  # (hx is in the caller's batch order)
            states = [T.index_select(s, 1, sorted_indices) for s in states]
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                k = layer * directions + d
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
                # every step's input projection at once: one product of all (step, sequence) rows
                projected = F.linear(x, w_ih, b_ih)
                steps = T.split(projected, sizes, 0) if packed else T.unbind(projected, 0)
                state = tuple(s[k] for s in states) if self.mode == "LSTM" else states[0][k]
                outputs, final = _run_direction(self.mode, steps, state, w_hh, b_hh, w_hr, reverse=d == 1)
                outs.append(T.cat(outputs, 0) if packed else T.stack(outputs))
                finals.append(final)
            x = outs[0] if directions == 1 else T.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout)
        if packed:
            out = PackedSequence(x, input.batch_sizes, sorted_indices, unsorted_indices)
        else:
            out = T.squeeze(x, 1) if unbatched else (T.transpose(x, 0, 1) if self.batch_first else x)
        hidden = [T.stack([f[i] for f in finals]) for i in (0, 1)] if self.mode == "LSTM" else [T.stack(finals)]
        if packed and unsorted_indices is not None:
            hidden = [T.index_select(h, 1, unsorted_indices) for h in hidden]
        if unbatched:
            hidden = [T.squeeze(h, 1) for h in hidden]
        return out, (tuple(hidden) if self.mode == "LSTM" else hidden[0])

    def _initial_states(self, hx, batch, dtype, directions, unbatched):
        """[h0] (or [h0, c0] for LSTM), each ``(layers * directions, batch, hidden)`` (h0's last
        size ``proj_size`` when there is one)."""
        shape = (self.num_layers * directions, batch, self.hidden_size)
        h_shape = shape[:2] + (self.proj_size or self.hidden_size,)
        if hx is None:
            h0, c0 = creation.zeros(*h_shape, dtype=dtype), creation.zeros(*shape, dtype=dtype)
            return [h0, c0] if self.mode == "LSTM" else [h0]
        given = list(hx) if self.mode == "LSTM" else [hx]
        if self.mode == "LSTM" and len(given) != 2:
            raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0)")
        states = [T.unsqueeze(h, 1) if unbatched else h for h in given]
        for s, want in zip(states, (h_shape, shape)):
            if tuple(s.shape) != want:
                raise RuntimeError(f"{type(self).__name__}: expected hidden state of shape {want} "
                                   f"(unbatched: without the batch dim), got {tuple(s.shape)}")
        return states

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.__dict__["nonlinearity"] = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)


class LSTM(RNNBase):
    """LSTM with PyTorch's gate order (input, forget, cell, output); returns
    ``(output, (h_n, c_n))``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """GRU with PyTorch's gate order (reset, update, new) and ``n = tanh(W_in x + b_in +
    r * (W_hn h + b_hn))``."""

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    """What the cells share; ``num_chunks`` is the number of gates (PyTorch's signature: the
    subclasses pass it, and their ``mode``)."""

    mode = None

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        if self.mode is not None and num_chunks != _GATES[self.mode]:
            raise ValueError(f"{type(self).__name__} has {_GATES[self.mode]} gates, got num_chunks={num_chunks}")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(creation.empty(gates, input_size, dtype=dtype))
        self.weight_hh = Parameter(creation.empty(gates, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(creation.empty(gates, dtype=dtype))
            self.bias_hh = Parameter(creation.empty(gates, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        bound = 1.0 / math.sqrt(hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def forward(self, input, hx=None):
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        unbatched = input.ndim == 1
        x = T.unsqueeze(input, 0) if unbatched else input
        shape = (x.shape[0], self.hidden_size)
        if hx is None:
            zeros = creation.zeros(*shape, dtype=x.dtype)
            hx = (zeros, zeros) if self.mode == "LSTM" else zeros
        elif unbatched:
            hx = tuple(T.unsqueeze(h, 0) for h in hx) if self.mode == "LSTM" else T.unsqueeze(hx, 0)
        out = _step(self.mode, F.linear(x, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh)
        if unbatched:
            out = tuple(T.squeeze(o, 0) for o in out) if self.mode == "LSTM" else T.squeeze(out, 0)
        return out

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        return s + (f", nonlinearity={nonlinearity}" if nonlinearity != "tanh" else "")


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.__dict__["mode"] = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        self.__dict__["nonlinearity"] = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)


class LSTMCell(RNNCellBase):
    mode = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)


class GRUCell(RNNCellBase):
    mode = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

"""``AdaptiveLogSoftmaxWithLoss`` (PyTorch's, for large vocabularies): frequent classes (below
``cutoffs[0]``) are scored by a head layer together with one entry per cluster of rarer
classes; a class of cluster ``i`` has log-probability ``head[cluster i] + log_softmax(tail_i)``,
the tails being low-rank projections (``in_features / div_value**(i+1)`` wide).

PyTorch picks the rows of each cluster with ``nonzero`` (data-dependent shapes); here every
tail scores every row and masks pick what counts, so the loss traces and compiles, at the cost
of the tails' work on all rows. Values and gradients are PyTorch's; a cluster no target of the
batch is in is skipped eagerly, as PyTorch skips it (its tail gets no ``.grad``), while a
compiled step gives that tail zero gradients.

>>> import tracegrad as tg
>>> asm = tg.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4])
>>> out = asm(tg.randn(3, 8), tg.tensor([1, 5, 9]))
>>> tuple(out.output.shape), tuple(out.loss.shape)
((3,), ())
"""
from __future__ import annotations

import itertools
from collections import namedtuple

from ...core import dtypes as _dt
from ..._api import functional as T
from ...core import tracing as trace
from .. import functional as F
from .container import ModuleList, Sequential
from .basic import Linear
from .module import Module
from ...core.device import check_device as _check_device

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, dtype=dtype),
                                        Linear(hsz, osz, bias=False, dtype=dtype)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        """``(output, loss)``: each row's log-probability of its target, and their negative
        mean."""
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        self._check_targets(target)
        # every gather reads a valid index (clamped); a target out of range (unchecked when
        # traced) gives NaN instead of a number
        eager = trace.current_tracer() is None
        head_index = target.clamp(0, self.shortlist_size - 1)
        output = input.new_zeros(target.shape[0])
        for i, (low, high) in enumerate(itertools.pairwise(self.cutoffs)):
            in_cluster = (target >= low) & (target < high)
            if eager and not bool(in_cluster.any()):
                continue  # (PyTorch skips it: its tail's parameters get no gradient, not a zero one)
            head_index = T.where(in_cluster, self.shortlist_size + i, head_index)
            local = (target - low).clamp(0, high - low - 1)  # (rows of other clusters: any valid index)
            logprob = F.log_softmax(self.tail[i](input), dim=1).gather(1, local.unsqueeze(1)).squeeze(1)
            output = output + T.where(in_cluster, logprob, 0.0)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        output = T.where((target >= 0) & (target < self.n_classes), output, float("nan"))
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _check_targets(self, target):
        if trace.current_tracer() is not None:
            return  # (a compiled step cannot read them: out-of-range targets give NaN there)
        lo, hi = int(target.min()), int(target.max())
        if lo < 0 or hi > self.n_classes - 1:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{lo}, {hi}] were found. ")

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return T.cat(parts, 1)

    def log_prob(self, input):
        """The log-probabilities of all ``n_classes`` classes, one row per input row."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row (the head's shortlist class when it wins there:
        a tail class cannot beat it, its probability being at most its cluster's)."""
        return T.argmax(self.log_prob(input), 1).to(_dt.int64)

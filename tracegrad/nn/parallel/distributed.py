"""``DistributedDataParallel``: the same model on every rank, each rank a slice of the batch,
gradients averaged across ranks during backward, so that every rank takes the same optimizer
step as one process training on the whole batch would.

How (PyTorch's design): at construction rank 0's parameters and buffers are broadcast; the
parameters that require grad are grouped into buckets (reverse registration order, about the
order backward produces their gradients; the first bucket ~1 MB, the rest ~25 MB, one dtype
each); a hook after each parameter's gradient is accumulated counts its bucket down, and a
bucket whose gradients are all in is flattened, all-reduced (ReduceOp.AVG) and written back.
Buckets are reduced strictly in order, so every rank issues the same collectives in the same
order whatever order its hooks fire in.

Inside ``tg.compile`` the same hooks run on the traced backward, so the all-reduces (one a
bucket) are recorded in the program and run in its native call.
"""
from __future__ import annotations

import contextlib

from ...autograd.grad_mode import no_grad
from ...autograd.graph import AccumulateGrad
from ...core import pytree
from ...core.tensor import Tensor
from ..modules.module import Module

DEFAULT_BUCKET_MB = 25.0
FIRST_BUCKET_BYTES = 1024 * 1024  # (PyTorch's first bucket: the last layers' gradients go out early)


def _dist():
    from ... import distributed  # (tracegrad.distributed sits above nn: imported when a DDP is made)

    return distributed


def bucket_params(params, cap_bytes, first_cap_bytes=FIRST_BUCKET_BYTES):
    """Indices of ``params`` grouped into buckets: reverse order, one dtype a bucket, a bucket
    closed when it would pass its cap (the first one's is ``first_cap_bytes``)."""
    buckets, open_by_dtype = [], {}
    for i in reversed(range(len(params))):
        p = params[i]
        nbytes = p.numel() * p.element_size()
        b = open_by_dtype.get(p.dtype)
        cap = first_cap_bytes if not buckets or b is buckets[0] else cap_bytes
        if b is None or (b["bytes"] and b["bytes"] + nbytes > cap):
            b = {"idx": [], "bytes": 0}
            buckets.append(b)
            open_by_dtype[p.dtype] = b
        b["idx"].append(i)
        b["bytes"] += nbytes
    return [b["idx"] for b in buckets]


class _Reducer:
    """The per-iteration state of gradient reduction (a plain object, not Module state: changing
    it must not invalidate compiled programs that read the module)."""

    def __init__(self, ddp, params, buckets):
        self.ddp, self.params, self.buckets = ddp, params, buckets
        self.bucket_of = {}
        for b, idx in enumerate(buckets):
            for i in idx:
                self.bucket_of[id(params[i])] = b
        self.reset()

    def reset(self):
        self.pending = [len(idx) for idx in self.buckets]
        self.next = 0
        self.started = False

    def mark_ready(self, p):
        if not self.ddp.require_backward_grad_sync:
            return  # no_sync(): gradients accumulate locally until a synchronised backward
        b = self.bucket_of[id(p)]
        if self.pending[b] == 0:
            raise RuntimeError("DistributedDataParallel: a parameter's gradient was ready twice in one backward "
                               "(a second backward through the same graph?); call backward once per forward")
        self.started = True
        self.pending[b] -= 1
        while self.next < len(self.buckets) and self.pending[self.next] == 0:
            self._reduce(self.buckets[self.next])
            self.next += 1
        if self.next == len(self.buckets):
            self.reset()

    def mark_unused(self, used_ids):
        """find_unused_parameters: the parameters the forward's output does not reach count as
        ready now (their gradient, zero if None, takes part in the average)."""
        for p in self.params:
            if id(p) not in used_ids:
                self.mark_ready(p)

    def _reduce(self, idx):
        dist = _dist()
        group = self.ddp.process_group
        with no_grad():
            grads = []
            for i in idx:
                p = self.params[i]
                if p.grad is None:  # (an unused parameter under find_unused_parameters)
                    p.grad = p.detach() * 0
                grads.append(p.grad)
            flat = grads[0].reshape(-1).clone() if len(grads) == 1 else _cat(grads)
            dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=group)
            offset = 0
            for g in grads:
                n = g.numel()
                g.copy_(flat[offset:offset + n].reshape(g.shape))
                offset += n


def _cat(grads):
    from ... import cat

    return cat([g.reshape(-1) for g in grads])


class DistributedDataParallel(Module):
    """Data-parallel training of ``module`` across the ranks of ``process_group`` (the default
    group when None): rank 0's parameters and buffers are broadcast at construction, and
    gradients are averaged across ranks as backward produces them. Each rank feeds its own slice
    of the batch; after ``backward()`` every rank holds the gradient of the whole batch's mean
    loss, so identical optimizer steps keep the replicas identical.

    ``broadcast_buffers`` re-sends rank 0's buffers (BatchNorm statistics) before each forward;
    ``no_sync()`` skips the averaging (gradient accumulation); ``module`` is the wrapped model.
    ``device_ids`` and ``output_device`` are accepted for PyTorch's signature (CPU only).

    Example (each of N ranks, after ``dist.init_process_group("mpi")``)::

        model = tg.nn.parallel.DistributedDataParallel(tg.nn.Linear(4, 1))
        opt = tg.optim.SGD(model.parameters(), lr=0.1)
        loss = tg.nn.functional.mse_loss(model(x_local), y_local)
        loss.backward()          # gradients now averaged over ranks
        opt.step()
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, **kwargs):
        super().__init__()
        if kwargs:
            raise TypeError(f"DistributedDataParallel: unsupported arguments {sorted(kwargs)}")
        dist = _dist()
        self.module = module
        self.process_group = dist.process_group.resolve(process_group)
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.dim = dim
        self.bucket_bytes_cap = int((DEFAULT_BUCKET_MB if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        params = [p for p in module.parameters() if p.requires_grad]
        self._check_same_model(module)
        self._sync_state(list(module.parameters()) + list(module.buffers()))
        # (the first bucket's cap is PyTorch's 1 MB, or the cap given when that is smaller)
        buckets = bucket_params(params, self.bucket_bytes_cap, min(FIRST_BUCKET_BYTES, self.bucket_bytes_cap))
        reducer = _Reducer(self, params, buckets)
        object.__setattr__(self, "_reducer", reducer)  # (Module state it is not: see _Reducer)
        self._grad_hooks = [p.register_post_accumulate_grad_hook(reducer.mark_ready) for p in params]

    def _check_same_model(self, module):
        from ...distributed import _mpi

        desc = tuple((name, tuple(p.shape), str(p.dtype)) for name, p in module.named_parameters())
        _mpi.agree(_mpi.comm(self.process_group.id), "DistributedDataParallel", desc)

    def _sync_state(self, tensors):
        """Broadcast rank 0's values of ``tensors``: one collective a dtype (flattened)."""
        dist = _dist()
        src = dist.get_global_rank(self.process_group, 0)
        by_dtype = {}
        for t in tensors:
            if t is not None and t.numel():
                by_dtype.setdefault(t.dtype, []).append(t)
        with no_grad():
            for dtype in sorted(by_dtype, key=str):
                ts = by_dtype[dtype]
                flat = _cat(ts) if len(ts) > 1 else ts[0].reshape(-1).clone()
                dist.broadcast(flat, src=src, group=self.process_group)
                offset = 0
                for t in ts:
                    n = t.numel()
                    t.copy_(flat[offset:offset + n].reshape(t.shape))
                    offset += n

    def forward(self, *inputs, **kwargs):
        reducer = self._reducer
        if reducer.started and self.require_backward_grad_sync:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. "
                "This error indicates that your module has parameters that were not used in producing loss. "
                "You can enable unused parameter detection by passing the keyword argument "
                "`find_unused_parameters=True` to `tracegrad.nn.parallel.DistributedDataParallel`.")
        reducer.reset()
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = [b for b in self.module.buffers() if b is not None]
            if buffers:
                self._sync_state(buffers)
        out = self.module(*inputs, **kwargs)
        if self.find_unused_parameters and self.require_backward_grad_sync and self.training:
            reducer.mark_unused(_reached_leaves(out))
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Within it, backward accumulates gradients locally without averaging them; the first
        backward after it averages the accumulated gradients.

        >>> # with ddp.no_sync():
        >>> #     ddp(x1).sum().backward()   # local only
        >>> # ddp(x2).sum().backward()       # averages the sum of both
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _reached_leaves(out):
    """ids of the leaves the autograd graph of ``out``'s tensors reaches."""
    seen, found = set(), set()
    stack = [t.grad_fn for t in pytree.flatten(out)[0] if isinstance(t, Tensor) and t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            found.add(id(node.variable))
            continue
        stack.extend(fn for fn, _ in node.next_functions)
    return found

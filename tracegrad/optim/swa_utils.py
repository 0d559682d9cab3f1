"""Weight averaging (PyTorch's ``torch.optim.swa_utils``): ``AveragedModel`` keeps a running
average of a model's parameters (SWA's equal-weight mean by default, or an EMA through
``get_ema_multi_avg_fn``), ``SWALR`` anneals the learning rate to a constant SWA rate, and
``update_bn`` recomputes batch-norm statistics for the averaged weights.

>>> import tracegrad as tg
>>> from tracegrad.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
>>> model = tg.nn.Linear(2, 1)
>>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
>>> ema.update_parameters(model)
>>> int(ema.n_averaged)
1
"""
from __future__ import annotations

import copy
import itertools
import math

from ..core import creation
from ..core import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler
from ..core.device import check_device as _check_device

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """In place, over lists of tensors: ``ema = decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    def ema_update(ema_params, current_params, num_averaged):
        with no_grad():
            for e, c in zip(ema_params, current_params):
                if e.dtype.is_floating_point:
                    e.lerp_(c, 1 - decay)
                else:
                    e.copy_(e * decay + c * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """In place, over lists of tensors: the running mean of the ``num_averaged + 1`` values."""
    def swa_update(averaged_params, current_params, num_averaged):
        with no_grad():
            for a, c in zip(averaged_params, current_params):
                if a.dtype.is_floating_point:
                    a.lerp_(c, 1 / (float(num_averaged) + 1))
                else:
                    a.copy_(a + (c - a) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """One tensor: returns ``decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """One tensor: returns the running mean after one more value."""
    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers, with ``use_buffers``) are averaged by
    ``update_parameters(model)``: the first call copies them, later calls apply ``avg_fn``
    (per tensor, returning the new value) or ``multi_avg_fn`` (lists, in place); the default
    is SWA's equal-weight mean. Without ``use_buffers`` the buffers are copied from ``model``.
    ``n_averaged`` (an int64 buffer) counts the models averaged."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        self.register_buffer("n_averaged", creation.tensor(0, dtype=_dt.int64))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.parameters()), list(model.parameters())
        mine = [p.detach() for p in mine]
        theirs = [p.detach() for p in theirs]
        with no_grad():
            if bool(self.n_averaged == 0):
                for a, c in zip(mine, theirs):
                    a.copy_(c)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(mine, theirs, self.n_averaged)
            else:  # (PyTorch's CPU path: one tensor at a time, SWA's mean by default)
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for a, c in zip(mine, theirs):
                    a.copy_(avg_fn(a, c, self.n_averaged))
            if not self.use_buffers:
                for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                    b_avg.detach().copy_(b_model.detach())
            self.n_averaged.add_(1)


def update_bn(loader, model, device=None):
    """One pass over ``loader`` (batches, or tuples whose first element is the batch) in
    training mode with cumulative batch-norm averages, so the running statistics match the
    (averaged) weights."""
    _check_device(device)  # (a device other than the CPU raises: core/device.py)
    from ..nn.modules.batchnorm import _BatchNorm

    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate from its value to ``swa_lr`` over ``anneal_epochs``
    steps (``"cos"`` or ``"linear"``), then holds it there."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        groups = optimizer.param_groups
        swa_lrs = list(swa_lr) if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(groups)
        if len(swa_lrs) != len(groups):
            raise ValueError(f"swa_lr must have the same length as optimizer.param_groups: "
                             f"swa_lr has {len(swa_lrs)}, optimizer.param_groups has {len(groups)}")
        for lr, group in zip(swa_lrs, groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self._anneal_strategy = anneal_strategy
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t):
        return t if self._anneal_strategy == "linear" else (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs)]

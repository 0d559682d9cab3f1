"""Every public callable that tracegrad shares with PyTorch takes PyTorch's parameters, in its
order (so positional calls written for torch mean the same here)."""
from __future__ import annotations

import inspect

import pytest

pytest.importorskip("torch")
import torch.func
import torch.nn.attention
import torch.nn.attention.flex_attention
import torch.nn.utils.fusion
import torch.nn.utils.prune
import torch.optim.swa_utils
import torch.utils.checkpoint

import tracegrad as tg

NAMESPACES = [("nn", torch.nn, tg.nn), ("nn.functional", torch.nn.functional, tg.nn.functional),
              ("optim", torch.optim, tg.optim), ("lr_scheduler", torch.optim.lr_scheduler, tg.optim.lr_scheduler),
              ("linalg", torch.linalg, tg.linalg), ("special", torch.special, tg.special),
              ("distributions", torch.distributions, tg.distributions), ("func", torch.func, tg.func),
              ("nn.init", torch.nn.init, tg.nn.init), ("nn.utils", torch.nn.utils, tg.nn.utils),
              ("torch", torch, tg), ("utils.checkpoint", torch.utils.checkpoint, tg.utils.checkpoint),
              ("random", torch.random, tg.random), ("autograd", torch.autograd, tg.autograd),
              ("optim.swa_utils", torch.optim.swa_utils, tg.optim.swa_utils),
              ("nn.utils.prune", torch.nn.utils.prune, tg.nn.utils.prune),
              ("nn.utils.fusion", torch.nn.utils.fusion, tg.nn.utils.fusion),
              ("nn.attention", torch.nn.attention, tg.nn.attention), ("testing", torch.testing, tg.testing),
              ("nn.attention.flex_attention", torch.nn.attention.flex_attention, tg.nn.attention.flex_attention)]


# where the contract (../shared/API.md) fixes another signature: the name, and why
DIFFERENT_BY_CONTRACT = {
    "torch.compile": "API.md: tg.compile(fn=None, *, backend, fullgraph, dynamic, options); its other "
                     "parameters are keyword-only too, so positional calls mean the same",
}


def _parameters(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    return [p for p in params if p not in ("args", "kwargs")]


def test_shared_callables_take_torchs_parameters():
    mismatches = []
    for label, theirs_ns, ours_ns in NAMESPACES:
        for name in dir(ours_ns):
            theirs, ours = getattr(theirs_ns, name, None), getattr(ours_ns, name)
            if name.startswith("_") or not callable(theirs) or not callable(ours):
                continue
            want, got = _parameters(theirs), _parameters(ours)
            if f"{label}.{name}" in DIFFERENT_BY_CONTRACT:
                continue
            if want and got is not None and want != got:
                mismatches.append(f"{label}.{name}: torch {want}, tracegrad {got}")
    assert not mismatches, "\n".join(mismatches)

"""``tg.nn.utils.stateless.functional_call`` (PyTorch's older home of ``torch.func.functional_call``,
deprecated there): the module run with the given parameters and buffers in place of its own.

>>> import tracegrad as tg
>>> layer = tg.nn.Linear(1, 1)
>>> out = tg.nn.utils.stateless.functional_call(layer, {"weight": tg.ones(1, 1), "bias": tg.zeros(1)},
...                                             (tg.tensor([[2.0]]),))
>>> out.tolist()
[[2.0]]
"""
from __future__ import annotations

import warnings

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    from ...func import functional_call as _functional_call

    warnings.warn("This API is deprecated as of PyTorch 2.0 and will be removed in a future version of "
                  "PyTorch. Please use torch.func.functional_call instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)

"""``GradScaler``: loss scaling for mixed precision, as ``torch.amp.GradScaler``.

The loss is multiplied by ``scale`` before ``backward`` so that small float16 gradients do not
flush to zero; ``step`` divides the gradients by it again and skips the optimizer's step when any
of them is inf or NaN; ``update`` halves the scale after such a step and doubles it after
``growth_interval`` steps without one.

>>> import tracegrad as tg
>>> w = tg.ones(2, requires_grad=True)
>>> opt = tg.optim.SGD([w], lr=0.1)
>>> scaler = tg.amp.GradScaler("cpu", init_scale=1024.0)
>>> scaler.scale((w * 3).sum()).backward()
>>> w.grad                                    # scaled
tensor([3072., 3072.])
>>> _ = scaler.step(opt); scaler.update()
>>> w                                         # stepped with the unscaled gradient 3
tensor([0.7000, 0.7000], requires_grad=True)
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..core.dtypes import widen_bfloat16


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if enabled and device != "cpu":
            warnings.warn(f"torch.amp.GradScaler is enabled, but {device} is not available (tracegrad runs "
                          "on the CPU). Disabling.", UserWarning, stacklevel=2)
            enabled = False
        if growth_factor <= 1.0:
            raise ValueError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise ValueError("The backoff factor must be < 1.0.")
        self._device, self._enabled = device, enabled
        self._scale, self._growth_factor, self._backoff_factor = float(init_scale), growth_factor, backoff_factor
        self._growth_interval, self._growth_tracker = growth_interval, 0
        self._per_optimizer = {}  # id(optimizer) -> "unscaled" / "stepped", and its found inf

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale, in place, and note whether any is inf
        or NaN; once per optimizer between updates."""
        if not self._enabled:
            return
        state = self._per_optimizer.get(id(optimizer))
        if state is not None and state[0] == "unscaled":
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state is not None and state[0] == "stepped":
            raise RuntimeError("unscale_() is being called after step().")
        from ..autograd import grad_mode

        inverse, found_inf = 1.0 / self._scale, False
        with grad_mode.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.mul_(inverse)
                        values = widen_bfloat16([p.grad.detach().numpy()])[0]  # (no bfloat16 isfinite)
                        found_inf = found_inf or not bool(np.isfinite(values).all())
        self._per_optimizer[id(optimizer)] = ("unscaled", found_inf)

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done), then ``optimizer.step(...)`` unless a gradient was inf or NaN;
        returns what step returned, or None when it was skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._per_optimizer.get(id(optimizer))
        if state is not None and state[0] == "stepped":
            raise RuntimeError("step() has already been called since the last update().")
        if state is None:
            self.unscale_(optimizer)
            state = self._per_optimizer[id(optimizer)]
        self._per_optimizer[id(optimizer)] = ("stepped", state[1])
        return None if state[1] else optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """The next scale: ``new_scale`` if given; else halved (backoff) when any optimizer saw an
        inf or NaN since the last update, grown after ``growth_interval`` clean steps."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif any(found for _, found in self._per_optimizer.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        elif self._per_optimizer:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                grown = self._scale * self._growth_factor
                self._scale = grown if math.isfinite(grown) else self._scale
                self._growth_tracker = 0
        self._per_optimizer = {}

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor, self._backoff_factor = state_dict["growth_factor"], state_dict["backoff_factor"]
        self._growth_interval, self._growth_tracker = state_dict["growth_interval"], state_dict["_growth_tracker"]

"""Random state (PyTorch's ``torch.random`` and ``torch.Generator``): one global generator,
seeded by ``tg.manual_seed``, from which every random function draws (and from which a compiled
program draws the seeds of its random ops at each call); ``Generator`` objects for separate
streams (``generator=`` of the random functions); state save/restore and ``fork_rng``.

>>> import tracegrad as tg
>>> state = tg.get_rng_state()
>>> a = tg.rand(2)
>>> tg.set_rng_state(state)
>>> bool((tg.rand(2) == a).all())
True
>>> g = tg.Generator().manual_seed(3)
>>> g.initial_seed()
3
"""
from __future__ import annotations

import contextlib

import numpy as np

from .device import CPU
from .device import device as _device
from .dtypes import int64

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "fork_rng"]

_DEFAULT_SEED = 67280421310721  # PyTorch's initial seed of a new Generator
_WORDS = 4  # 32-bit words per 128-bit number of NumPy's PCG64 state


class Generator:
    """A random number stream (NumPy's PCG64 underneath): ``manual_seed(n)`` (returns the
    generator), ``seed()`` (a fresh non-deterministic seed, returned), ``initial_seed()``,
    ``get_state()`` / ``set_state(state)`` (an int64 tensor to keep and give back)."""

    def __init__(self, device="cpu"):
        if _device(device).type != "cpu":  # (PyTorch's CPU build raises a RuntimeError here too)
            raise RuntimeError(f"tracegrad Generators are CPU generators; got device={device!r}")
        self.device = CPU
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        seed = int(seed)
        if not -2**63 <= seed < 2**64:
            raise RuntimeError(f"Overflow when unpacking long: seed {seed} does not fit in 64 bits")
        self.seed_value = seed % 2**64
        self.rng = np.random.default_rng(self.seed_value)
        return self

    def seed(self):
        return self.manual_seed(int(np.random.SeedSequence().entropy % 2**63)).seed_value

    def initial_seed(self):
        return self.seed_value

    def get_state(self):
        from .creation import tensor  # (lazy: a true cycle, creation imports this module)

        st = self.rng.bit_generator.state
        words = _split(st["state"]["state"]) + _split(st["state"]["inc"])
        seed = self.seed_value - 2**64 if self.seed_value >= 2**63 else self.seed_value  # as int64
        return tensor(words + [st["has_uint32"], st["uinteger"], seed], dtype=int64)

    def set_state(self, new_state):
        values = [int(v) for v in np.asarray(new_state).reshape(-1)]
        if len(values) != 2 * _WORDS + 3:
            raise RuntimeError(f"Generator.set_state: expected a state from get_state() ({2 * _WORDS + 3} "
                               f"int64 values), got {len(values)} values")
        self.rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": _join(values[:_WORDS]), "inc": _join(values[_WORDS:2 * _WORDS])},
            "has_uint32": values[-3], "uinteger": values[-2]}
        self.seed_value = values[-1] % 2**64
        return self

    def next_seed(self):
        """A seed for one random op of a compiled program (drawn at each call)."""
        return int(self.rng.integers(0, 2**62))


def _split(n):
    return [(n >> (32 * k)) & 0xFFFFFFFF for k in range(_WORDS)]


def _join(words):
    return sum(w << (32 * k) for k, w in enumerate(words))


default_generator = Generator().manual_seed(0)


def manual_seed(seed):
    """Seed the global generator (returns it)."""
    return default_generator.manual_seed(seed)


def seed():
    """Seed the global generator with a non-deterministic number, which is returned."""
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Inside the block, random draws do not change the global generator's state outside it."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)

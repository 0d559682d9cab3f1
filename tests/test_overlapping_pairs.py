"""ir/aliasing.overlapping_pairs, which the alias guard and the C executable's in-place
arrangement use instead of testing every pair (quadratic in the bound tensors: issue 26's
warm first call of a 128-layer step), finds exactly the pairs np.may_share_memory reports."""
from itertools import combinations
import random

import numpy as np

from tracegrad.compiler.ir.aliasing import overlapping_pairs


def _views(rng, base):
    out = []
    for _ in range(rng.randint(0, 14)):
        r = rng.random()
        if r < 0.1:
            out.append(None)
        elif r < 0.25:
            out.append(np.zeros(rng.randint(0, 5)))  # its own memory (or empty)
        else:
            a = rng.randint(0, base.size - 1)
            b = rng.randint(a, base.size)
            step = rng.choice([1, 2, 3, -1])
            out.append(base[a:b:step] if step > 0 else base[a:b][::-1])
    return out


def test_the_pairs_np_may_share_memory_reports():
    rng = random.Random(0)
    base = np.zeros(200)
    for _ in range(400):
        arrays = _views(rng, base)
        want = [(p, q) for p, q in combinations(range(len(arrays)), 2)
                if arrays[p] is not None and arrays[q] is not None
                and np.may_share_memory(arrays[p], arrays[q])]
        assert overlapping_pairs(arrays) == want


def test_two_dimensional_views_and_the_same_array_twice():
    m = np.zeros((6, 8), np.float32)
    arrays = [m[:3], m[3:], m[:, :4], m, m, m.T, np.ones(3)]
    want = [(p, q) for p, q in combinations(range(len(arrays)), 2)
            if np.may_share_memory(arrays[p], arrays[q])]
    assert overlapping_pairs(arrays) == want
    assert (3, 4) in want and (0, 1) not in want

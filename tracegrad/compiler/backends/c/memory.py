"""Memory planning for the C backend: one workspace per program, buffers placed by liveness.

Each work buffer is written first by kernel ``first`` and read last by kernel ``last``; two
buffers may share bytes when one's last use comes strictly before the other's first write
(strictly: a kernel never reads and writes the same bytes through different buffers).

>>> class B:
...     def __init__(self, n, first, last): self.nbytes, self.first, self.last = n, first, last
>>> a, b, c = B(100, 0, 1), B(100, 2, 3), B(50, 1, 2)
>>> plan([a, b, c]), a.offset == b.offset, c.offset != a.offset
(192, True, True)
"""
from __future__ import annotations

ALIGN = 64


def _round(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def plan(buffers, reuse=True):
    """Set ``offset`` on each buffer; return the workspace size in bytes (best-fit reuse;
    ``reuse=False`` stacks every buffer, as backends/c/symbolic.py needs when a reused layout
    is not safe for every batch size)."""
    live = sorted((b for b in buffers), key=lambda b: (b.first if b.first is not None else -1))
    blocks = []  # [offset, size, free_after_kernel]
    total = 0
    for b in live:
        size = _round(max(b.nbytes, 1))
        start = b.first if b.first is not None else -1
        best = None
        for blk in blocks:
            if reuse and blk[2] is not None and blk[2] < start and blk[1] >= size:
                if best is None or blk[1] < best[1]:
                    best = blk
        end = b.last if b.last is not None else start
        if best is not None:
            b.offset = best[0]
            if best[1] > size:  # split: the tail stays free
                blocks.append([best[0] + size, best[1] - size, best[2]])
                best[1] = size
            best[2] = end
        else:
            b.offset = total
            blocks.append([total, size, end])
            total += size
    return total

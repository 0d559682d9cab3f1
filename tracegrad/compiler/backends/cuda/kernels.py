"""CUDA kernels of their own (lower.py groups the elementwise ops and the reductions).

matmul: a tiled shared-memory kernel, one 16x16 tile of the result per block, the batch on
``blockIdx.z``; each thread sums its dot product in a fixed order (tile by tile, k ascending),
so results do not depend on timing. Operands are read through their views' strides (a
transposed weight is not copied). cuBLAS would be faster on a GPU; it is not required here.
"""
from __future__ import annotations

import numpy as np

from ....ops import linalg as LA
from .lower import unravel
from .rules import RULES, Unsupported

TILE = 16
MAX_GRID_Z = 65535  # CUDA's limit on gridDim.z: a larger batch loops


@RULES.kernel(LA.MATMUL)
def matmul(lw, n):
    a, b = n.inputs
    out = n.out
    if out.dtype.short == "b8":
        raise Unsupported(n.op.name, "bool matrix products are not in the CUDA backend yet")
    M, K = a.shape[-2:]
    N = b.shape[-1]
    batch = tuple(out.shape[:-2])
    av = lw.resolve(a).broadcast_to(batch + (M, K))
    bv = lw.resolve(b).broadcast_to(batch + (K, N))
    ov = lw.output_view(out)
    nb = int(np.prod(batch, dtype=np.int64))
    if nb == 0 or M == 0 or N == 0:
        return
    ct = out.dtype.c_type
    # float32 products accumulate in float, as BLAS's sgemm (the C backend's) does
    acc = ct if out.dtype.is_floating_point else "int64_t"
    lines, names = unravel("z", batch, "z")
    off = lambda vw: " + ".join([str(vw.offset)] + [f"{v}*{s}" for v, s in zip(names, vw.strides[:-2]) if s])
    ars, acs = av.strides[-2:]
    brs, bcs = bv.strides[-2:]
    T = TILE
    body = [
        f"__shared__ {acc} As[{T}][{T}];",
        f"__shared__ {acc} Bs[{T}][{T}];",
        "const int tx = threadIdx.x, ty = threadIdx.y;",
        f"const int64_t row = blockIdx.y * (int64_t){T} + ty, col = blockIdx.x * (int64_t){T} + tx;",
        f"for (int64_t z = blockIdx.z; z < {nb}; z += gridDim.z) {{",
        *["  " + s for s in lines],
        f"  const {ct} *A = {av.buf} + {off(av)};",
        f"  const {ct} *B = {bv.buf} + {off(bv)};",
        f"  {acc} sum = 0;",
        f"  for (int64_t t = 0; t < {K}; t += {T}) {{",
        f"    As[ty][tx] = (row < {M} && t + tx < {K}) ? ({acc})A[row*{ars} + (t + tx)*{acs}] : ({acc})0;",
        f"    Bs[ty][tx] = (t + ty < {K} && col < {N}) ? ({acc})B[(t + ty)*{brs} + col*{bcs}] : ({acc})0;",
        "    __syncthreads();",
        f"    for (int k = 0; k < {T}; k++) sum += As[ty][k] * Bs[k][tx];",
        "    __syncthreads();  // the tiles are overwritten next",
        "  }",
        f"  if (row < {M} && col < {N}) {ov.buf}[z*{M * N} + row*{N} + col] = ({ct})sum;",
        "}",
    ]
    grid = f"dim3({(N + T - 1) // T}, {(M + T - 1) // T}, {min(nb, MAX_GRID_Z)})"
    lw.kernel("\n".join(body), [av.buf, bv.buf, ov.buf], grid, f"dim3({T}, {T})")

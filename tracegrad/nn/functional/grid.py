"""Spatial transformers, re-exported by ``tracegrad.nn.functional``: ``affine_grid`` (the
sampling grid of a batch of affine maps) and ``grid_sample`` (an input read at a grid of
normalised ``(x, y)`` positions, bilinear or nearest, zeros or border padding), with
PyTorch's coordinate conventions. The reads are gathers at floored positions, so the gradient
flows to the input (a scatter-add) and, through the interpolation weights, to the grid, as
PyTorch's.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> identity = tg.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
>>> image = tg.arange(6.0).reshape(1, 1, 2, 3)
>>> grid = F.affine_grid(identity, (1, 1, 2, 3), align_corners=False)
>>> F.grid_sample(image, grid, align_corners=False)
tensor([[[[0., 1., 2.],
          [3., 4., 5.]]]])
"""
from __future__ import annotations

import warnings

import numpy as np

from ...core.placement import on_inputs_device as _on_inputs_device
from ...core import creation
from ..._api import functional as T
from ...ops import index as I

__all__ = ["affine_grid", "grid_sample"]

_DEFAULT_CHANGED = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
                    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
                    "documentation of grid_sample for details.")


def _align(align_corners):
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, stacklevel=3)
        return False
    return bool(align_corners)


def _positions(n, align_corners):
    """The normalised centres of ``n`` pixels: -1 .. 1 at the corner pixels' centres with
    ``align_corners``, else at the image's edges (0 for a single pixel)."""
    if n <= 1:
        return np.zeros(max(n, 0))
    base = np.linspace(-1.0, 1.0, n)
    return base if align_corners else base * (n - 1) / n


@_on_inputs_device
def affine_grid(theta, size, align_corners=None):
    """The ``(N, H, W, 2)`` grid ``theta @ (x, y, 1)`` over the pixel centres of ``size``
    ``(N, C, H, W)`` (or ``(N, D, H, W, 3)`` from ``(N, 3, 4)`` maps for a 5-D size)."""
    align_corners = _align(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(int(s) for s in size)
    k = len(size) - 2
    if k not in (2, 3):
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                                  f"transforms, respectively. Got size {size}.")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (k, k + 1):
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size "
                         f"{size}. Got {list(theta.shape)}.")
    spatial = size[2:]
    axes = [_positions(n, align_corners) for n in spatial]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")  # each of the spatial shape
    # columns x, y(, z), 1: x runs along the last dim
    base = np.stack([m for m in reversed(mesh)] + [np.ones(spatial)], -1).reshape(-1, k + 1)
    base = T.to_tensor(base.astype(theta.dtype.np))
    grid = T.matmul(base, T.transpose(theta, 1, 2))  # (N, prod(spatial), k)
    return T.reshape(grid, (size[0],) + spatial + (k,))


def _unnormalize(coord, n, align_corners):
    if align_corners:
        return T.mul(T.add(coord, 1.0), (n - 1) / 2)
    return T.div(T.sub(T.mul(T.add(coord, 1.0), n), 1.0), 2)


def _clip(coord, n):
    """``coord`` clamped to [0, n - 1], its gradient 0 on and beyond the bounds (PyTorch's)."""
    inside = T.logical_and(T.gt(coord, 0), T.lt(coord, n - 1))
    return T.where(inside, coord, T.clamp(coord, 0, n - 1).detach())


@_on_inputs_device
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """``input (N, C, H, W)`` read at ``grid (N, Ho, Wo, 2)``'s normalised ``(x, y)``
    positions: ``(N, C, Ho, Wo)``. Modes ``bilinear`` and ``nearest`` (half to even, as
    PyTorch's); padding ``zeros`` (outside reads 0) or ``border`` (positions clamped)."""
    align_corners = _align(align_corners)
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample: mode {mode!r} is not supported; bilinear and nearest are")
    if padding_mode not in ("zeros", "border"):
        raise NotImplementedError(f"grid_sample: padding_mode {padding_mode!r} is not supported; zeros and "
                                  "border are")
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sample: expected a 4-D input (N, C, H, W) and a grid (N, H_out, W_out, 2) "
                           f"of the same batch, got input {list(input.shape)} and grid {list(grid.shape)}")
    n, c, h, w = input.shape
    _, ho, wo, _ = grid.shape
    ix = _unnormalize(grid[..., 0], w, align_corners)  # (N, Ho, Wo)
    iy = _unnormalize(grid[..., 1], h, align_corners)
    if padding_mode == "border":
        ix, iy = _clip(ix, w), _clip(iy, h)
    flat = T.reshape(input, (n, c, h * w))

    def read(xs, ys):  # input at integer positions (zero outside), (N, C, Ho, Wo)
        valid = T.logical_and(T.logical_and(T.ge(xs, 0), T.lt(xs, w)),
                              T.logical_and(T.ge(ys, 0), T.lt(ys, h)))
        index = T.add(T.mul(T.clamp(ys, 0, h - 1), w), T.clamp(xs, 0, w - 1))
        index = T.expand(T.reshape(T.cast(index, creation.tensor(0).dtype), (n, 1, ho * wo)), (n, c, ho * wo))
        values = T.reshape(I.GATHER(flat, index, dim=2), (n, c, ho, wo))
        return T.where(T.unsqueeze(valid, 1), values, 0.0)

    if mode == "nearest":
        # the grid's gradient is zeros (as PyTorch's), not absent: a zero term that depends on it
        # (clamped first, so that an infinite position adds 0, not inf - inf)
        def nothing(t):
            bounded = T.clamp(t, -1.0, 1.0)
            return T.mul(T.sub(bounded, bounded.detach()), 0.0)

        still = T.unsqueeze(T.add(nothing(ix), nothing(iy)), 1)
        return T.add(read(T.round(ix).detach(), T.round(iy).detach()), still)
    x0, y0 = T.floor(ix).detach(), T.floor(iy).detach()
    wx1, wy1 = T.sub(ix, x0), T.sub(iy, y0)  # (weights linear in the position: its gradient)
    wx0, wy0 = T.sub(1.0, wx1), T.sub(1.0, wy1)
    x1, y1 = T.add(x0, 1.0), T.add(y0, 1.0)
    out = 0
    for xs, ys, weight in ((x0, y0, T.mul(wx0, wy0)), (x1, y0, T.mul(wx1, wy0)),
                           (x0, y1, T.mul(wx0, wy1)), (x1, y1, T.mul(wx1, wy1))):
        out = T.add(out, T.mul(read(xs, ys), T.unsqueeze(weight, 1)))
    return out

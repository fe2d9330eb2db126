"""Random smooth deformations of 28x28 digits, after the model behind infimnist / MNIST8M.

Loosli, Canu & Bottou (2007), "Training invariant support vector machines using selective
sampling", generate MNIST8M by moving each pixel of a digit along a random displacement field and
resampling. We implement that model as written in the paper, not infimnist's code or its
precomputed fields (neither is available offline), so our digits are *like* MNIST8M's, not equal
to them; datasets built from them are named ``*-synth`` and never "MNIST8M".

The displacement of pixel ``p`` (row, column) is ``d(p) = alpha * (G_sigma * U)(p) + A (p - c)``:

* ``U`` is a field of independent Uniform(-1, 1) displacements, one pair per pixel, convolved with
  a Gaussian of standard deviation ``sigma`` pixels and scaled by ``alpha`` (the elastic part);
* ``A`` is a 2x2 matrix with independent Uniform(-affine, affine) entries applied around the
  image centre ``c`` (a small random rotation, scaling and shear).

The new image is ``J(p) = I(p + d(p))``, bilinearly interpolated, zero outside the image.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import gaussian_filter1d

SIDE = 28
_SLICE = 2048


@dataclass(frozen=True)
class DeformationModel:
    """Parameters of the deformation (module docstring). Defaults: Simard et al.'s (2003) elastic
    field (sigma 4, alpha 34, which moves pixels by about 1.3 pixels) plus affine entries of up to 0.1."""

    alpha: float = 34.0
    sigma: float = 4.0
    affine: float = 0.1

    def __post_init__(self) -> None:
        if not (self.alpha >= 0 and self.sigma > 0 and self.affine >= 0):
            raise ValueError(f"need alpha >= 0, sigma > 0 and affine >= 0, got {self}")


def deform(images: np.ndarray, rng: np.random.Generator, model: DeformationModel = DeformationModel()) -> np.ndarray:
    """Deform each image of ``images`` (shape ``(n, 28, 28)``) by its own random field.

    Returns float32 images of the same shape and intensity scale (zero where a pixel is pulled
    from outside the image). The random draws consume ``rng`` as one batch, so the result depends
    on ``n``: reproduce an image by deforming the same batch with the same generator state. The
    work after the draws is done ``_SLICE`` images at a time, bounding the temporaries.
    """
    n = len(images)
    uniform = rng.random(size=(n, 2, SIDE, SIDE), dtype=np.float32) * 2 - 1
    matrix = rng.uniform(-model.affine, model.affine, size=(n, 2, 2)).astype(np.float32)
    # Row i of `smooth` is the unit vector e_i filtered by the Gaussian (zero beyond the edges), so
    # smooth.T @ u @ smooth is the 2-D Gaussian filter of u, as a matrix product over the batch.
    smooth = gaussian_filter1d(np.eye(SIDE, dtype=np.float32), model.sigma, axis=1, mode="constant")
    grid = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)  # (2, 28, 28): row and column of each pixel
    centred = (grid - np.float32((SIDE - 1) / 2)).reshape(2, -1)
    out = np.empty((n, SIDE, SIDE), dtype=np.float32)
    for start in range(0, n, _SLICE):
        part = slice(start, start + _SLICE)
        elastic = np.float32(model.alpha) * (smooth.T @ uniform[part] @ smooth)
        affine = (matrix[part] @ centred).reshape(-1, 2, SIDE, SIDE)
        source = grid[None] + elastic + affine  # where each pixel reads from
        out[part] = _bilinear(images[part].astype(np.float32), source[:, 0], source[:, 1])
    return out


def _bilinear(images: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Sample ``images`` (n, H, W) at real coordinates (n, H, W), zero outside the image."""
    n, height, width = images.shape
    stride = width + 2
    padded = np.zeros((n, height + 2, stride), dtype=np.float32)
    padded[:, 1:-1, 1:-1] = images
    # In padded coordinates rows 0 and H + 1 (and those columns) are the zero border; a coordinate
    # beyond it reads the border.
    r = np.clip(rows + 1, 0, height + 1)
    c = np.clip(cols + 1, 0, width + 1)
    r0 = np.minimum(r.astype(np.int64), height)
    c0 = np.minimum(c.astype(np.int64), width)
    fr, fc = r - r0, c - c0
    corner = (np.arange(n) * padded[0].size)[:, None, None] + r0 * stride + c0
    flat = padded.ravel()
    top = flat[corner] * (1 - fc) + flat[corner + 1] * fc
    bottom = flat[corner + stride] * (1 - fc) + flat[corner + stride + 1] * fc
    return top * (1 - fr) + bottom * fr

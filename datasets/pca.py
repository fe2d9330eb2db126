"""Exact PCA of data seen in chunks (H.2: "we first reduce the dimension to 50 by PCA").

The row count, column sums and Gram matrix ``X^T X`` are accumulated in float64, one chunk at a
time; the covariance matrix they give is diagonalised once. For 784 pixels that is a 784 x 784
accumulator, whatever the number of rows, and one matrix product per chunk: the result equals
scikit-learn's ``PCA(svd_solver="covariance_eigh")`` on the whole data, and is an order of
magnitude faster than ``IncrementalPCA``'s SVD per chunk (which is also only approximate).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np


class StreamingPCA:
    """PCA fitted by :meth:`partial_fit` on consecutive chunks, exact on their union.

    Once fitted, ``mean_``, ``components_`` (``n_components`` x features, unit rows, each with its
    largest-magnitude entry positive so that signs are reproducible), ``explained_variance_`` and
    ``explained_variance_ratio_`` read as in scikit-learn; they are computed when first read.
    """

    def __init__(self, n_components: int) -> None:
        if n_components < 1:
            raise ValueError(f"n_components must be >= 1, got {n_components}")
        self.n_components = n_components
        self._rows = 0
        self._sum: np.ndarray | None = None
        self._gram: np.ndarray | None = None

    def partial_fit(self, chunk: np.ndarray) -> StreamingPCA:
        """Add the rows of ``chunk`` (rows x features) to the fit."""
        chunk = np.asarray(chunk, dtype=np.float64)
        if self._sum is None:
            self._sum = np.zeros(chunk.shape[1])
            self._gram = np.zeros((chunk.shape[1], chunk.shape[1]))
        self._rows += len(chunk)
        self._sum += chunk.sum(axis=0)
        self._gram += chunk.T @ chunk
        self.__dict__.pop("_solution", None)
        return self

    def fit(self, X: np.ndarray) -> StreamingPCA:
        """Fit on all of ``X`` at once."""
        return self.partial_fit(X)

    @cached_property
    def _solution(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        features = 0 if self._sum is None else len(self._sum)
        if self._rows < 2 or self.n_components > features:
            raise ValueError(
                f"PCA to {self.n_components} dims needs 2+ rows and {self.n_components}+ features, "
                f"got {self._rows} rows of {features}"
            )
        mean = self._sum / self._rows
        covariance = (self._gram - self._rows * np.outer(mean, mean)) / (self._rows - 1)
        values, vectors = np.linalg.eigh(covariance)
        order = np.argsort(values)[::-1][: self.n_components]
        components = vectors[:, order].T
        components *= np.sign(components[np.arange(len(order)), np.abs(components).argmax(axis=1)])[:, None]
        variance = np.clip(values[order], 0, None)
        return mean, components, variance, variance / np.trace(covariance)

    @property
    def mean_(self) -> np.ndarray:
        """Per-feature mean of the rows seen."""
        return self._solution[0]

    @property
    def components_(self) -> np.ndarray:
        """Principal axes, largest variance first (``n_components`` x features)."""
        return self._solution[1]

    @property
    def explained_variance_(self) -> np.ndarray:
        """Variance along each component (unbiased, divisor rows - 1)."""
        return self._solution[2]

    @property
    def explained_variance_ratio_(self) -> np.ndarray:
        """Fraction of the total variance along each component."""
        return self._solution[3]

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Project ``X`` on the components: ``(X - mean_) @ components_.T`` (float64)."""
        return (np.asarray(X, dtype=np.float64) - self.mean_) @ self.components_.T

"""A tiny 2-D Bayesian logistic regression (one feature + bias) with its posterior on a grid.

In two dimensions the posterior is computed exactly (to quadrature error) on a fine grid, so the
logistic tests (tests/test_logistic_*.py) compare samplers with the truth, not with each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmd.models.logistic import BayesianLogisticRegression, labelled


@dataclass(frozen=True)
class GridLogistic:
    """Data ``{"x": (N, 2), "y": (N,)}`` and the gridded posterior's mean and covariance."""

    data: dict
    mean: np.ndarray
    cov: np.ndarray
    problem: BayesianLogisticRegression

    @classmethod
    def make(cls, num_data: int = 50, w_true=(1.5, -0.5), seed: int = 0, size: int = 801,
             half_width: float = 6.0, prior_std: float = 1.0) -> GridLogistic:
        rng = np.random.default_rng(seed)
        x = rng.normal(0.0, 1.0, (num_data, 1))
        logit = w_true[0] * x[:, 0] + w_true[1]
        y = np.where(rng.random(num_data) < 1.0 / (1.0 + np.exp(-logit)), 1, -1)
        data = labelled(x, y)
        axis = np.linspace(-half_width, half_width, size)
        w = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2)
        z = (w @ data["x"].astype(np.float64).T) * data["y"].astype(np.float64)[None, :]
        log_post = -0.5 * np.sum(w**2, axis=1) / prior_std**2 - np.sum(np.logaddexp(0.0, -z), axis=1)
        p = np.exp(log_post - log_post.max())
        p /= p.sum()
        mean = p @ w
        cov = (w - mean).T @ ((w - mean) * p[:, None])
        edge = p.reshape(size, size)
        assert max(edge[0].sum(), edge[-1].sum(), edge[:, 0].sum(), edge[:, -1].sum()) < 1e-12, "grid too small"
        return cls(data, mean, cov, BayesianLogisticRegression(2, prior_std))

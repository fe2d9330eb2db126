"""The measured rate of Theorem 5: RMS error of a posterior expectation against particle count."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .styles import legend_outside, log_ticks, save, style  # noqa: E402


def draw(result: dict):
    """The RMS errors of ``pmd-bench rate`` on log-log axes beside the ``m^{-1/2}`` reference."""
    m, rmse = np.array(result["particles"]), np.array(result["rmse"])
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.loglog(m, rmse, label=f"PMD weighted particles (slope {result['slope']:.2f})", **style("pmd").line(every=None))
    ax.loglog(m, rmse[0] * np.sqrt(m[0] / m), "k--", label=r"$m^{-1/2}$ (Theorem 5)")
    ax.set(xlabel="particles m", ylabel=r"RMS error of $E[\theta_1]$", title=f"{result['seeds']} seeds per m")
    log_ticks(ax.xaxis)
    log_ticks(ax.yaxis)
    fig.tight_layout()
    legend_outside(fig, [ax])
    return fig


def render(result_path: str | Path, out: str | Path) -> None:
    """:func:`draw` of the result JSON ``result_path`` to ``out``."""
    save(draw(json.loads(Path(result_path).read_text())), out)

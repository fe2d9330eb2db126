"""The measured rate of Theorem 5: RMS error of a posterior expectation against particle count."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .resultfiles import atomic_path  # noqa: E402
from .styles import legend_outside, style  # noqa: E402


def render(result_path: str | Path, out: str | Path) -> None:
    """Plot the RMS errors of ``pmd-bench rate`` on log-log axes beside the ``m^{-1/2}`` reference."""
    result = json.loads(Path(result_path).read_text())
    m, rmse = np.array(result["particles"]), np.array(result["rmse"])
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.loglog(m, rmse, label=f"PMD weighted particles (slope {result['slope']:.2f})", **style("pmd").line(every=None))
    ax.loglog(m, rmse[0] * np.sqrt(m[0] / m), "k--", label=r"$m^{-1/2}$ (Theorem 5)")
    ax.set(xlabel="particles m", ylabel=r"RMS error of $E[\theta_1]$", title=f"{result['seeds']} seeds per m")
    fig.tight_layout()
    legend_outside(fig, [ax])
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)

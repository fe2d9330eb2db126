"""Every method label's fixed look in the report figures (colour, line style, marker), and the
one legend a figure draws outside its panels.

A label's family gives its hue (:data:`FAMILIES`: PMD blue, VI orange, SGMCMC green, SMC red,
particle VI purple, the bootstrap brown, SoD pink, Gibbs grey, the LDA peers olive, NPV cyan);
its place ``k`` in its family's table gives the rest (:func:`Style.of`): its own hue near the
family's (turned into the gap beside the family's hue, :data:`TURNS`; past the turns, lighter or
darker shades), a line style and a marker. So ``pmd``, ``pmd_stream`` and ``pmd_paper`` are three blues of distinct hue,
told apart by colour, dashes and markers, and a method looks the same in every figure. The
table holds the workflow registry's method names (``workflow/methods.py``, the LDA peers'
``baselines/peers/topic_models.py``) and the config labels of ``workflow/config/*.yaml``; every
known label and its ``_tuned`` variant has a look no other known label has.

* ``<label>_tuned`` (the tuning campaign's rows, ``workflow/tuning.py``): its label's colour and
  marker, dotted (no untuned label is dotted).
* A label not in the table (a user's own) takes the family of its longest known prefix
  (``pmd_mine``: PMD) and a place past the family's table from a hash of its name; a label with no
  known prefix, a hue of :data:`RESERVED` (no family's) and a place, both from the hash. The hash is
  of the name's bytes (CRC-32), so the look is the same in every process.

:func:`panel_styles` gives a figure's labels their looks: known labels keep theirs; an unknown one
that would look like a label already placed moves to the next free place of its hue (deterministic:
unknown labels are placed in sorted order after the known ones, whatever the figure's order).
:func:`legend_outside` draws the figure's legend right of its panels; :func:`save` writes a
figure with everything outside its panels in the file (``bbox_inches="tight"``).

The reports draw every curve against data visited the same way (:func:`mean_curves`: mean ± one
standard deviation over seeds) and label every log axis with few, short ticks so that no two
labels overlap (:func:`log_ticks`: decades, or 1, 2 and 5 times them on a short range; a number
between 0.001 and 100,000 written plainly, a minor tick unlabelled).
"""

from __future__ import annotations

import colorsys
import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
from matplotlib.colors import to_hex, to_rgb
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from .resultfiles import atomic_path, curve_stats

# family -> (hue, its labels in their fixed order: a label's place k picks its variant)
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "pmd": ("#1f77b4", ("pmd", "pmd_stream", "pmd_paper", "pmd_kde", "pmd_smooth", "pmd_neighbours",
                        "pmd_harmonic", "pmd_m4", "pmd_gp", "pmd_lda",
                        # the LDA weight comparison (workflow/config/lda_weights.yaml): m, F.2's weights, the peers' rate
                        "pmd_m8", "pmd_dr", "pmd_m4_dr", "pmd_m8_dr", "pmd_hoffman", "pmd_m8_hoffman",
                        "pmd_m8_dr_hoffman",
                        # the sparse-GP PMD whose inducing inputs move at pass ends
                        "pmd_move",
                        # the default's moves without the independence sweeps (workflow/config/pmd_balanced.yaml)
                        "pmd_no_sweeps",
                        # the default at 250 and 100 particles (workflow/config/equal_cost.yaml)
                        "pmd_m250", "pmd_m100")),
    # gpjax_svgp at place 1 (dashed): it overlays SVI-GP (``svi``) in the sparse-GP figure
    "vi": ("#ff7f0e", ("svi", "gpjax_svgp", "svi_hoffman", "numpyro_svi", "jj_svi", "svi_gp", "lda_svi",
                       "gpjax_svgp_learned")),
    "sgmcmc": ("#2ca02c", ("sgld", "sgrld", "sgld_parallel", "lda_sgrld")),
    "smc": ("#d62728", ("smc", "blackjax_tempered_smc", "blackjax_data_smc", "smc_gp", "lda_smc")),
    "particle_vi": ("#9467bd", ("svgd", "opvi", "blackjax_svgd")),
    "bootstrap": ("#8c564b", ("npl", "npl_full")),
    "sod": ("#e377c2", ("sod",)),
    "gibbs": ("#7f7f7f", ("gibbs", "pg_gibbs", "tomotopy", "tomotopy_gibbs")),
    "lda_peers": ("#bcbd22", ("sklearn", "gensim", "sklearn_lda", "gensim_lda")),
    "npv": ("#17becf", ("npv", "npv_full")),
}
RESERVED = ("#e6ab02", "#00796b", "#c51b8a", "#393b79")  # hues of labels with no known family
LINESTYLES = ("-", "--", "-.")  # untuned labels; ``:`` is the tuned variants'
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "p", "*", "d", "H", "8")
TUNED = "_tuned"
SPREAD = 64  # places past a family's table an unknown label may hash to
LEGEND_ROWS = 20  # entries per column of a figure's legend: a 4-inch-high figure's worth at its font size

PLACE = {label: (hue, k) for hue, labels in FAMILIES.values() for k, label in enumerate(labels)}
SIZE = {hue: len(labels) for hue, labels in FAMILIES.values()}


# a family's hue turns, in degrees, for its places 0, 1, 2, ...: each family turns into the gap
# beside it on the colour wheel (PMD's blue towards purple, SMC's red towards pink, ...), so its
# members have distinct hues near the family's and stay clear of the other families' hues
TURNS: dict[str, tuple[float, ...]] = {
    "#1f77b4": (0, 22, 42), "#ff7f0e": (0, 14, -14), "#2ca02c": (0, 28, -28), "#d62728": (0, -18, -34),
    "#9467bd": (0, 26), "#bcbd22": (0, 14, -14), "#17becf": (0, -16),
}


def _shade(hue: str, k: int) -> str:
    """The ``k``-th colour of the family whose hue is ``hue``: the hue turned by the family's
    :data:`TURNS` (``k = 0``: the hue itself), and past its turns a lighter or darker shade of
    them (by up to 35%, stepping by the golden ratio). A family without turns (grey, brown, pink:
    one or two members in any figure) differs by shade alone."""
    turns = TURNS.get(hue, (0,))
    h, light, sat = colorsys.rgb_to_hls(*to_rgb(hue))
    rgb = np.asarray(colorsys.hls_to_rgb((h + turns[k % len(turns)] / 360.0) % 1.0, light, sat))
    rounds = k // len(turns)
    t = 0.7 * ((rounds * 0.6180339887 + 0.5) % 1.0 - 0.5) if rounds else 0.0
    return to_hex(rgb + t * (1.0 - rgb) if t > 0 else rgb * (1.0 + t))


@dataclass(frozen=True)
class Style:
    """A method's look: ``color`` (hex), ``linestyle`` and ``marker``, from its hue, its place ``k``
    and whether it is a tuned variant (:meth:`of`)."""

    color: str
    linestyle: str
    marker: str

    @classmethod
    def of(cls, hue: str, k: int, tuned: bool) -> Style:
        return cls(_shade(hue, k), ":" if tuned else LINESTYLES[k % len(LINESTYLES)], MARKERS[k % len(MARKERS)])

    def line(self, every: float | None = 0.1) -> dict:
        """Keyword arguments for ``Axes.plot``: the look, with markers ``every`` axes diagonal apart
        (curves of many evaluations) or, with ``None``, at every point (a few measurements)."""
        return {"color": self.color, "linestyle": self.linestyle, "marker": self.marker, "markersize": 4,
                "markevery": every}


def plot_line(ax, x, y, style: Style, every: float | None = 0.1, **kw) -> None:
    """``ax.plot(x, y)`` in ``style`` over the finite points only; nothing when none is finite (a
    failed run's NaN curve). Markers spaced by a fraction of the axes (``every``) are computed by
    matplotlib on the drawn path, which fails on a path with no vertices."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.any():
        ax.plot(x[keep], y[keep], **style.line(every), **kw)


def split_tuned(label: str) -> tuple[str, bool]:
    """``(label without its "_tuned", whether it had one)``."""
    tuned = label.endswith(TUNED) and len(label) > len(TUNED)
    return (label[: -len(TUNED)] if tuned else label), tuned


def _place(label: str) -> tuple[str, int, bool]:
    """``(hue, k, tuned)`` of a label (module docstring), before any move by :func:`panel_styles`."""
    base, tuned = split_tuned(label)
    if base in PLACE:
        return (*PLACE[base], tuned)
    h = zlib.crc32(base.encode())
    parts = base.split("_")
    prefix = next((p for p in ("_".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)) if p in PLACE), None)
    if prefix is not None:
        hue = PLACE[prefix][0]
        return hue, SIZE[hue] + h % SPREAD, tuned
    return RESERVED[h % len(RESERVED)], (h // len(RESERVED)) % SPREAD, tuned


def style(label: str) -> Style:
    """The look of ``label`` alone (a figure with several labels: :func:`panel_styles`)."""
    return Style.of(*_place(label))


def panel_styles(labels: Iterable[str]) -> dict[str, Style]:
    """The looks of one figure's labels, pairwise distinct (module docstring), in the given order."""
    labels = list(dict.fromkeys(labels))
    out = {label: style(label) for label in labels if split_tuned(label)[0] in PLACE}
    used = set(out.values())
    for label in sorted(set(labels) - set(out)):
        hue, k, tuned = _place(label)
        while Style.of(hue, k, tuned) in used:
            k += 1
        out[label] = Style.of(hue, k, tuned)
        used.add(out[label])
    return {label: out[label] for label in labels}


def legend_outside(fig, axes):
    """One legend for ``fig``, right of its panels (it lies outside the figure's box: save with
    ``bbox_inches="tight"``): every label drawn on ``axes`` once, in the order first drawn, in as
    many columns of at most :data:`LEGEND_ROWS` entries as it needs."""
    handles = {label: h for ax in np.ravel(axes) for h, label in zip(*ax.get_legend_handles_labels())}
    return fig.legend(handles.values(), handles.keys(), loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8,
                      ncols=max(1, math.ceil(len(handles) / LEGEND_ROWS)))


def mean_curves(ax, runs_by: dict, metric: str, styles: dict[str, Style], runs_in_label: bool = True) -> None:
    """Each method's ``curve/<metric>``, mean ± one standard deviation over its runs, against data
    visited (the evaluations after the first step), in its look; a method whose runs lack the curve is
    left out. A method that stops visiting early (SoD after its subset) is drawn flat from where it
    stopped to the end of the axis. The legend label is the method's, with its run count when
    ``runs_in_label``."""
    stats = {label: curve_stats(runs, metric) for label, runs in runs_by.items() if f"curve/{metric}" in runs[0][0]}
    if not stats:
        return
    end = max(float(v.max()) for v, _, _ in stats.values())
    for label, (visited, mean, std) in stats.items():
        keep = visited > 0
        x, m, s = visited[keep], mean[keep], std[keep]
        if len(np.unique(x)) == 1:  # stopped: its final value from there on
            x, m, s = np.array([x[0], end]), np.full(2, m[-1]), np.full(2, s[-1])
        name = f"{label} ({len(runs_by[label])} runs)" if runs_in_label else label
        plot_line(ax, x, m, styles[label], label=name)
        ax.fill_between(x, m - s, m + s, color=styles[label].color, alpha=0.2)


def _short_number(value: float, _position=None) -> str:
    """A tick label: plainly between 0.001 and 100,000 (``0.05``, ``2``, ``1000``), else a power
    of ten (``10⁶``, ``2×10⁶``)."""
    if value <= 0:
        return ""
    if 1e-3 <= value < 1e5:
        return f"{value:g}"
    exponent = math.floor(math.log10(value))
    mantissa = round(value / 10.0**exponent, 6)
    return f"$10^{{{exponent}}}$" if mantissa == 1 else f"${mantissa:g}\\times10^{{{exponent}}}$"


class _FewLogTicks(LogLocator):
    """Major ticks of a log axis: whole decades, no more than fit the axis (matplotlib's count:
    three characters per label); where fewer than two decades lie in view, 1, 2 and 5 times each
    decade instead."""

    def __init__(self):
        super().__init__(base=10.0, numticks="auto")

    def tick_values(self, vmin, vmax):
        decades = super().tick_values(vmin, vmax)
        low, high = sorted((vmin, vmax))
        if ((decades >= low) & (decades <= high)).sum() >= 2:
            return decades
        return LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)).tick_values(vmin, vmax)


def log_ticks(axis) -> None:
    """Label a log-scaled ``axis`` (``ax.xaxis`` or ``ax.yaxis``) with few, short major ticks and
    unlabelled minor ones (module docstring)."""
    axis.set_major_locator(_FewLogTicks())
    axis.set_major_formatter(FuncFormatter(_short_number))
    axis.set_minor_formatter(NullFormatter())


def save(fig, out: str | Path, dpi: int = 110) -> None:
    """Write ``fig`` to ``out`` (atomically, PNG) with everything drawn outside its panels (an
    outside legend, long labels) inside the file, and close it."""
    import matplotlib.pyplot as plt

    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png", bbox_inches="tight")
    plt.close(fig)

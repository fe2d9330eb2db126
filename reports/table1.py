"""Table 1 of Dai et al. (2016, section 5): the paper's claims beside what was measured.

Reads the result files of :mod:`workflow.experiments.rate` (PMD's Theorem 5 rate),
:mod:`workflow.experiments.table1` (the other methods' rates; time and memory of a step against
``m`` and ``d``) and :mod:`workflow.experiments.black_box`, and writes ``table1.md``,
``table1.json`` and a figure of the scalings.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .resultfiles import atomic_path  # noqa: E402
from .styles import legend_outside, log_ticks, save, style  # noqa: E402

# Table 1 as printed: rows keyed by (registry method, KDE strategy or not). Exponents are the
# powers of m and d in the claimed computation per iteration and memory; the rate is the claimed
# exponent of the integral-approximation error |<q - q*, f>| in m (None: no rate claimed).
CLAIMS = [
    {"row": "SVI", "key": ("svi", False), "provable": "No", "criterion": "—", "rate": None,
     "computation": "Ω(d)", "time_exp": (0, 1), "memory": "O(d)", "memory_exp": (0, 1), "black_box": "No"},
    {"row": "NPV", "key": ("npv", False), "provable": "No", "criterion": "—", "rate": None,
     "computation": "Ω(dm²N + d²N)", "time_exp": (2, 2), "memory": "O(dm)", "memory_exp": (1, 1), "black_box": "No"},
    {"row": "NPV (full data)", "key": ("npv_full", False), "provable": "No", "criterion": "—", "rate": None,
     "computation": "Ω(dm²N + d²N)", "time_exp": (2, 2), "memory": "O(dm)", "memory_exp": (1, 1), "black_box": "No"},
    {"row": "Static SMC", "key": ("smc", False), "provable": "No", "criterion": "—", "rate": None,
     "computation": "Ω(dm)", "time_exp": (1, 1), "memory": "O(dm)", "memory_exp": (1, 1), "black_box": "Yes"},
    {"row": "SGLD", "key": ("sgld", False), "provable": "Yes", "criterion": r"\|⟨q − q*, f⟩\|", "rate": -1 / 3,
     "computation": "Ω(d)", "time_exp": (0, 1), "memory": "O(dm)", "memory_exp": (1, 1), "black_box": "Yes"},
    {"row": "PMD (particles)", "key": ("pmd", False), "provable": "Yes", "criterion": r"\|⟨q − q*, f⟩\|", "rate": -1 / 2,
     "computation": "Ω(dm)", "time_exp": (1, 1), "memory": "O(dm)", "memory_exp": (1, 1), "black_box": "Yes"},
    {"row": "PMD (KDE)", "key": ("pmd", True), "provable": "Yes", "criterion": "KL(q*‖q)", "rate": -1 / 2,
     "computation": "Ω(dm²)", "time_exp": (2, 1), "memory": "O(dm)", "memory_exp": (1, 1), "black_box": "Yes"},
]
RATE_NOTE = {"svi": "m = Monte Carlo draws per gradient", "npv": "m = mixture components",
             "smc": "m = particles, one pass", "sgld": "m = samples kept, m steps", "pmd": "m = particles, one pass"}


def _key(result: dict) -> tuple[str, bool]:
    return result["method"], result.get("spec", {}).get("strategy") == "kde"


def _load(paths) -> list[dict]:
    return [json.loads(Path(p).read_text()) for p in paths]


def assemble(theorem5: str | Path, rates: list, costs: list, black_box: str | Path) -> dict:
    """One record per Table 1 row: the claims and every measurement that belongs to it.

    PMD's rate is Theorem 5's run (``pmd-bench rate``); a row without a measurement keeps only
    its claims.
    """
    pmd = json.loads(Path(theorem5).read_text())
    rate_by_key = {("pmd", False): {**pmd, "method": "pmd", "label": "pmd (Theorem 5 run)"}}
    rate_by_key.update({_key(r): r for r in _load(rates)})
    cost_by_key = {_key(c): c for c in _load(costs)}
    probe = json.loads(Path(black_box).read_text())
    rows = []
    for claim in CLAIMS:
        method, kde = claim["key"]
        row = {k: v for k, v in claim.items() if k != "key"} | {"method": method, "kde": kde}
        if claim["key"] in rate_by_key:
            r = rate_by_key[claim["key"]]
            row["measured_rate"] = {k: r.get(k) for k in ("particles", "rmse", "seeds", "slope", "slope_se",
                                                           "slope_se_bootstrap", "label")}
        if claim["key"] in cost_by_key:
            c = cost_by_key[claim["key"]]
            row["measured_cost"] = {axis: {k: c[f"by_{axis}"][k] for k in ("time_exponent", "memory_exponent",
                                                                          "state_exponent", "rows")}
                                    for axis in ("particles", "dim")} | {"label": c["label"]}
        if method in probe["methods"]:
            row["measured_black_box"] = probe["methods"][method]
        rows.append(row)
    return {"rows": rows, "generic_models": probe["generic_models"], "models": probe["models"]}


def _exp(fit: dict) -> str:
    if fit.get("points", 3) <= 2:
        return f"{fit['slope']:+.2f} (2 sizes: no s.e.)"
    return f"{fit['slope']:+.2f} ± {fit['slope_se']:.2f}"


def _rate_cell(row: dict) -> str:
    r = row.get("measured_rate")
    if r is None:
        return "not measured"
    se = r["slope_se_bootstrap"] if r.get("slope_se_bootstrap") is not None else r["slope_se"]
    return (f"**{r['slope']:+.2f} ± {se:.2f}** (m = {r['particles'][0]:,}…{r['particles'][-1]:,}, "
            f"{r['seeds']} seeds; {RATE_NOTE.get(row['method'], '')})")


def _black_box_cell(row: dict, generic: list[str]) -> str:
    b = row.get("measured_black_box")
    if b is None:
        return "not probed"
    verdict = "Yes" if b["black_box"] else "No"
    return f"{verdict}: runs on {', '.join(b['runs_on']) or 'none'} ({len(set(b['runs_on']) & set(generic))}/{len(generic)} generic)"


def markdown(table: dict) -> str:
    """The claims and the measurements as two Markdown tables (rates and black box; cost)."""
    head = ("| method | provable | criterion | rate (paper) | error slope in m (measured ± s.e.) "
            "| black box (paper) | black box (measured) |\n|---|---|---|---|---|---|---|\n")
    lines = [head]
    for row in table["rows"]:
        paper_rate = "—" if row["rate"] is None else f"O(m^{row['rate']:+.3g})".replace("+", "")
        lines.append(f"| {row['row']} | {row['provable']} | {row['criterion']} | {paper_rate} | {_rate_cell(row)} "
                     f"| {row['black_box']} | {_black_box_cell(row, table['generic_models'])} |\n")
    lines.append("\n| method | computation (paper) | time exponent in m | time exponent in d | memory (paper) "
                 "| peak-memory exponent in m | in d | state exponent in m | in d |\n"
                 "|---|---|---|---|---|---|---|---|---|\n")
    for row in table["rows"]:
        c = row.get("measured_cost")
        cells = ["not measured"] * 6 if c is None else [
            _exp(c["particles"]["time_exponent"]), _exp(c["dim"]["time_exponent"]),
            _exp(c["particles"]["memory_exponent"]), _exp(c["dim"]["memory_exponent"]),
            _exp(c["particles"]["state_exponent"]), _exp(c["dim"]["state_exponent"])]
        claimed_t = f"{row['computation']} (m^{row['time_exp'][0]}, d^{row['time_exp'][1]})"
        lines.append(f"| {row['row']} | {claimed_t} | {cells[0]} | {cells[1]} | {row['memory']} | {cells[2]} "
                     f"| {cells[3]} | {cells[4]} | {cells[5]} |\n")
    return "".join(lines)


def draw(table: dict):
    """Error against m (with the claimed slopes), and time and peak memory of a step against m and d;
    each row in its method's look (``pmd_kde`` for the KDE row), named with its measured slope; every
    axis logarithmic, with few, short tick labels (:func:`reports.styles.log_ticks`)."""
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.2))
    for row in table["rows"]:
        r, c = row.get("measured_rate"), row.get("measured_cost")
        look = style(row["method"] + ("_kde" if row["kde"] else "")).line(every=None)
        label = row["row"] if r is None else f"{row['row']} ({r['slope']:+.2f})"
        if r is not None:
            axes[0].loglog(r["particles"], r["rmse"], label=label, **look)
        if c is None:
            continue
        for ax, axis, key in ((axes[1], "particles", "seconds"), (axes[2], "dim", "seconds"),
                              (axes[3], "particles", "peak_bytes")):
            xs = [p["particles" if axis == "particles" else "dim"] for p in c[axis]["rows"]]
            ax.loglog(xs, [p[key] for p in c[axis]["rows"]], label=label, **look)
    m = np.array([100.0, 3000.0])
    for slope, fmt in ((-0.5, "k--"), (-1 / 3, "k:")):
        axes[0].loglog(m, 0.3 * (m / m[0]) ** slope, fmt, label=f"m^{slope:.2f} (paper)")
    axes[0].set(xlabel="particles m", ylabel=r"RMS error of $E[\theta_1]$",
                title="integral approximation (conjugate model)")
    axes[1].set(xlabel="particles m", ylabel="seconds per step", title="time per step against m")
    axes[2].set(xlabel="dimension d", ylabel="seconds per step", title="time per step against d")
    axes[3].set(xlabel="particles m", ylabel="peak memory of a step (bytes)", title="peak memory of a step against m")
    for ax in axes:
        log_ticks(ax.xaxis)
        log_ticks(ax.yaxis)
    fig.tight_layout()
    legend_outside(fig, axes)
    return fig


def figure(table: dict, out: str | Path) -> None:
    """:func:`draw` to ``out``."""
    save(draw(table), out, dpi=100)


def render(theorem5, rates, costs, black_box, out: str | Path) -> dict:
    """Write ``out`` (``table1.md``), ``table1.json`` and ``table1.png`` beside it; return the table."""
    table = assemble(theorem5, rates, costs, black_box)
    out = Path(out)
    with atomic_path(out) as tmp:
        tmp.write_text(markdown(table))
    with atomic_path(out.with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(table, indent=1, sort_keys=True))
    figure(table, out.with_suffix(".png"))
    return table

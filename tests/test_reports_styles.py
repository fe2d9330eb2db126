"""The methods' fixed looks in the figures (reports/styles.py): every label the configs
and the registry name has a look, distinct within each experiment; families share a hue; unknown
labels get a stable look; and Figure 1 drawn for labels that shared colours before (and Table 1's
and the rate's figures) shows one legend of distinct handles outside its panels."""

import colorsys
import itertools
import json
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
import yaml
from matplotlib.colors import to_rgb

from pmd_bench.baselines.peers.topic_models import PEERS
from pmd_bench.reports import figure1, styles, table1
from pmd_bench.reports import rate as rate_report
from pmd_bench.workflow.config import load as load_config
from pmd_bench.workflow.methods import METHODS
from pmd_bench.workflow.results import save_npz

ROOT = Path(__file__).parents[1]
CONFIGS = sorted((ROOT / "workflow" / "config").glob("*.yaml"))


def labels_in(section) -> set[str]:
    """Every method label below a config section: the keys (or items) of each ``methods`` and the
    ``<label>_tuned`` of each tuning grid."""
    if not isinstance(section, dict):
        return set()
    found = set()
    for key, value in section.items():
        if key == "methods" and value:
            found |= set(value)
        elif key == "grids" and value:
            found |= {f"{label}{styles.TUNED}" for label in value}
        else:
            found |= labels_in(value)
    return found


def experiments() -> dict[str, set[str]]:
    """``experiment -> labels`` over every config file (a merged config's labels are among them)."""
    out: dict[str, set[str]] = {}
    for path in CONFIGS:
        for experiment, section in yaml.safe_load(path.read_text()).items():
            out.setdefault(experiment, set()).update(labels_in(section))
    return {k: v for k, v in out.items() if v}


def hue(color: str) -> float:
    return colorsys.rgb_to_hsv(*to_rgb(color))[0]


def triple(s: styles.Style) -> tuple:
    return s.color, s.linestyle, s.marker


def test_the_configs_name_labels_and_tuned_variants():
    found = experiments()
    assert {"mixture", "logistic", "posteriordb", "sparse_gp", "lda", "table1"} <= set(found)
    assert {"pmd_tuned", "svgd_tuned", "pmd_stream", "opvi", "blackjax_svgd"} <= found["mixture"]


@pytest.mark.parametrize("experiment", sorted(experiments()))
def test_every_config_label_has_its_own_look_in_its_experiment(experiment):
    labels = sorted(experiments()[experiment])
    unknown = [label for label in labels if styles.split_tuned(label)[0] not in styles.PLACE]
    assert not unknown, f"labels of {experiment} missing from styles.FAMILIES: {unknown}"
    looks = {label: triple(styles.style(label)) for label in labels}
    assert len(set(looks.values())) == len(looks), looks
    assert {k: triple(v) for k, v in styles.panel_styles(labels).items()} == looks  # nothing moves


def test_every_registry_method_has_a_family_and_every_known_look_is_unique():
    assert set(METHODS) | set(PEERS) <= set(styles.PLACE)
    everything = [label + tuned for label in styles.PLACE for tuned in ("", styles.TUNED)]
    assert len({triple(styles.style(label)) for label in everything}) == len(everything)


def test_a_familys_members_have_distinct_hues_near_the_familys_and_differ_in_line_style_or_marker():
    pmd, stream, paper, tuned = (styles.style(label) for label in ("pmd", "pmd_stream", "pmd_paper", "pmd_tuned"))
    turns = [abs((hue(s.color) - hue(pmd.color) + 0.5) % 1.0 - 0.5) for s in (stream, paper)]
    assert all(0.04 <= t <= 0.13 for t in turns), turns  # 15° to 45° from PMD's blue, and from each other
    assert abs(hue(stream.color) - hue(paper.color)) >= 0.04
    assert len({(s.linestyle, s.marker) for s in (pmd, stream, paper, tuned)}) == 4
    assert tuned.color == pmd.color and tuned.linestyle == ":"
    assert abs(hue(styles.style("svgd").color) - hue(styles.style("opvi").color)) >= 0.04
    assert len({round(hue(styles.style(label).color), 2) for label in ("pmd", "svgd", "sgld", "smc", "svi", "npl")}) == 6


@pytest.mark.parametrize("config", ["default", "standard", "paper"])
def test_every_experiments_methods_have_colours_told_apart(config):
    """Within each experiment of a config (one figure's methods), every two colours are at least
    0.12 apart in RGB (unit cube): PMD's variants are not three near-identical blues."""
    cfg = load_config(ROOT / "workflow" / "config" / f"{config}.yaml")
    for experiment in ("mixture", "logistic", "custom", "posteriordb", "sparse_gp", "lda"):
        if experiment not in cfg:
            continue
        looks = styles.panel_styles(cfg[experiment]["methods"])
        close = [(a, b) for a, b in itertools.combinations(looks, 2)
                 if np.linalg.norm(np.subtract(to_rgb(looks[a].color), to_rgb(looks[b].color))) < 0.12]
        assert not close, (experiment, close)


def test_a_look_is_the_same_in_every_call_and_every_figure():
    assert styles.style("pmd_stream") == styles.style("pmd_stream")
    one = styles.panel_styles(["svgd", "pmd", "opvi", "my_method"])
    other = styles.panel_styles(["my_method", "sgld", "opvi", "pmd", "svgd", "pmd_tuned"])
    assert all(one[label] == other[label] for label in one)
    assert list(one) == ["svgd", "pmd", "opvi", "my_method"]  # in the figure's order


def test_unknown_labels_get_a_look_and_colliding_ones_are_moved_apart():
    assert styles.style("pmd_mine").color != styles.style("pmd").color
    assert abs((hue(styles.style("pmd_mine").color) - hue(styles.style("pmd").color) + 0.5) % 1.0 - 0.5) <= 0.13
    assert styles.style("x").color in {styles._shade(h, k) for h in styles.RESERVED for k in range(styles.SPREAD)}
    for a, b in (("mine6", "mine60"), ("pmd_mine9", "pmd_mine22")):  # hash onto the same look
        assert styles.style(a) == styles.style(b)
        looks = styles.panel_styles([b, a, "pmd"])
        assert len(set(looks.values())) == 3 and looks[min(a, b)] == styles.style(a)  # the first by name keeps its own
        assert styles.panel_styles([a, b, "pmd"]) == looks


FIGURE1_LABELS = ["pmd", "pmd_stream", "pmd_paper", "sgld", "smc", "svi", "gibbs", "npv", "npl", "npl_full",
                  "svgd", "opvi", "blackjax_svgd", "pmd_tuned", "my_method"]  # ten colours used to cycle


def outside_legend(fig, out: Path):
    """The figure's one legend, checked: its handles pairwise distinct, its box clear of every
    panel, no panel with a legend of its own, and the saved file wide enough to hold it."""
    (legend,) = fig.legends
    looks = [(h.get_color(), h.get_linestyle(), h.get_marker()) for h in legend.legend_handles]
    assert len(set(looks)) == len(looks), looks
    renderer = fig.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    assert not any(ax.get_legend() for ax in fig.axes)
    assert matplotlib.image.imread(out).shape[1] > fig.get_figwidth() * fig.dpi
    return legend


@pytest.mark.slow
def test_figure1_legend_tells_every_method_apart_and_covers_no_panel(tmp_path, drawn):
    size = (21, 27)
    grid = np.stack(np.meshgrid(np.linspace(-2, 2, size[0]), np.linspace(-3, 3, size[1]), indexing="ij"), -1)
    log_prob = -0.5 * (grid ** 2).sum(-1).ravel()
    floor = {"tv": 0.1, "ce": 3.0, "tv_sharp": 0.2, "ce_sharp": 3.1, "entropy": 2.9}
    save_npz(tmp_path / "data.npz", {"log_prob": log_prob},
             {"grid": {"lower": [-2, -3], "upper": [2, 3], "size": list(size)}, "floor": floor,
              "floor_samples": 100, "mass_theta1_positive": 0.5})
    runs = []
    for i, label in enumerate(FIGURE1_LABELS):
        runs.append(tmp_path / "runs" / label / "seed0.npz")
        curve = 1.0 + i / 10 / (1 + np.arange(4.0))
        save_npz(runs[-1], {"visited": np.array([0, 10, 100, 1000]), "final_log_density": log_prob,
                            **{f"curve/{m}": curve for m in ("tv", "ce", "tv_sharp", "ce_sharp")}}, {"method": label})
    figure1.render(tmp_path / "data.npz", runs, tmp_path / "figure1.png")
    legend = outside_legend(drawn[0], tmp_path / "figure1.png")
    assert [t.get_text() for t in legend.get_texts()] == [*FIGURE1_LABELS, "exact draws"]
    assert ([(h.get_color(), h.get_linestyle(), h.get_marker()) for h in legend.legend_handles[:-1]]
            == [triple(styles.style(label)) for label in FIGURE1_LABELS])


def test_table1_and_rate_figures_draw_methods_in_their_looks_outside_the_panels(tmp_path, drawn):
    rate = {"particles": [100, 1000], "rmse": [0.1, 0.03], "seeds": 4, "slope": -0.52, "slope_se": 0.0}
    cost = {axis: {"rows": [{"particles": 100, "dim": 2, "seconds": 0.1, "peak_bytes": 10.0},
                            {"particles": 1000, "dim": 8, "seconds": 0.5, "peak_bytes": 90.0}]}
            for axis in ("particles", "dim")}
    rows = [{"row": "PMD (particles)", "method": "pmd", "kde": False, "measured_rate": rate},
            {"row": "PMD (KDE)", "method": "pmd", "kde": True, "measured_cost": cost},
            {"row": "SGLD", "method": "sgld", "kde": False, "measured_rate": rate, "measured_cost": cost}]
    table1.figure({"rows": rows}, tmp_path / "table1.png")
    legend = outside_legend(drawn[0], tmp_path / "table1.png")
    kde = legend.legend_handles[[t.get_text() for t in legend.get_texts()].index("PMD (KDE)")]
    assert (kde.get_color(), kde.get_linestyle(), kde.get_marker()) == triple(styles.style("pmd_kde"))
    (tmp_path / "rate.json").write_text(json.dumps(rate))
    rate_report.render(tmp_path / "rate.json", tmp_path / "rate.png")
    assert outside_legend(drawn[1], tmp_path / "rate.png").legend_handles[0].get_color() == styles.style("pmd").color


def test_a_curve_with_no_finite_point_is_left_out_and_the_figure_still_saves(tmp_path):
    """A failed run's curve (all NaN) or a cost of zero on a log axis used to crash matplotlib's
    marker spacing (an empty drawn path); plot_line draws the finite points only, or nothing."""
    import matplotlib.pyplot as plt

    from pmd_bench.reports.styles import plot_line, style

    fig, ax = plt.subplots()
    plot_line(ax, [1.0, 2.0, 3.0], [np.nan, np.nan, np.nan], style("sgld"), label="sgld")
    plot_line(ax, [0.0, 10.0, 100.0], [1.0, np.nan, 0.5], style("pmd"), label="pmd")
    ax.set_xscale("log")
    fig.savefig(tmp_path / "f.png")
    plt.close(fig)
    assert [line.get_label() for line in ax.get_lines()] == ["pmd"]
    assert list(ax.get_lines()[0].get_xdata()) == [0.0, 100.0]

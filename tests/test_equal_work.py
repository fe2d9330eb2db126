"""The equal-work campaign (workflow/config/equal_cost.yaml): one cap on work for every method of
an experiment, read by every run, and respected by every archived run made under it."""

from pathlib import Path

import numpy as np
import pytest
import yaml

from pmd.work import UNITS
from pmd_bench.reports.cost import cost_curve
from pmd_bench.workflow import config as config_mod
from pmd_bench.workflow import methods
from pmd_bench.workflow.results import load_npz

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGN = ROOT / "archive" / "equal-cost"


def merged() -> dict:
    standard = yaml.safe_load((ROOT / "workflow/config/standard.yaml").read_text())
    overlay = yaml.safe_load((ROOT / "workflow/config/equal_cost.yaml").read_text())
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(standard.get(key), dict):
            methods_overlay = value.pop("methods", {})
            standard[key].update(value)
            for label, entry in methods_overlay.items():
                standard[key]["methods"][label] = {**standard[key]["methods"].get(label, {}), **entry}
        else:
            standard[key] = value
    return config_mod.validate(standard)


def test_every_method_of_the_campaign_runs_under_one_work_cap():
    """Each experiment of the campaign sets a cap per row, and every method entry's run settings
    carry it as the run's max_work (none overrides it): the cap is on work, not passes."""
    cfg = merged()
    for experiment, rows in (("mixture", cfg["mixture"]["num_data"]), ("logistic", 800)):
        cap = cfg[experiment]["max_work_per_row"]
        for label, entry in cfg[experiment]["methods"].items():
            _, settings = methods.split_spec(label, entry, cfg[experiment])
            assert methods.with_work_cap(settings, rows)["max_work"] == cap * rows, (experiment, label)
    assert cfg["posteriordb"]["max_work_per_row"] > 0


def test_the_cap_is_a_300_particle_gradient_methods_ten_times_standard_passes_in_units():
    """The header's rule, in units (pmd.work.UNITS): a value and a gradient per particle and row,
    300 particles, the campaign's passes (ten times standard's): a unit table measured again moves
    the cap with it."""
    cfg = merged()
    for experiment in ("mixture", "logistic", "posteriordb"):
        section = cfg[experiment]
        per_row = (UNITS["evals"] + UNITS["grad_evals"]) * 300 * section["num_passes"]
        assert section["max_work_per_row"] == pytest.approx(per_row), experiment


def test_archived_equal_work_runs_end_within_the_cap():
    """Every archived run made under a cap (its parameters record ``max_work``) ends with its work,
    start and moves included, at most the cap; a run that failed (a diverged step: no posterior, no
    curve, a cell not reached) records its error instead."""
    files = sorted(CAMPAIGN.glob("**/runs/**/seed*.npz"))
    runs = [(a, m) for a, m in map(load_npz, files) if (m.get("params") or {}).get("max_work")]
    failed = [m for _, m in runs if m.get("status") == "failed"]
    assert all(m["error"] and not m["num_steps"] for m in failed), failed
    capped = [(a, m) for a, m in runs if m.get("status") != "failed"]
    if not capped:
        pytest.skip(f"the archived campaign in {CAMPAIGN.relative_to(ROOT)} predates the work cap "
                    f"({len(files)} run files, none with max_work): rerun it (workflow/config/equal_cost.yaml)")
    for arrays, meta in capped:
        work = float(cost_curve(arrays, "work")[-1])
        assert work <= meta["params"]["max_work"], (meta["method"], meta.get("seed"), work)

"""The unit of work (:mod:`pmd.work`): one table, measured, applied to every method alike.

* Each entry of :data:`pmd.work.UNITS` lies within the rounds of the archived measurement
  (``archive/benchmarks/work_units.json``, ``benchmarks/bench_work_units.py``): a unit changed
  without measuring it again fails here.
* :func:`pmd.work.units` charges every count by its unit, and names a count it has no unit for.
* A method's start given as the old pair ``(evals, grad_evals)`` still counts.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest

import pmd
from baselines_helpers import Conjugate
from pmd.interface import work
from pmd.work import UNITS, WORK, as_counts, units

ROOT = Path(__file__).resolve().parent.parent
# the benchmark's operation measuring each count, and what the count adds beyond it
MEASURED = {"evals": ("value", 0.0), "grad_evals": ("value_and_gradient", 1.0), "hvp_evals": ("hessian_vector", 0.0),
            "pg_draws": ("polya_gamma", 0.0), "gram_rows": ("gram_row", 0.0), "kernel_pairs": ("kernel_pair", 0.0),
            "kde_pairs": ("kde_pair", 0.0)}


def test_every_unit_lies_within_the_archived_measurements_rounds():
    measured = json.loads((ROOT / "archive" / "benchmarks" / "work_units.json").read_text())
    assert set(UNITS) == set(WORK) == set(MEASURED)
    assert measured["settings"]["dim"] == 51 and measured["settings"]["rounds"] >= 5
    for name, (operation, less) in MEASURED.items():
        rounds = np.asarray(measured["ratio_to_value"][operation]) - less
        assert rounds.min() <= UNITS[name] <= rounds.max(), (name, rounds)
        # rounded from the median, not picked from the range's edge (the medians' two significant digits)
        assert abs(UNITS[name] - np.median(rounds)) <= 0.05 * max(1.0, np.median(rounds)), (name, np.median(rounds))


def test_units_charges_every_count_and_names_an_unknown_one():
    counts = {"evals": np.array([2.0, 4.0]), "pg_draws": np.array([1.0, 0.0]), "kernel_pairs": 3.0}
    np.testing.assert_allclose(units(counts), [2 + UNITS["pg_draws"] + 3 * UNITS["kernel_pairs"],
                                               4 + 3 * UNITS["kernel_pairs"]])
    assert units({}) == 0.0
    with pytest.raises(KeyError, match="kernel_pair'"):
        units({"kernel_pair": 1.0})
    with pytest.raises(KeyError, match="hvp"):
        work(1.0, hvp=2.0)
    assert set(work(1.0, kde_pairs=2.0)) == {"evals", "grad_evals", "kde_pairs"}


def test_a_start_given_as_a_pair_or_as_counts():
    assert as_counts((3, 2)) == {"evals": 3.0, "grad_evals": 2.0}
    assert as_counts({"evals": 3, "hvp_evals": 4}) == {"evals": 3.0, "hvp_evals": 4.0}
    with pytest.raises(KeyError, match="hessian"):
        as_counts({"hessian": 1.0})


class _Started:
    """A tiny method whose start made Hessian-vector products, and whose steps count a kernel pair."""

    def __init__(self, model):
        self.inner = pmd.PMD(model, 8, 4, variant="paper", strategy="particles")
        self.start_work = {"evals": 10.0, "hvp_evals": 6.0}
        self.model, self.data_size, self.num_particles = model, 8, 4

    def init(self, key):
        return self.inner.init(key)

    def step(self, key, state, batch):
        state, info = self.inner.step(key, state, batch)
        return state, {**info, **work(info["evals"], kernel_pairs=1.0)}

    def posterior(self, state):
        return self.inner.posterior(state)


def test_the_runner_caps_and_records_work_in_units():
    """The start's Hessian-vector products are on the curves, read as rows (``visited``), and the cap
    is on units: each step costs ``B·m + UNITS['kernel_pairs']`` units."""
    conj = Conjugate.make(num_data=8)
    method = _Started(conj.model)
    start = 10.0 + 6.0 * UNITS["hvp_evals"]
    per_step = 2 * 4 + UNITS["kernel_pairs"]
    result = pmd.run(method, conj.data, jax.random.key(0), batch_size=2, num_passes=1.0, eval_every=2)
    np.testing.assert_allclose(result.curves["work"], start + per_step * np.arange(5))
    assert result.visited[0] == 16 and result.curves["hvp_evals"][0] == 6.0
    capped = pmd.run(method, conj.data, jax.random.key(0), batch_size=2, num_passes=1.0, eval_every=2,
                     max_work=start + 2.5 * per_step)
    np.testing.assert_allclose(capped.curves["work"], start + per_step * np.arange(3))

"""The NUTS reference's convergence gate (R-hat, bulk and tail ESS, divergences) on synthetic chains."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest

from pmd_bench.workflow.reference import ConvergenceError, check_convergence


def _idata(draws: np.ndarray, diverging: int = 0):
    chains, n = draws.shape[:2]
    div = np.zeros((chains, n), bool)
    div.flat[:diverging] = True
    return az.from_dict(posterior={"w": draws}, sample_stats={"diverging": div})


def test_independent_chains_pass():
    draws = np.random.default_rng(0).normal(size=(4, 1000, 3))  # i.i.d.: R-hat ≈ 1 ± 0.002, ESS ≈ 4000
    out = check_convergence(_idata(draws), "w", max_rhat=1.01, min_ess=400)
    assert out["rhat_max"] < 1.01 and out["ess_bulk_min"] > 2000 and out["chains"] == 4


def test_disagreeing_chains_fail_on_rhat():
    draws = np.random.default_rng(1).normal(size=(4, 1000, 3))
    draws[0, :, 2] += 0.5  # one chain stuck half a standard deviation away in one coordinate
    with pytest.raises(ConvergenceError, match=r"max R-hat .* > 1.01 \(coordinate 2\)"):
        check_convergence(_idata(draws), "w", max_rhat=1.01, min_ess=10)


def test_sticky_chains_fail_on_ess():
    rng = np.random.default_rng(2)
    draws = np.repeat(rng.normal(size=(4, 20, 3)), 50, axis=1)  # each value held for 50 draws: ESS ≈ 80
    with pytest.raises(ConvergenceError, match="min bulk ESS"):
        check_convergence(_idata(draws), "w", max_rhat=1.5, min_ess=400)


def test_divergences_and_single_chain_fail():
    draws = np.random.default_rng(3).normal(size=(4, 500, 2))
    with pytest.raises(ConvergenceError, match="3 divergent transitions"):
        check_convergence(_idata(draws, diverging=3), "w")
    with pytest.raises(ConvergenceError, match="at least 2 chains"):
        check_convergence(_idata(draws[:1]), "w")

"""PMD on the Welling-Teh mixture against its gridded exact posterior (section 6, H.1)."""

import jax
import numpy as np
import pytest

from pmd import PMD, run
from pmd.metrics import Grid, floor, score
from pmd.models.mixture import WellingTehMixture

GRID = Grid((-3.0, -4.0), (3.0, 4.0), (61, 81))


@pytest.fixture(scope="module")
def problem():
    mix = WellingTehMixture()
    x = mix.simulate(0)
    return mix, x, mix.grid_posterior(x, GRID)


def test_exact_posterior_has_both_modes(problem):
    _, _, true = problem
    p = np.exp(np.asarray(true.log_prob))
    right = p[GRID.points[:, 0] > 0].sum()
    assert 0.4 < right < 0.6  # the two modes are the relabelling of each other: nearly ½ each


# (given the data, mass tolerance, TV bound as a multiple of the exact-draw floor)
DEFAULT_CASES = {
    "with_moves": (True, 0.05, 1.5),
    "streaming": (False, 0.1, 2.0),
}


@pytest.mark.parametrize("case", list(DEFAULT_CASES))
def test_default_pmd_keeps_both_modes_at_their_mass(problem, case):
    """``PMD(model, N, m)`` with its defaults (the robust variant), batch 10, two passes, seeds 0-3:
    each mode's mass near the exact 0.54 in every run, and the sharp total variation (LOO KDE),
    averaged over the runs, within a multiple of that of as many exact posterior draws.

    Given the data (``data=x``: the default's IBIS moves, ``pmd.rejuvenation.DEFAULT_MOVES``):
    measured mass errors 0.001-0.009 and total variation 0.10-0.14 against 0.136 for 1000 exact
    draws; the tolerances are 0.05 (3 binomial sd of a mode's mass at 1000 equally weighted
    particles, 0.016) and 1.5× the floor (single floor estimates range 0.12-0.2 over seeds).
    Streaming (no data, no moves): mass errors 0.00-0.06 and total variation 0.13-0.28, held to
    0.1 (2.5 times the run-to-run spread measured over 20 runs at m = 1500, 0.04 RMS) and 2×
    (the paper variant on the same settings loses a mode, mass 0.0 or 1.0, about one run in ten)."""
    given_data, mass_tolerance, tv_factor = DEFAULT_CASES[case]
    mix, x, true = problem
    exact_right = float(np.exp(np.asarray(true.log_prob))[GRID.points[:, 0] > 0].sum())
    algo = PMD(mix.model(), data_size=len(x), num_particles=1000, **({"data": x} if given_data else {}))
    assert (algo.moves is not None) == given_data
    tvs = []
    for seed in range(4):
        post = run(algo, x, jax.random.key(seed), batch_size=10, num_passes=2).posterior
        w, s = np.asarray(post.weights), np.asarray(post.samples)
        right = w[s[:, 0] > 0].sum()
        assert abs(right - exact_right) < mass_tolerance, (seed, right, exact_right)
        tvs.append(score(post, true, jax.random.key(100 + seed), 1000)["tv_sharp"])
    exact = floor(true, jax.random.key(7), 1000)["tv_sharp"]
    assert np.mean(tvs) < tv_factor * exact, (tvs, exact)


@pytest.mark.parametrize("seed", [0, 1])
def test_both_modes_kept_and_tv_falls(problem, seed):
    """Paper variant: weighted particles of the hybrid (KDE redraws when the ESS halves) keep both modes.

    Mode masses: the exact posterior puts 0.54 on θ1 > 0. A particle method's mode balance is set
    by the random early steps (when a mode's particles are first selected), not only by the
    Monte Carlo error sqrt(p(1-p)/ESS) ≈ 0.02; we require each mode to keep at least a quarter
    of the mass (a lost mode gives < 0.05). Total variation (LOO KDE) starts at 0.95 for the prior
    and must end at least 15% lower (measured over seeds 0-3 after two passes: 0.47-0.91, not
    monotone: a KDE redraw can lose ground for a while; exact draws score 0.12-0.2, so this is a
    test of progress, not of accuracy)."""
    mix, x, true = problem
    algo = PMD(mix.model(), data_size=len(x), num_particles=1000, variant="paper", strategy="hybrid",
               bandwidth={"kind": "sqrt", "scale": 1.0})
    result = run(algo, x, jax.random.key(seed), batch_size=10, num_passes=2, eval_every=500,
                 evaluate=lambda post, key: score(post, true, key, 1000))
    post = result.posterior
    w, s = np.asarray(post.weights), np.asarray(post.samples)
    right = w[s[:, 0] > 0].sum()
    assert 0.25 < right < 0.75, right
    tv = result.curves["tv_sharp"]
    assert tv[-1] < 0.85 * tv[0], tv

"""PMD on the Welling-Teh mixture against its gridded exact posterior (section 6, H.1)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmd import PMD, run
from pmd.local_kernel import LocalShrinkage
from pmd.metrics import Grid, floor, score
from pmd.models.mixture import WellingTehMixture
from pmd.rejuvenation import DEFAULT_MOVES, LogTarget, MALAMoves

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


NO_SWEEPS = {**DEFAULT_MOVES, "independence": 0}  # the default's moves before the independence sweeps

# (given the data, the moves (None: the default's), run-to-run sd of a mode's mass measured over 40
# runs, TV bound as a multiple of the exact-draw floor)
DEFAULT_CASES = {
    "with_moves": (True, None, 0.018, 1.5),
    "moves_without_sweeps": (True, NO_SWEEPS, 0.055, 1.5),
    "streaming": (False, None, 0.054, 2.0),
}
RUNS = 4


@pytest.mark.slow
@pytest.mark.parametrize("case", list(DEFAULT_CASES))
def test_default_pmd_keeps_both_modes_at_their_mass(problem, case):
    """``PMD(model, N, m)`` with its defaults (the robust variant), batch 10, two passes, seeds 0-3:
    both modes kept in every run, the mass of the mode θ1 > 0 unbiased, and the sharp total
    variation (LOO KDE), averaged over the runs, within a multiple of that of as many exact draws.

    A mode's mass in one run is a binomial proportion of 1000 independent particles (sd 0.016) only
    if the particles cross between the modes: resampling and moves that do not cross correlate them,
    and the balance is the one the early steps set. Measured over seeds 0-39 at m = 1000 in float32
    (exact mass 0.5406; ``benchmarks/bench_mode_balance.py``, docs/findings.md): given the data
    (``data=x``: the default's moves, ``pmd.rejuvenation.DEFAULT_MOVES``, whose rounds end with
    independence sweeps that cross between the modes), mean error -0.005, run-to-run sd 0.018,
    largest error 0.043 (float64 not measured; seeds 0-3 pass in float64 too); the same moves
    without the sweeps (MALA alone, which never crosses between the modes) sd 0.032 (0.037
    earlier; 0.055 in float64, the bound kept); streaming (no data, no moves), float32: mean
    error 0.004, sd 0.054, largest error 0.15. The tests: every run keeps at least a
    quarter of the mass on each mode (a lost mode gives < 0.05), and the mean over the 4 runs lies
    within 3 standard errors (3 sd / 2) of the exact mass. Total variation on seeds 0-3 in float32
    (given the data, without the sweeps): 0.12-0.14 given the data (with them: 0.136 ± 0.025 over four
    workflow seeds at these settings, docs/results.md, pmd-balanced) and 0.12-0.14 streaming (0.13-0.28
    streaming in earlier measurements), against 0.136 for 1000 exact draws; held to 1.5× the floor
    given the data (single floor estimates range 0.12-0.2 over seeds) and 2× streaming (the paper
    variant on the same settings loses a mode, mass 0.0 or 1.0, about one run in ten)."""
    given_data, moves, mass_sd, tv_factor = DEFAULT_CASES[case]
    mix, x, true = problem
    exact_right = float(np.exp(np.asarray(true.log_prob))[GRID.points[:, 0] > 0].sum())
    algo = PMD(mix.model(), data_size=len(x), num_particles=1000, **({"data": x} if given_data else {}),
               **({"rejuvenate": moves} if moves else {}))
    assert (algo.moves is not None) == given_data
    rights, tvs = [], []
    for seed in range(RUNS):
        post = run(algo, x, jax.random.key(seed), batch_size=10, num_passes=2).posterior
        w, s = np.asarray(post.weights), np.asarray(post.samples)
        rights.append(float(w[s[:, 0] > 0].sum()))
        tvs.append(score(post, true, jax.random.key(100 + seed), 1000)["tv_sharp"])
    assert all(0.25 < r < 0.75 for r in rights), rights
    assert abs(np.mean(rights) - exact_right) < 3 * mass_sd / np.sqrt(RUNS), (rights, exact_right)
    exact = floor(true, jax.random.key(7), 1000, repeats=5)["tv_sharp"]
    assert np.mean(tvs) < tv_factor * exact, (tvs, exact)


@pytest.mark.slow
def test_default_moves_restore_the_modes_masses(problem):
    """One round of ``DEFAULT_MOVES`` (resample, 5 MALA moves, then 2 independence sweeps) on the
    full posterior, from 1000 exact draws weighted so that the mode θ1 > 0 holds 0.8 of the mass (exact: 0.5406), four rounds (keys 0-3): the mean mass after them lies within 0.06 of
    the exact one. MALA alone never crosses between the modes (measured over 8 keys: mass 0.766, the
    0.8 it was given, so a mode's mass in a run is the one the first pass's weights set: sd 0.037
    over 40 seeds, docs/findings.md); the independence sweeps propose from the other half's KDE and
    weigh the modes by the target (:func:`pmd.rejuvenation.independence_sweeps`). Measured with the
    sweeps over 8 keys: mean error +0.021 (what two sweeps leave of a 0.26 imbalance; three leave
    +0.001), sd 0.020 (the binomial sd of 1000 independent draws is 0.016); the bound is that mean
    plus 4 standard errors of a 4-round mean (0.021 + 4 · 0.020 / 2 ≈ 0.06). The same moves without
    the sweeps miss it by 0.17, which the test checks too, so that it can fail."""
    mix, x, true = problem
    exact_right = float(np.exp(np.asarray(true.log_prob))[GRID.points[:, 0] > 0].sum())
    draws = true.sample(jax.random.key(0), 1000)
    right = np.asarray(draws[:, 0] > 0)
    log_w = jnp.asarray(np.where(right, np.log(0.8 / right.mean()), np.log(0.2 / (1 - right.mean()))), jnp.float32)
    def masses(spec):
        moves = MALAMoves.from_spec(spec)
        target = LogTarget(mix.model(), x, moves.block_rows(draws.shape[0]))
        one_round = jax.jit(lambda key: moves(key, draws, log_w, target, jnp.asarray(len(x)), kernel=LocalShrinkage())[0])
        return [float(np.mean(np.asarray(one_round(jax.random.key(seed)))[:, 0] > 0)) for seed in range(4)]

    rights = masses(DEFAULT_MOVES)
    assert all(0.25 < r < 0.75 for r in rights), rights
    assert abs(np.mean(rights) - exact_right) < 0.06, (rights, exact_right)
    assert np.mean(masses(NO_SWEEPS)) - exact_right > 0.15  # MALA alone keeps the 0.8 it was given


@pytest.mark.slow
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

"""PMD on the Welling-Teh mixture against its gridded exact posterior (section 6, H.1)."""

import jax
import numpy as np
import pytest

from pmd import PMD, run
from pmd.metrics import Grid, score
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


@pytest.mark.parametrize("seed", [0, 1])
def test_both_modes_kept_and_tv_falls(problem, seed):
    """Weighted particles of the hybrid (KDE redraws when the ESS halves) keep both modes.

    Mode masses: the exact posterior puts 0.54 on θ1 > 0. A particle method's mode balance is set
    by the random early steps (when a mode's particles are first selected), not only by the
    Monte Carlo error sqrt(p(1-p)/ESS) ≈ 0.02; we require each mode to keep at least a quarter
    of the mass (a lost mode gives < 0.05). Total variation (LOO KDE) starts at 0.95 for the prior
    and must end at least 15% lower (measured over seeds 0-3 after two passes: 0.47-0.91, not
    monotone: a KDE redraw can lose ground for a while; exact draws score 0.12-0.2, so this is a
    test of progress, not of accuracy)."""
    mix, x, true = problem
    algo = PMD(mix.model(), data_size=len(x), num_particles=1000, strategy="hybrid",
               bandwidth={"kind": "sqrt", "scale": 1.0})
    result = run(algo, x, jax.random.key(seed), batch_size=10, num_passes=2, eval_every=500,
                 evaluate=lambda post, key: score(post, true, key, 1000))
    post = result.posterior
    w, s = np.asarray(post.weights), np.asarray(post.samples)
    right = w[s[:, 0] > 0].sum()
    assert 0.25 < right < 0.75, right
    tv = result.curves["tv_sharp"]
    assert tv[-1] < 0.85 * tv[0], tv

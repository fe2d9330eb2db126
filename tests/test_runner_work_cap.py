"""The runner's work cap (``max_work``): equal work for every method, the start included."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd
from pmd import ConfigError, run
from pmd.models.conjugate import ConjugateGaussian
from pmd.work import WORK, units


def test_a_work_cap_stops_the_run_before_the_step_that_would_pass_it():
    """Equal work, for real: with ``max_work`` the run takes the steps that fit in the cap, its
    start included, and ends there; its final work is at most the cap, and one more step would have
    passed it. SGLD's steps cost ``B`` values and gradients of ``B`` rows each (the same units every
    step of its one chain, :func:`pmd.work.units`), so a cap of 7.5 steps' work keeps 7 steps. The default PMD's steps
    differ (its moves read the data seen so far): capped at half its two passes' work, it is the
    same run cut at the last step that fits."""
    from pmd_bench.baselines import SGLD

    problem = ConjugateGaussian(dim=2)
    _, x = problem.simulate(0, 200)
    data = jnp.asarray(x, jnp.float32)
    sgld = SGLD(problem.model(), 200, num_particles=1, burn_in=0, a=0.01)
    full = run(sgld, data, jax.random.key(0), batch_size=10, num_passes=1)
    per_step = full.curves["work"][-1] / full.num_steps
    capped = run(sgld, data, jax.random.key(0), batch_size=10, num_passes=1, max_work=7.5 * per_step)
    spent = capped.curves["work"][-1]
    assert capped.num_steps == 7 and spent == pytest.approx(7 * per_step) and int(capped.visited[-1]) == 70
    pmd_default = pmd.PMD(problem.model(), 200, 100, data=data)
    free = run(pmd_default, data, jax.random.key(0), batch_size=10, num_passes=2)
    steps = units({name: free.info[name].astype(float) for name in WORK if name in free.info})
    cap = 0.5 * steps.sum()
    capped = run(pmd_default, data, jax.random.key(0), batch_size=10, num_passes=2, max_work=cap)
    k = capped.num_steps
    np.testing.assert_array_equal(capped.info["evals"], free.info["evals"][:k])  # the same run, cut
    spent = capped.curves["work"][-1]
    assert spent == pytest.approx(steps[:k].sum()) and spent <= cap < spent + steps[k]
    assert int(capped.visited[-1]) == int(free.info["visited"][:k].sum())
    with pytest.raises(ConfigError, match="max_work"):
        run(sgld, data, jax.random.key(0), batch_size=10, max_work=0.0)

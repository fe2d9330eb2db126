"""A run's short last batch runs in the program of the others (one compilation per run).

Where ``B`` does not divide the rows a run reads, its last batch is shorter; a second batch shape is
a second compilation of the whole step (5.2 s for one step of PMD's default on a conjugate model, on
a 2-core CPU). PMD's robust variant takes a padded batch instead (``pads_batches``; ``step(...,
num_valid=r)``: the first ``r`` rows are data) and the runner pads the tail with its own rows.
What must hold: the padded step is the short step (same iterate, same rows remembered by the
first-pass moves), and a run with a tail compiles one step program and ends where the unpadded
run ends.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd
from pmd import ConfigError
from pmd.models.conjugate import ConjugateGaussian
from pmd.rejuvenation import DEFAULT_MOVES

N, B = 205, 20
PROB = ConjugateGaussian(dim=2)
_, DATA = PROB.simulate(seed=1, n=N)
ORDER = np.random.default_rng(0).permutation(np.concatenate([np.arange(N), np.arange(N)]))


def _rows(index):
    return jax.tree_util.tree_map(lambda a: jnp.asarray(a)[index], DATA)


def _state_after(method, seen: int):
    """The state after ``seen`` rows of ``ORDER`` in full batches (``seen`` a multiple of ``B``)."""
    state = method.init(jax.random.key(0))
    for t in range(seen // B):
        idx = ORDER[t * B:(t + 1) * B]
        state, _ = method.step(jax.random.key(100 + t), state, _rows(idx), rows=jnp.asarray(idx))
    return state


@pytest.mark.slow
@pytest.mark.parametrize("moves", [None, DEFAULT_MOVES], ids=["no-moves", "default-moves"])
@pytest.mark.parametrize("seen, r", [(100, 7), (200, 9), (220, 13)], ids=["first-pass", "straddles", "pass-two"])
def test_a_padded_batch_is_the_short_batch(moves, seen, r):
    """From the same state and key, ``r`` rows as a batch of ``r`` and as a batch of ``B`` padded with
    repeats of them (``num_valid=r``) give the same iterate: particles, weights, base, exponent, rows
    seen and the first-pass moves' record of them (in the first pass, after the end of pass 1 across
    its boundary, and in pass 2)."""
    method = pmd.PMD(PROB.model(), N, 64, data=DATA, rejuvenate=moves)
    state = _state_after(method, seen)
    idx = ORDER[seen:seen + r]
    padded = np.resize(idx, B)
    key = jax.random.key(7)
    short, short_info = method.step(key, state, _rows(idx), rows=jnp.asarray(idx))
    pad, pad_info = method.step(key, state, _rows(padded), rows=jnp.asarray(padded), num_valid=r)
    assert int(pad.seen) == int(short.seen) == seen + r
    for name in ("positions", "log_weights", "base", "exponent", "order", "mala_step"):
        np.testing.assert_allclose(getattr(pad, name), getattr(short, name), rtol=1e-5, atol=1e-6, err_msg=name)
    if moves is not None:
        assert int(pad_info["visited"]) == int(short_info["visited"])
        assert bool(pad_info["moved"]) == bool(short_info["moved"])


@pytest.mark.slow
def test_a_run_with_a_tail_compiles_one_step_program_and_ends_where_the_unpadded_run_ends():
    """1.5 passes of N = 205 in batches of 20: 15 full batches and a tail of 8 rows. PMD pads the tail:
    the compilation clock moves at the first window only (the tail is in the last window's
    program), where a method without padding compiles a second program for it; both runs end on
    the same iterate."""
    class Unpadded(pmd.PMD):
        pads_batches = False

    settings = {"batch_size": B, "num_passes": 1.5, "eval_every": 5 * B, "evaluate": lambda p, k: {},
                "key": jax.random.key(3)}
    padded = pmd.run(pmd.PMD(PROB.model(), N, 64, data=DATA), DATA, **settings)
    unpadded = pmd.run(Unpadded(PROB.model(), N, 64, data=DATA), DATA, **settings)
    assert padded.num_steps == unpadded.num_steps == 16 and int(padded.state.seen) == int(unpadded.state.seen) == 308
    assert padded.visited[-1] == unpadded.visited[-1]  # the rows streamed and the moves' reads
    steps_compiling = lambda result: np.count_nonzero(np.diff(result.curves["compile_time"]))  # noqa: E731
    assert steps_compiling(padded) == 1 and steps_compiling(unpadded) == 2
    np.testing.assert_allclose(padded.state.positions, unpadded.state.positions, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(padded.state.log_weights, unpadded.state.log_weights, rtol=1e-5, atol=1e-6)


def test_padding_is_refused_where_it_is_not_taken_and_outside_the_batch():
    """The paper variant's step has no segments to end early: ``num_valid`` is refused, by name; and
    the robust variant refuses a count of data rows that is not 1 to the batch's size."""
    paper = pmd.PMD(PROB.model(), N, 64, variant="paper")
    with pytest.raises(ConfigError, match="num_valid"):
        paper.step(jax.random.key(1), paper.init(jax.random.key(0)), _rows(ORDER[:B]), num_valid=5)
    robust = pmd.PMD(PROB.model(), N, 64, rejuvenate=None)
    for bad in (0, B + 1):
        with pytest.raises(ConfigError, match=f"from 1 to its {B} rows; got {bad}"):
            robust.step(jax.random.key(1), robust.init(jax.random.key(0)), _rows(ORDER[:B]), num_valid=bad)

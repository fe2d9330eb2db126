"""The runner compiles one program per run and times it apart: a last window shorter
than the others runs through the same program with its missing steps skipped, and the iterates are
those of one uninterrupted scan."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import pmd
from pmd.models.conjugate import ConjugateGaussian

PROB = ConjugateGaussian(dim=2)
_, DATA = PROB.simulate(seed=0, n=200)


@pytest.mark.slow
def test_a_short_last_window_reuses_the_program_and_changes_no_iterate():
    """20 steps evaluated every 7 (windows of 7, 7 and 6): the compilation clock moves once (a second
    window length was a second program), it is part of the stepping clock, and the final particles
    equal those of one 20-step scan with the same keys."""
    method = pmd.PMD(PROB.model(), data_size=200, num_particles=50, rejuvenate=None)
    settings = {"batch_size": 10, "num_passes": 1.0, "key": jax.random.key(3)}
    windows = pmd.run(method, DATA, eval_every=70, evaluate=lambda p, k: {}, **settings)
    whole = pmd.run(method, DATA, **settings)
    compile_time = windows.curves["compile_time"]
    assert len(compile_time) == 4 and np.count_nonzero(np.diff(compile_time)) == 1
    assert 0 < windows.compile_seconds == compile_time[-1] <= windows.step_seconds
    assert len(windows.info["ess"]) == 20  # the skipped steps' infos are dropped
    np.testing.assert_allclose(windows.state.positions, whole.state.positions, rtol=1e-6)
    np.testing.assert_allclose(windows.state.log_weights, whole.state.log_weights, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_the_init_is_on_both_clocks_and_its_compilation_is_counted_once():
    """The runner times the method's init (a jitted program for PMD) in the stepping clock and what
    it compiles in the compilation clock, from the first evaluation on: on a new object the init
    compiles (compile_time[0] > 0, within init_seconds); a second run of the same object finds it
    compiled (compile_time[0] == 0, nothing else compiles before the first step)."""
    method = pmd.PMD(PROB.model(), data_size=200, num_particles=50, rejuvenate=None)
    settings = {"batch_size": 10, "num_passes": 1.0, "eval_every": 100, "evaluate": lambda p, k: {}}
    first = pmd.run(method, DATA, key=jax.random.key(0), **settings)
    again = pmd.run(method, DATA, key=jax.random.key(1), **settings)
    assert 0 < first.curves["compile_time"][0] <= first.init_seconds == first.curves["wall_time"][0]
    assert again.curves["compile_time"][0] == 0 < again.init_seconds == again.curves["wall_time"][0]


@pytest.mark.slow
def test_a_second_run_of_the_same_object_compiles_nothing():
    """Compile once per model and shape: the step programs stay with the method object, so
    its second run (another key) compiles nothing and ends where a new object's run with that key
    ends; the cache goes with the object."""
    import gc
    import weakref

    from pmd.runner import _PROGRAMS

    settings = {"batch_size": 10, "num_passes": 2.0}
    method = pmd.PMD(PROB.model(), data_size=200, num_particles=50, data=DATA)  # the default, with its moves
    first = pmd.run(method, DATA, key=jax.random.key(0), **settings)
    again = pmd.run(method, DATA, key=jax.random.key(1), **settings)
    fresh = pmd.run(pmd.PMD(PROB.model(), data_size=200, num_particles=50, data=DATA), DATA,
                    key=jax.random.key(1), **settings)
    assert first.compile_seconds > 0 and fresh.compile_seconds > 0
    assert again.compile_seconds == 0
    np.testing.assert_array_equal(again.state.positions, fresh.state.positions)
    np.testing.assert_array_equal(again.state.log_weights, fresh.state.log_weights)
    alive, key = weakref.ref(method), id(method)
    assert key in _PROGRAMS
    del method
    gc.collect()
    assert alive() is None and key not in _PROGRAMS  # nothing the cache holds keeps the object alive
    assert all(ref() is not None for ref, _ in _PROGRAMS.values())


def test_nested_compilation_events_are_counted_once():
    """A jit traced inside another's trace reports its tracing within the outer's: the clock takes
    the union of the reported intervals (0.2 s here), not their sum (0.3 s), so that a method's
    compilation cannot exceed its wall time; events of other kinds are not compilation."""
    from pmd.runner import COMPILE_EVENTS, compilation_seconds

    with compilation_seconds() as compiling:
        jax.monitoring.record_event_duration_secs(COMPILE_EVENTS[0], 0.2)  # the outer trace, just ended
        jax.monitoring.record_event_duration_secs(COMPILE_EVENTS[0], 0.1)  # an inner one, within it
        jax.monitoring.record_event_duration_secs("/pmd_bench/test/not_compilation", 5.0)
    assert abs(compiling() - 0.2) < 0.01
    jax.monitoring.record_event_duration_secs(COMPILE_EVENTS[2], 1.0)  # after the block: not counted
    assert abs(compiling() - 0.2) < 0.01


def test_a_reference_finishes_its_own_work_before_any_method_is_timed():
    """``SampleReference``'s self term (``O(n²)`` distances) is computed when it is built, not left
    to JAX's asynchronous dispatch: left pending, it ran on the clock of whatever blocked next, the
    first method a benchmark timed (2.3 s of PMD's time at N = 2·10⁵, bench_growing_n.py). At
    n = 6,000 the term takes about 0.1 s, so it cannot be ready the instant its dispatch returns."""
    from pmd.sample_metrics import SampleReference

    draws = np.random.default_rng(0).normal(size=(6000, 5))
    assert SampleReference(draws).self_term.is_ready()

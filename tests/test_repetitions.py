"""Several seeds of a method in one job (workflow/repetitions.py): one after another, each seed's
result file holds what a job of its own would have written, and its clock starts at the method's
construction."""

import numpy as np
import pytest

from pmd_bench.workflow.experiments import mixture
from pmd_bench.workflow.repetitions import run_seeds
from pmd_bench.workflow.results import load_npz

CFG = {"num_data": 100, "data_seed": 0, "true_theta": [1.0, -2.0], "batch_size": 10, "num_passes": 1,
       "eval_every": 50, "score_samples": 20, "grid": {"lower": [-3.0, -4.0], "upper": [3.0, 4.0], "size": [13, 17]},
       "methods": {"smc": {"num_particles": 20}, "svi": {"family": "fullrank", "num_particles": 2}}}
TIMES = ("curve/wall_time", "curve/compile_time")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("mixture") / "data.npz"
    mixture.make_data(CFG, path)
    return path


@pytest.mark.slow
def test_seeds_one_after_another_write_what_a_job_each_writes(data, tmp_path):
    """Seeds 0 and 1 in one process, and seed 1 alone in a fresh preparation: the same curves to the
    last bit (the same programs, the same keys); only the seconds differ, and the later seed compiled
    next to nothing (it ran the first seed's programs: measured 0.03 s against 0.8 s)."""
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    together = [tmp_path / "seed0.npz", tmp_path / "seed1.npz"]
    run_seeds(mixture.prepare(CFG, "smc", data), [0, 1], together, uri, "t", vectorised=False)
    alone = tmp_path / "alone1.npz"
    run_seeds(mixture.prepare(CFG, "smc", data), [1], [alone], uri, "t")
    (a, meta_a), (b, _) = load_npz(together[1]), load_npz(alone)
    assert sorted(a) == sorted(b)
    for name in a:
        if name not in TIMES:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert "batched" not in meta_a
    first, _ = load_npz(together[0])
    assert a["curve/compile_time"][-1] < 0.2 * first["curve/compile_time"][-1]


@pytest.mark.slow
def test_the_clock_starts_at_the_construction(data, tmp_path):
    """SVI fits its Laplace start in its constructor: that time is on its clock (the curve
    ``wall_time`` starts there, and so does ``compile_time`` with the fit's compilation), as the
    fit's likelihood terms are in its work; before, its clock started at ``init``."""
    prep = mixture.prepare(CFG, "svi", data)
    seconds, compiling = prep.start
    assert seconds > 0 and 0 <= compiling <= seconds
    out = tmp_path / "svi.npz"
    run_seeds(prep, [0], [out], f"sqlite:///{tmp_path / 'mlruns.db'}", "t")
    arrays, meta = load_npz(out)
    assert arrays["curve/wall_time"][0] >= seconds and arrays["curve/compile_time"][0] >= compiling
    assert arrays["curve/evals"][0] > 0  # the start's work, counted before (the clock now agrees)


@pytest.mark.slow
def test_a_start_reads_the_data_on_the_run(data, tmp_path):
    """The Laplace start's reads of the data set are rows visited by the run, counted before its
    first step (they were not: ``visited`` began at 0 while the start's likelihood terms were in the
    work), so a cost in data read includes the start as its work and seconds do."""
    prep = mixture.prepare(CFG, "svi", data)
    out = tmp_path / "svi.npz"
    run_seeds(prep, [0], [out], f"sqlite:///{tmp_path / 'mlruns.db'}", "t")
    arrays, _ = load_npz(out)
    start_reads = prep.method.start_work["evals"] + prep.method.start_work["hvp_evals"]
    assert start_reads >= CFG["num_data"] and arrays["visited"][0] == start_reads
    assert arrays["visited"][-1] == start_reads + CFG["num_passes"] * CFG["num_data"]

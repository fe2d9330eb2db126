"""``pmd-bench check-method``: the README's template passes every point; a method that breaks one
point fails there, named, with exit status 1; every built-in generic method passes."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from pmd_bench.workflow.check_method import POINTS, check_method
from pmd_bench.workflow.cli import main
from pmd_bench.workflow.methods import METHODS, handles

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "my_method.py"

# The template with one fault each: the line replaced, the point that must fail, words of its reason.
FAULTS = {
    "numpy_init": ("        return self.model.sample_prior(key, self.num_particles)",
                   "        import numpy as np\n"
                   "        return jnp.asarray(np.random.normal(size=(self.num_particles, self.model.dim)), jnp.float32)",
                   "init is pure in its key", "different states"),
    "nan_step": ("        return state, work(evals=terms, grad_evals=terms)",
                 "        return state * jnp.nan, work(evals=terms, grad_evals=terms)",
                 "finite output", "NaN"),
    "no_posterior": ("    def posterior(self, state: jax.Array) -> ParticlePosterior:",
                     "    def _unused(self, state: jax.Array) -> ParticlePosterior:",
                     "posterior", "no posterior"),
    "no_work": ("        return state, work(evals=terms, grad_evals=terms)",
                "        return state, {}", "work reported", "charges m·B"),
    "wrong_sign": ("        state = state + 0.5 * self.epsilon * grads",
                   "        state = state + 0.5 * self.epsilon * grads * jnp.array([1.0, -1.0])",
                   "accuracy on a conjugate model", "posterior sd"),
}


def _faulty(tmp_path: Path, fault: str) -> str:
    old, new, _, _ = FAULTS[fault]
    text = EXAMPLE.read_text()
    assert old in text, f"the template no longer holds {old!r}"
    path = tmp_path / f"{fault}.py"
    path.write_text(text.replace(old, new))
    return f"{path}:LangevinEnsemble"


def test_template_passes_every_point(capsys):
    assert len(EXAMPLE.read_text().splitlines()) < 80  # the README promises a short template
    assert main(["check-method", f"{EXAMPLE}:LangevinEnsemble"]) == 0
    out = capsys.readouterr().out
    assert out.count("PASS") == len(POINTS) and "FAIL" not in out


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_fault_fails_its_point(tmp_path, capsys, fault):
    _, _, point, reason = FAULTS[fault]
    assert main(["check-method", _faulty(tmp_path, fault)]) == 1
    line = next(line for line in capsys.readouterr().out.splitlines() if f"  {point}  " in line or
                line.rstrip().endswith(f"  {point}"))
    assert line.lstrip().startswith("FAIL") and reason in line, line


def test_names_what_is_missing(tmp_path):
    path = tmp_path / "bare.py"
    path.write_text("class Bare:\n    def __init__(self, model, data_size, num_particles=1):\n        pass\n")
    report = check_method(f"{path}:Bare")
    assert not report.ok and report.checks[0].name == "class" and "method_family" in report.checks[0].detail
    assert [c.name for c in report.checks] == list(POINTS)
    assert not check_method(f"{path}:Missing").ok  # a class the file does not define
    assert "defines no 'Missing'" in check_method(f"{path}:Missing").checks[0].detail


# Peers whose library defaults miss the accuracy point at check-method's budget (40 steps of 25 rows
# on N = 500): measured, each a step size for a problem of another scale. The workflow's configs set
# them (workflow/config/*.yaml); strict, so a peer that starts passing fails here until moved out.
LIBRARY_DEFAULTS_MISS = {
    "blackjax_svgd": "BlackJAX's SVGD at step_size 0.01 diverges on a likelihood summed over N = 500 rows",
    "numpyro_svi": "NumPyro's Adam at learning rate 0.01 is 22 posterior sd short after 40 steps",
}


GENERIC = sorted(n for n in METHODS if "model" in handles(METHODS[n]))
_report = functools.cache(check_method)  # one check per method for both tests below


@pytest.mark.slow
@pytest.mark.parametrize("name", GENERIC)
def test_builtin_methods_meet_every_contract_point(name):
    """Every built-in method that runs on a generic model meets every point but the accuracy one
    at its defaults (the next test)."""
    report = _report(name)
    assert all(c.ok for c in report.checks[:-1]), str(report)


@pytest.mark.slow
@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(reason=LIBRARY_DEFAULTS_MISS[n], strict=True))
    if n in LIBRARY_DEFAULTS_MISS else n for n in GENERIC])
def test_builtin_methods_are_accurate_at_their_defaults(name):
    """... and is within the accuracy point's generous bounds (5 posterior sd and a factor 3, module
    docstring), but for the peers whose library defaults are for problems of another scale."""
    report = _report(name)
    assert report.checks[-1].ok, str(report)


def test_a_method_that_reports_no_work_is_charged_its_batches_and_the_cost_table_says_so(tmp_path):
    import jax
    import numpy as np

    from pmd import run
    from pmd.models.conjugate import ConjugateGaussian
    from pmd_bench.reports import cost
    from pmd_bench.workflow.methods import resolve
    from pmd_bench.workflow.results import save_npz

    cls = resolve(_faulty(tmp_path, "no_work"))
    x = ConjugateGaussian(dim=2).simulate(0, 60)[1].astype(np.float32)
    result = run(cls(ConjugateGaussian(dim=2).model(), data_size=60, num_particles=7), x, jax.random.key(0),
                 batch_size=25, num_passes=1, eval_every=25)
    assert list(result.curves["evals"]) == [0.0, 7 * 25, 7 * 50, 7 * 60]  # m·B a step, the last step's 10 rows
    assert list(result.curves["grad_evals"]) == [0.0] * 4 and result.curves["work_charged"][-1] == 1.0
    files = []
    for label, charged in (("mine", 1.0), ("other", 0.0)):
        arrays = {"visited": np.array([0, 30, 60]), "curve/wall_time": np.array([0.0, 1.0, 2.0]),
                  "curve/evals": np.array([0.0, 10.0, 20.0]), "curve/grad_evals": np.zeros(3),
                  "curve/work_charged": np.full(3, charged), "curve/tv_sharp": np.array([1.0, 0.2, 0.1])}
        files.append(tmp_path / "runs" / label / "seed0.npz")
        save_npz(files[-1], arrays, {"method": label, "seed": 0})
    data = tmp_path / "data.npz"
    save_npz(data, {"log_prob": np.zeros(3)}, {"floor": {"tv": 0.9, "tv_sharp": 0.2}})
    text = cost.render("mixture", files, tmp_path / "cost.md", tmp_path / "cost.png", data)
    assert "Work charged, not counted: `mine` report no work" in text and "`other`" not in text

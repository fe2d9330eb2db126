"""``pmd-bench regress``: it fails on a deliberately broken PMD, passes on a change of seed, names
what is missing, and the committed baseline belongs to the current ci config.

The two end-to-end tests regress Theorem 5's rate (``--only rate``), the part of the ci config that
is PMD's update alone and the cheapest to rerun (about 15 s); they run exactly what the workflow's
rule ``rate`` runs, with the ci config's particle counts and replicates.
"""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pmd_bench.workflow import cli
from pmd_bench.workflow import config as config_mod
from pmd_bench.workflow import regress

ROOT = Path(__file__).resolve().parents[1]
CI_CONFIG = ROOT / "workflow" / "config" / "ci.yaml"
CI = config_mod.load(CI_CONFIG)
BASELINE = ROOT / CI["regress"]["baseline"]
needs_baseline = pytest.mark.skipif(not BASELINE.exists(), reason=f"no committed baseline {BASELINE.name} yet: "
                                    "README, Regression check, makes it")

# `pmd-bench <argv[1] as JSON>` in a subprocess; {patch} runs first.
CLI = """
import json, sys
{patch}
from pmd_bench.workflow.cli import main
sys.exit(main(json.loads(sys.argv[1])))
"""
# Flip the sign of the likelihood term of PMD's update (eq. 5-7: N · mean log p(x|θ)), both variants.
BROKEN = """
import pmd.algorithm
assert hasattr(pmd.algorithm.PMD, "_mean_loglik"), "PMD's likelihood term moved: update this test"
_loglik = pmd.algorithm.PMD._mean_loglik
pmd.algorithm.PMD._mean_loglik = lambda self, positions, batch: -_loglik(self, positions, batch)
"""


# A change of seed: every PRNG key of the process drawn from another seed (the code unchanged).
RESEEDED = """
import jax
_key = jax.random.key
jax.random.key = lambda seed, *args, **kwargs: _key(seed + 1_000_003, *args, **kwargs)
"""


def _rate(results: Path, patch: str) -> None:
    """The rule ``rate``'s command for the ci config, writing ``results/figures/rate.json``."""
    argv = ["rate", "--particles", *map(str, CI["rate"]["particles"]), "--seeds", str(CI["rate"]["seeds"]),
            "--out", str(results / "figures" / "rate.json")]
    proc = subprocess.run([sys.executable, "-c", CLI.format(patch=patch), json.dumps(argv)], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]


def _regress(capsys, results: Path, *args: str) -> tuple[int, str]:
    code = cli.main(["--config", str(CI_CONFIG), "regress", "--results", str(results), *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_paths_select_by_whole_segments():
    assert regress.selected("mixture/pmd/tv", ["mixture/pmd"])
    assert not regress.selected("mixture/pmd_paper/tv", ["mixture/pmd"])
    assert regress.selected("rate/pmd/slope", ["rate"]) and regress.selected("rate/pmd/slope", ["rate/"])
    assert regress.selected("lda/smc/log_perplexity", None)


def test_band_is_k_sd_or_the_floor():
    wide = regress.band(1.0, 0.1, dof=4, num_metrics=100)
    assert wide["k"] == pytest.approx(10.3, abs=0.1)  # t_4 quantile at 1 - 0.05 / 200
    assert wide["halfwidth"] == pytest.approx(wide["k"] * 0.1)
    assert regress.band(2.0, 0.0, dof=4, num_metrics=100)["halfwidth"] == pytest.approx(2e-3)  # the floor


@needs_baseline
def test_committed_baseline_matches_the_ci_config():
    baseline = regress.load_baseline(BASELINE)
    regress.check_sections(baseline, CI, BASELINE)  # raises naming the field when ci.yaml moved on
    # ... and against the config the ci workflow resolves (schema defaults filled in): what
    # `pmd-bench regress` reads back from results/config.yaml after the workflow.
    regress.check_sections(baseline, config_mod.with_defaults(CI), BASELINE)
    groups = {key.rsplit("/", 1)[0] for key in baseline["metrics"]}
    expected = set(regress.run_folders(CI, "results")) | {"rate/pmd"}
    expected |= {g for g in groups if g.startswith("posteriordb/")}  # present only with the mirror
    assert groups == expected, sorted(groups ^ expected)
    for key, entry in baseline["metrics"].items():
        assert entry.get("lower", -1) <= entry.get("mean", 0) <= entry.get("upper", 1), key


def test_a_setting_added_after_the_baseline_compares_by_its_default():
    """A baseline written before ``logistic.reference.metric`` existed (its sections lack the
    field): the default ("adapted", the only sampler then) is no difference, another value is."""
    sections = {"logistic": config_mod.with_defaults(CI)["logistic"]}
    del sections["logistic"]["reference"]["metric"]
    baseline = {"sections": sections, "metrics": {}}
    regress.check_sections(baseline, config_mod.with_defaults(CI), "old.json")
    moved = copy.deepcopy(CI)
    moved["logistic"]["reference"]["metric"] = "laplace"
    with pytest.raises(ValueError, match="logistic/reference/metric: 'adapted' in the baseline, 'laplace' here"):
        regress.check_sections(baseline, moved, "old.json")


def _tiny_baseline(path: Path) -> Path:
    """A baseline of two mixture metrics (the file layout :func:`regress.write_baseline` writes)."""
    entry = {"mean": 0.5, "sd": 0.01, "sd_pred": 0.011, "dof": 4, "source": "seeds", "nan_runs": 0,
             "values": {f"seed{s}": 0.5 for s in range(5)}, **regress.band(0.5, 0.011, 4, 2)}
    path.write_text(json.dumps({"sections": {}, "metrics": {"mixture/pmd/tv": entry, "mixture/pmd_paper/tv": entry}}))
    return path


def test_a_missing_metric_is_named_and_fails(tmp_path, capsys):
    baseline = _tiny_baseline(tmp_path / "baseline.json")
    code, out = _regress(capsys, tmp_path, "--baseline", str(baseline), "--only", "mixture/pmd")
    assert code == 1
    assert "| mixture/pmd/tv | - | — |" in out and "MISSING: no result file holds this metric" in out
    assert "mixture/pmd_paper" not in out  # --only works by path segment


def test_an_unknown_prefix_is_an_error(tmp_path, capsys):
    baseline = _tiny_baseline(tmp_path / "baseline.json")
    code, out = _regress(capsys, tmp_path, "--baseline", str(baseline), "--only", "mixtures")
    assert code == 2 and "--only mixtures selects none" in out


@pytest.mark.slow
@needs_baseline
def test_broken_pmd_update_fails(tmp_path, capsys):
    _rate(tmp_path, BROKEN)
    code, out = _regress(capsys, tmp_path, "--only", "rate")
    assert code == 1, out
    assert "| rate/pmd/rmse_m100 | rate.json |" in out and "| OUT |" in out


@pytest.mark.slow
@needs_baseline
def test_a_change_of_seed_passes(tmp_path, capsys):
    _rate(tmp_path, RESEEDED)
    result = json.loads((tmp_path / "figures" / "rate.json").read_text())
    baseline = json.loads(BASELINE.read_text())["metrics"]
    assert result["rmse"][0] != baseline["rate/pmd/rmse_m100"]["mean"]  # another seed: other numbers
    code, out = _regress(capsys, tmp_path, "--only", "rate")
    assert code == 0, out
    assert "3 values of 3 metrics: 3 ok" in out


def test_a_partial_rewrite_keeps_the_other_metrics(tmp_path):
    """``regress --write-baseline --only mixture/pmd``: the pmd metrics are measured again from the
    results (mean and spread of the seeds' final values), pmd_paper's are kept as they were, every
    band is recomputed over the union, and the rewrite is recorded; a prefix with no results, or a
    previous baseline of another seed count, is refused, and so is a rewrite that would drop a
    selected metric the results no longer hold."""
    from pmd_bench.workflow.results import save_npz

    for seed, tv in enumerate([0.2, 0.3]):
        save_npz(tmp_path / "results" / "mixture" / "runs" / "pmd" / f"seed{seed}.npz",
                 {"curve/tv": [0.9, tv], "curve/tv_sharp": [0.9, tv / 2]}, {"seed": seed})
    out = _tiny_baseline(tmp_path / "baseline.json")
    previous = json.loads(out.read_text()) | {"created": "then", "commit": "abc", "seeds": 2}
    out.write_text(json.dumps(previous))
    baseline = regress.write_baseline(CI, tmp_path / "results", 2, out, only=["mixture/pmd"])
    metrics = baseline["metrics"]
    assert set(metrics) == {"mixture/pmd/tv", "mixture/pmd/tv_sharp", "mixture/pmd_paper/tv"}
    assert metrics["mixture/pmd/tv"]["mean"] == pytest.approx(0.25)
    assert metrics["mixture/pmd/tv"]["sd"] == pytest.approx(0.0707107, rel=1e-5)
    kept = previous["metrics"]["mixture/pmd_paper/tv"]
    assert {k: metrics["mixture/pmd_paper/tv"][k] for k in ("mean", "sd", "values")} == \
        {k: kept[k] for k in ("mean", "sd", "values")}
    assert metrics["mixture/pmd_paper/tv"]["k"] == pytest.approx(regress.band(0.5, 0.011, 4, 3)["k"])  # 3 metrics now
    assert (baseline["created"], baseline["commit"]) == ("then", "abc")
    assert baseline["updates"][-1]["only"] == ["mixture/pmd"]
    assert json.loads(out.read_text()) == baseline
    with pytest.raises(FileNotFoundError, match="missing"):
        regress.write_baseline(CI, tmp_path / "results", 2, out, only=["logistic/pmd"])
    stale = baseline | {"metrics": metrics | {"mixture/pmd/ce": metrics["mixture/pmd/tv"]}}
    out.write_text(json.dumps(stale))  # a selected metric that the results no longer hold
    with pytest.raises(ValueError, match="hold no value of mixture/pmd/ce"):
        regress.write_baseline(CI, tmp_path / "results", 2, out, only=["mixture/pmd"])
    assert json.loads(out.read_text()) == stale  # refused: the file is left as it was
    with pytest.raises(ValueError, match="made from 2 seeds, regress.seeds is 5"):
        regress.write_baseline(CI, tmp_path / "results", 5, out, only=["mixture/pmd"])

"""The tuning protocol (workflow/tuning.py): a validation split, a grid, the held-out log predictive
density as the criterion (the ELBO for a method that maximises it), tuning seeds apart from the
reported ones, and its cost recorded."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scipy import stats

from baselines_helpers import Conjugate
from pmd import ConfigError, GaussianPosterior, ParticlePosterior
from pmd.work import units
from pmd_bench.workflow import tuning


def test_grid_points_are_every_combination():
    assert tuning.grid_points({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    with pytest.raises(ConfigError, match="non-empty list"):
        tuning.grid_points({"a": []})


def test_validation_split_is_disjoint_and_covers_the_rows():
    data = {"x": np.arange(50.0)[:, None], "y": np.arange(50)}
    train, valid = tuning.validation_split(data, 0.2, 0)
    assert len(valid["y"]) == 10 and len(train["y"]) == 40
    assert sorted(np.concatenate([train["y"], valid["y"]]).tolist()) == list(range(50))
    np.testing.assert_array_equal(train["x"][:, 0], train["y"])  # rows stay whole


@pytest.mark.workflow
def test_heldout_lpd_of_a_gaussian_is_its_predictive_density():
    """One datum model ``x ~ N(θ, 1)`` (the conjugate model at d = 1); a point posterior N(0.3, tiny):
    the LPD of the validation rows is the mean of ``log N(x_v; 0.3, 1)``, to Monte Carlo error."""
    conj = Conjugate.make(num_data=100)
    posterior = GaussianPosterior(jnp.asarray([0.3, -0.2]), 1e-4 * jnp.eye(2))
    valid = conj.data[:30]
    lpd = tuning.heldout_lpd(posterior, conj.model, valid, jax.random.key(0), 500)
    exact = np.mean(stats.norm(loc=[0.3, -0.2], scale=conj.problem.noise_std).logpdf(valid).sum(axis=1))
    assert lpd == pytest.approx(exact, abs=1e-3)


@pytest.mark.workflow
def test_tuning_picks_the_working_step_size_and_records_its_cost():
    """SVI from the prior start on the conjugate model, 3 passes: a learning rate of 1e-5 leaves it
    at the prior (a poor predictive), 0.05 converges, 1e4 diverges (no finite LPD: -inf, error kept).
    The protocol must choose 0.05, from the validation rows alone; a grid where every point diverges
    chooses nothing and says why (the tuned run is then the default run)."""
    conj = Conjugate.make(num_data=200)
    spec = {"init": "prior", "family": "fullrank", "num_particles": 4}
    grid = {"learning_rate": [1e-5, 0.05, 1e4]}
    out = tuning.tune("svi", spec, conj.data, {"batch_size": 20, "num_passes": 3}, grid,
                      tuning.rows_criterion(conj.model, 200), seeds=2)
    assert out["chosen"] == {"learning_rate": 0.05}
    by_rate = {p["point"]["learning_rate"]: p for p in out["points"]}
    assert by_rate[0.05]["mean_score"] > by_rate[1e-5]["mean_score"] + 0.1
    assert by_rate[1e4]["mean_score"] == -math.inf
    assert out["criterion"] == "held-out log predictive density per validation row" and out["fraction"] == 0.2
    assert out["seconds"] > 0 and out["evals"] >= 6 * 3 * 160 * 4 and out["grad_evals"] > 0
    failed = tuning.tune("svi", spec, conj.data, {"batch_size": 20, "num_passes": 3},
                         {"learning_rate": [1e4, 1e5]}, tuning.rows_criterion(conj.model, 50), seeds=1)
    assert failed["chosen"] == {} and failed["not_tuned"].startswith("no grid point ran to a finite held-out")
    assert "every score was -inf" in failed["not_tuned"] and len(failed["points"]) == 2  # the evidence is kept


@pytest.mark.workflow
def test_a_point_is_built_once_and_its_start_counted_once():
    """Every tuning seed of a point runs the same method object, so its programs compile once
    (pmd.runner.compiled_programs) and SVI's Laplace start, computed when it is built, is done once and
    counted once: with 3 seeds the work is the start plus three runs' own work (SVI's runs do the same
    work whatever the key), where a build per seed counted the start three times."""
    from pmd_bench.workflow import methods

    conj = Conjugate.make(num_data=200)
    spec = {"init": "laplace", "family": "fullrank", "num_particles": 4}
    settings, grid = {"batch_size": 20, "num_passes": 1}, {"learning_rate": [0.01, 0.05]}
    built = []

    def build(s, model, train, steps):
        built.append(methods.build("svi", s, model, train, steps))
        return built[-1]

    criterion = tuning.rows_criterion(conj.model, 200)
    one = tuning.tune("svi", spec, conj.data, settings, grid, criterion, seeds=1, build=build)
    three = tuning.tune("svi", spec, conj.data, settings, grid, criterion, seeds=3, build=build)
    assert len(built) == 2 * len(grid["learning_rate"])  # one object per point, not one per seed
    start = {name: w * len(grid["learning_rate"]) for name, w in built[0].start_work.items()}
    start["work"] = float(units(built[0].start_work)) * len(grid["learning_rate"])
    assert start["evals"] > 0 and start["grad_evals"] > 0
    for name in ("evals", "grad_evals", "work"):
        assert three[name] == pytest.approx(start[name] + 3 * (one[name] - start[name]), rel=1e-6)
    assert [p["score"][0] for p in three["points"]] == [p["score"][0] for p in one["points"]]  # seed 0 alike


def log_evidence(conj: Conjugate) -> float:
    """``log p(x)`` of the conjugate model: each coordinate's column ``x_{·j} ~ N(μ0, σ² I + s0² 11ᵀ)``."""
    p, n = conj.problem, conj.data.shape[0]
    cov = p.noise_std**2 * np.eye(n) + p.prior_std**2 * np.ones((n, n))
    x = conj.data.astype(np.float64)
    return float(sum(stats.multivariate_normal(np.full(n, p.prior_mean), cov).logpdf(x[:, j]) for j in range(x.shape[1])))


@pytest.mark.workflow
def test_the_elbo_is_the_evidence_less_the_kl_divergence():
    """``ELBO(q) = log p(x) − KL(q ‖ p(θ|x))`` (Blei et al. 2017, eq. 13). At the exact posterior every
    draw's ``log p(x, θ) − log q(θ)`` is ``log p(x)``: equal to float32 rounding on sums of 100 rows
    (relative 1e-5). A Gaussian twice as wide in both coordinates: ``KL = d (2² − 1 − log 2²)/2``
    = 1.61 for d = 2; 20,000 draws give a Monte Carlo sd of about 0.01 (per-draw sd 1.5), so 0.05."""
    conj = Conjugate.make(num_data=100)
    exact = GaussianPosterior(jnp.asarray(conj.mean, jnp.float32), jnp.asarray(np.linalg.cholesky(conj.cov), jnp.float32))
    evidence = log_evidence(conj)
    assert tuning.elbo(exact, conj.model, conj.data, jax.random.key(0), 500) == pytest.approx(evidence, rel=1e-5)
    wide = GaussianPosterior(exact.loc, 2.0 * exact.chol)
    kl = 2 * (4.0 - 1.0 - math.log(4.0)) / 2
    assert tuning.elbo(wide, conj.model, conj.data, jax.random.key(1), 20_000) == pytest.approx(evidence - kl, abs=0.05)
    with pytest.raises(ConfigError, match="needs the posterior's density"):
        tuning.elbo(ParticlePosterior.equally_weighted(jnp.zeros((3, 2))), conj.model, conj.data, jax.random.key(0), 3)


@pytest.mark.workflow
def test_a_method_that_maximises_the_elbo_is_tuned_by_it_on_all_its_data():
    """SVI, NumPyro's SVI and NPV declare that they maximise the ELBO, PMD and SGLD do not. Tuned by the
    ELBO on the conjugate model, SVI from the prior start chooses the rate that converges (as by the
    LPD), runs on every row (no split: ``fraction`` None) and records the criterion."""
    from pmd_bench.workflow.methods import METHODS

    conj = Conjugate.make(num_data=200)
    assert {n for n in ("svi", "numpyro_svi", "npv", "npv_full", "pmd", "sgld", "svgd", "npl")
            if not tuning.criterion_for(METHODS.get(n), conj.model, 10).held_out} == {"svi", "numpyro_svi", "npv", "npv_full"}
    spec = {"init": "prior", "family": "fullrank", "num_particles": 4}
    criterion = tuning.criterion_for(METHODS["svi"], conj.model, 200)
    out = tuning.tune("svi", spec, conj.data, {"batch_size": 20, "num_passes": 3}, {"learning_rate": [1e-5, 0.05, 1e4]},
                      criterion, seeds=2)
    assert out["chosen"] == {"learning_rate": 0.05} and out["fraction"] is None
    assert out["criterion"].startswith("ELBO")
    by_rate = {p["point"]["learning_rate"]: p for p in out["points"]}
    assert by_rate[0.05]["mean_score"] > by_rate[1e-5]["mean_score"] + 10.0  # the prior is far from the posterior
    evidence = log_evidence(conj)  # a lower bound: ELBO ≤ log p(x), to Monte Carlo error (200 draws, sd < 0.5)
    assert all(p["mean_score"] < evidence + 0.5 for p in out["points"])
    assert by_rate[1e4]["mean_score"] == -math.inf
    train, scored = criterion.split(conj.data, 0.2, tuning.TUNING_SEED)  # no rows held out: fit and scored on all
    assert train is conj.data and scored is conj.data
    assert out["evals"] >= 2 * 2 * 3 * 200 * 4  # the two finite points' runs: 3 passes of 200 rows, 4 draws each


def test_a_tie_within_the_seeds_spread_goes_to_the_grids_middle():
    """The mixture's PMD tuning (two seeds a point): its first two means differ by 8e-5, less than
    the standard error of their difference from the two points' spreads over the seeds (3.6e-4),
    so they tie and the tie goes to the grid's middle point, not to the first; the third is 4.0e-4
    below the best, beyond its standard error (2.0e-4). A point ahead by more than its margin
    wins, even on the edge; a noisy point does not widen another's margin; with one seed only
    equal means tie; with no finite point, the first."""
    def points(scores):
        return [{"point": {"eta": eta}, "score": s, "mean_score": float(np.mean(s))}
                for eta, s in zip((0.5, 1.0, 2.0, 4.0), scores)]

    mixture = points([[-2.37804, -2.37788], [-2.37839, -2.37769], [-2.37854, -2.37817]])
    assert tuning.chosen_point(mixture) == (mixture[1], [0, 1])
    clear = points([[-2.3700, -2.3702], [-2.37839, -2.37769], [-2.37854, -2.37817]])
    assert tuning.chosen_point(clear) == (clear[0], [0])
    # the hmm_example SVGD tuning's shape: a very noisy first point beside steady ones
    noisy = points([[-20.0, -5.0], [-1.8, -1.7], [-0.60, -0.55], [-0.37, -0.36]])
    assert tuning.chosen_point(noisy) == (noisy[3], [3])
    one_seed = points([[-1.0], [-1.5], [-1.0]])
    assert tuning.chosen_point(one_seed) == (one_seed[0], [0, 2])  # equally near the middle: the earlier
    failed = [{**p, "mean_score": -math.inf} for p in points([[-math.inf, -1.0]] * 3)]
    assert tuning.chosen_point(failed) == (failed[0], [])


def test_a_posterior_of_one_datum_is_tuned_by_the_stein_discrepancy_of_each_methods_own_draws():
    """One datum leaves nothing to hold out: PMD, SGLD, SVGD and NPL are scored there by minus the
    kernel Stein discrepancy against the posterior on all the data (SVI keeps its ELBO). On the
    conjugate model with one datum, the exact posterior scores above one shifted by one posterior
    sd and above one twice as wide, on each of five keys (1000 draws: the V-statistic's bias,
    0.07 to 0.12 for exact draws, is a tenth of those errors' discrepancies, 1.6 and 0.84). A PMD run on the datum
    is tuned by it, every point finite."""
    from pmd_bench.workflow.methods import METHODS

    conj = Conjugate.make(num_data=1)
    for name in ("pmd", "sgld", "svgd", "npl"):
        criterion = tuning.criterion_for(METHODS[name], conj.model, 1000, rows=1)
        assert not criterion.held_out and "Stein" in criterion.name, name
    assert tuning.criterion_for(METHODS["svi"], conj.model, 1000, rows=1).name.startswith("ELBO")
    assert tuning.criterion_for(METHODS["pmd"], conj.model, 1000, rows=2).held_out
    chol = jnp.linalg.cholesky(jnp.asarray(conj.cov, jnp.float32))
    exact = GaussianPosterior(jnp.asarray(conj.mean, jnp.float32), chol)
    shifted = GaussianPosterior(exact.loc + jnp.sqrt(jnp.diagonal(exact.chol @ exact.chol.T)), chol)
    wide = GaussianPosterior(exact.loc, 2.0 * chol)
    for seed in range(5):
        key = jax.random.key(seed)
        score = {name: tuning.stein_score(post, conj.model, conj.data, key, 1000)
                 for name, post in (("exact", exact), ("shifted", shifted), ("wide", wide))}
        assert score["exact"] > max(score["shifted"], score["wide"]), score
    criterion = tuning.criterion_for(METHODS["pmd"], conj.model, 200, rows=1)
    out = tuning.tune("pmd", {"num_particles": 50}, conj.data, {"batch_size": 1, "num_passes": 2},
                      {"step_size": [{"kind": "harmonic", "eta": 0.5}, {"kind": "harmonic", "eta": 1.0}]},
                      criterion, seeds=1)
    assert out["fraction"] is None and out["criterion"] == criterion.name
    assert all(math.isfinite(p["mean_score"]) for p in out["points"])


@pytest.mark.workflow
def test_tune_and_run_the_choice_through_the_cli(tmp_path, monkeypatch):
    """``pmd-bench tune mixture`` on a grid from the config writes the JSON and an MLflow run
    ``tune-svi``; ``run --tuning`` runs the chosen settings and records the tuning in the result."""
    import yaml
    from mlflow.tracking import MlflowClient

    from pmd_bench.workflow import cli
    from pmd_bench.workflow import config as config_mod
    from pmd_bench.workflow.results import load_npz

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    cfg = config_mod.load(config_mod.DEFAULT_CONFIG.parent / "ci.yaml")
    cfg["mixture"].update(num_passes=0.2, eval_every=100, score_samples=100,
                          grid={"lower": [-3.0, -4.0], "upper": [3.0, 4.0], "size": [21, 27]},
                          tuning={"fraction": 0.2, "seeds": 1, "grids": {"svi": {"learning_rate": [1e-6, 0.05]}}})
    cfg["mixture"]["methods"] = {"svi": {"family": "fullrank", "num_particles": 4, "init": "prior"}}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    data, chosen, out = tmp_path / "data.npz", tmp_path / "tuning.json", tmp_path / "seed0.npz"
    assert cli.main(["--config", str(config), "make-data", "mixture", "--out", str(data)]) == 0
    assert cli.main(["--config", str(config), "tune", "mixture", "--method", "svi", "--data", str(data),
                     "--out", str(chosen)]) == 0
    assert cli.main(["--config", str(config), "run", "mixture", "--method", "svi", "--seed", "0", "--data", str(data),
                     "--out", str(out), "--tuning", str(chosen)]) == 0
    _, meta = load_npz(out)
    assert meta["tuning"]["chosen"] == {"learning_rate": 0.05} and meta["params"]["method.learning_rate"] == 0.05
    assert meta["tuning"]["seconds"] > 0 and meta["tuning"]["evals"] > 0
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("pmd-bench/mixture").experiment_id],
                                filter_string="tags.mlflow.runName = 'tune-svi'")
    assert run.data.params["chosen.learning_rate"] == "0.05" and run.data.metrics["tuning_seconds"] > 0


@pytest.mark.workflow
def test_tuning_overlay_tunes_each_gridded_label_and_runs_it_beside_its_default():
    """workflow/config/tuning.yaml over the default: one `tune` job per gridded label of the mixture,
    logistic and LDA experiments (of the sparse GP: per label and problem), and one tuned run per
    such label (and problem) and seed (the `<label>_tuned` rows of the tables); the overlay keeps its
    own results folder."""
    import yaml

    from pmd_bench.workflow import config as config_mod
    from pmd_bench.workflow import plan

    folder = config_mod.DEFAULT_CONFIG.parent
    overlay = yaml.safe_load((folder / "tuning.yaml").read_text())
    default = yaml.safe_load((folder / "standard.yaml").read_text())  # the overlay's base
    jobs = plan.dry_run([folder / "standard.yaml", folder / "tuning.yaml"])
    for experiment in ("mixture", "logistic", "lda"):
        labels = set(overlay[experiment]["tuning"]["grids"])
        assert labels <= set(default[experiment]["methods"])
        tuned = {w["method"] for rule, w in jobs if rule == "tune" and w["experiment"] == experiment}
        runs = {(w["method"], int(w["seed"])) for rule, w in jobs if rule == "run_tuned" and w["experiment"] == experiment}
        assert tuned == labels
        assert runs == {(m, s) for m in labels for s in range(default[experiment]["seeds"])}
    labels, problems = set(overlay["sparse_gp"]["tuning"]["grids"]), set(default["sparse_gp"]["problems"])
    assert labels <= set(default["sparse_gp"]["methods"])
    tuned = {(w["problem"], w["method"]) for rule, w in jobs if rule == "sparse_gp_tune"}
    runs = {(w["problem"], w["method"], int(w["seed"])) for rule, w in jobs if rule == "sparse_gp_run_tuned"}
    assert tuned == {(p, m) for p in problems for m in labels}
    assert runs == {(p, m, s) for p, m in tuned for s in range(default["sparse_gp"]["seeds"])}
    assert overlay["results_dir"] != default["results_dir"]

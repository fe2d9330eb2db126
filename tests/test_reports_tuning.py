"""What the tuning protocol chose (reports/tuning.py): the table of `pmd-bench tune`
results, the grid's edge, a result that was not tuned, the criterion of each result (an ELBO-tuned
method's, a result written before results named theirs), bad files named, and the CLI end to end."""

import json

import pytest

from pmd_bench.reports import tuning
from pmd_bench.workflow import cli


HELD_OUT = "held-out log predictive density per validation row"


def result(grid: dict, scores: list, chosen: dict, **extra) -> dict:
    points = [{"point": p, "score": [s, s], "mean_score": s, "error": None if s > -1e9 else "FloatingPointError: x"}
              for p, s in zip(({k: v} for k, vs in grid.items() for v in vs), scores)]
    return {"grid": grid, "points": points, "chosen": chosen, "criterion": HELD_OUT, "seconds": 12.5,
            "evals": 1000.0, "grad_evals": 500.0, "fraction": 0.2, "seeds": 2, **extra}


def write(path, content) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content))
    return str(path)


def test_the_table_shows_every_point_the_choice_its_edge_and_the_cost(tmp_path):
    files = [write(tmp_path / "mixture" / "tuning" / "svi.json",
                   result({"learning_rate": [0.003, 0.01, 0.03]}, [-2.5, -2.4, float("-inf")], {"learning_rate": 0.01})),
             write(tmp_path / "mixture" / "tuning" / "npl.json",
                   result({"learning_rate": [0.005, 0.02, 0.05]}, [-2.3, -2.4, -2.45], {"learning_rate": 0.005}))]
    text = tuning.render("mixture", files, tmp_path / "tuning_mixture.md")
    rows = {r.split(" | ")[1]: r for r in text.splitlines() if r.startswith("| —")}
    assert "**learning_rate=0.01: -2.4**" in rows["svi"] and "failed (FloatingPointError: x)" in rows["svi"]
    assert rows["svi"].endswith("| learning_rate=0.01 | no | 12.5 s; 1.5e+03 |")
    assert "| learning_rate=0.005 | yes: learning_rate |" in rows["npl"]  # the best is the grid's first value
    assert "Choices on the grid's edge: 1 of 2" in text and "0.2 of the rows" in text
    assert (tmp_path / "tuning_mixture.md").read_text() == text


def test_targets_come_from_the_folders_and_an_untuned_posterior_says_why(tmp_path):
    untuned = {"grid": {"a": [1, 2]}, "points": [], "chosen": {}, "seconds": 0.0, "evals": 0.0, "grad_evals": 0.0,
               "fraction": 0.2, "seeds": 2, "not_tuned": "one datum (a likelihood that does not factor): no validation split"}
    files = [write(tmp_path / "posteriordb" / "tuning" / "arma11" / "pmd.json", untuned),
             write(tmp_path / "posteriordb" / "tuning" / "kidiq" / "pmd.json",
                   result({"a": [1, 2]}, [-1.0, -2.0], {"a": 1}))]
    text = tuning.render("posteriordb", files, tmp_path / "t.md")
    assert "| arma11 | pmd | — | not tuned: one datum" in text and "| the default's settings |" in text
    assert f"| kidiq | pmd | {HELD_OUT} | **a=1: -1**; a=2: -2 | a=1 | no |" in text  # two values: no edge
    assert "No choice lies on the grid's edge (2 results)" in text


def test_each_result_shows_its_criterion_elbo_and_older_results_included(tmp_path):
    """An ELBO-tuned SVI beside a held-out-tuned PMD: the prose names both criteria and the split; a
    result written before results named their criterion (``lpd``/``mean_lpd``) is the experiment's
    held-out one."""
    elbo = result({"learning_rate": [0.02, 0.2]}, [-50.2, -49.9], {"learning_rate": 0.2},
                  criterion="ELBO on the training data (the method's own objective)", fraction=None)
    older = result({"a": [1, 2]}, [-1.0, -2.0], {"a": 1})
    del older["criterion"]
    older["points"] = [{"point": p["point"], "lpd": p["score"], "mean_lpd": p["mean_score"], "error": None}
                       for p in older["points"]]
    files = [write(tmp_path / "posteriordb" / "tuning" / "mesquite" / "svi.json", elbo),
             write(tmp_path / "posteriordb" / "tuning" / "mesquite" / "pmd.json", older)]
    text = tuning.render("posteriordb", files, tmp_path / "t.md")
    assert "| mesquite | svi | ELBO on the training data (the method's own objective) | learning_rate=0.02: -50.2; "\
           "**learning_rate=0.2: -49.9** |" in text
    assert f"| mesquite | pmd | {HELD_OUT} | **a=1: -1**; a=2: -2 |" in text
    assert f"scored by {HELD_OUT} (0.2 of the rows or documents held out of the training data for validation)" in text
    assert "or, for a method that maximises the ELBO, by that ELBO on all the training data" in text
    only_elbo = tuning.render("posteriordb", files[:1], tmp_path / "u.md")
    assert "for validation" not in only_elbo and "scored by the ELBO on all the training data" in only_elbo


def test_bad_results_are_refused_naming_the_file(tmp_path):
    bad = write(tmp_path / "x" / "svi.json", {"grid": {}})
    with pytest.raises(ValueError, match=r"svi.json: not a tuning result \(no chosen, evals"):
        tuning.render("mixture", [bad], tmp_path / "t.md")
    (tmp_path / "y.json").write_text("{")
    with pytest.raises(ValueError, match="y.json: not a tuning result"):
        tuning.render("mixture", [tmp_path / "y.json"], tmp_path / "t.md")
    with pytest.raises(ValueError, match="no tuning criterion for the experiment 'table1'"):
        tuning.render("table1", [bad], tmp_path / "t.md")
    assert not (tmp_path / "t.md").exists()


def test_cli_report_tuning(tmp_path, capsys):
    f = write(tmp_path / "lda" / "tuning" / "svi.json", result({"eta": [0.1, 0.5]}, [-7.2, -7.1], {"eta": 0.5}))
    out = tmp_path / "figures" / "tuning_lda.md"
    assert cli.main(["report", "tuning", "--tuning", f, "--out", str(out)]) == 2
    assert "--experiment" in capsys.readouterr().err
    assert cli.main(["report", "tuning", "--experiment", "lda", "--tuning", f, "--out", str(out)]) == 0
    assert "minus the one held-out log-perplexity estimator" in out.read_text()
    assert cli.main(["report", "cost", "--experiment", "lda", "--out", str(out), "--figure", "x.png"]) == 2
    assert "report cost needs --runs" in capsys.readouterr().err

"""The archived tuning campaign (archive/tuned/) against workflow/config/tuning.yaml as committed:
the mixture's and logistic regression's tunings, and those of PMD, NPL and SVGD on posteriordb's
one-datum posteriors, ran on the config's grids, and no choice lies on a grid's edge, except where
a bound is stated."""

import json
from pathlib import Path

import pytest
import yaml

from pmd_bench.reports.tuning import on_edge

ROOT = Path(__file__).resolve().parent.parent
TUNED = ROOT / "archive" / "tuned"
CONFIG = yaml.safe_load((ROOT / "workflow" / "config" / "tuning.yaml").read_text())
ONE_DATUM = ("arK-arK", "arma-arma11", "garch-garch11", "gp_pois_regr-gp_regr", "hmm_example-hmm_example")
# a bootstrap of one datum gives every replicate the same objective: NPL's posterior there is a
# point mass at every learning rate (its Stein discrepancy √d at each), so no grid is informative
BOUNDS = {("posteriordb", "npl"): "one datum: a point mass at every learning rate"}


def results():
    for experiment in ("mixture", "logistic"):
        for method in CONFIG[experiment]["tuning"]["grids"]:
            yield experiment, method, TUNED / experiment / "tuning" / f"{method}.json"
    for posterior in ONE_DATUM:
        for method in ("pmd", "npl", "svgd"):
            yield "posteriordb", method, TUNED / "posteriordb" / "tuning" / posterior / f"{method}.json"


@pytest.mark.parametrize("experiment,method,path", list(results()), ids=lambda v: getattr(v, "stem", v))
def test_the_archived_choice_ran_on_the_committed_grid_and_lies_inside_it(experiment, method, path):
    result = json.loads(path.read_text())
    assert result["grid"] == CONFIG[experiment]["tuning"]["grids"][method], "rerun it from tuning.yaml"
    assert "tied" in result  # made by the current protocol (ties to the grid's middle)
    if (experiment, method) not in BOUNDS:
        assert not on_edge(result), (path, result["chosen"])
    if experiment == "posteriordb":
        assert "Stein" in result["criterion"]

"""Table 1 measured (workflow/experiments/table1.py, black_box.py; reports/table1.py): the black-box
probe, the memory measurement and the table's assembly of claims and measurements."""

import json

import pytest
import yaml

from pmd_bench.reports import table1 as table1_report
from pmd_bench.workflow.config import DEFAULT_CONFIG
from pmd_bench.workflow.experiments import black_box, table1


@pytest.mark.workflow
def test_black_box_probe_runs_generic_methods_on_pmd_models_only():
    problems = black_box.probe_problems()
    model, data = problems["logistic"]
    assert black_box.probe("pmd", {"num_particles": 20}, model, data) is None
    why = black_box.probe("pmd", {"num_particles": 20}, *problems["lda"])
    assert why.startswith("ConfigError") and "pmd.Model" in why
    assert "dim=3" in black_box.probe("gibbs", {"num_particles": 20}, model, data)


def test_black_box_settings_come_from_the_configs():
    seen = black_box.configured(yaml.safe_load(DEFAULT_CONFIG.read_text()))
    assert seen["pmd"]["experiments"][:2] == ["mixture", "logistic"]
    assert seen["pmd_gp"]["experiments"] == ["sparse_gp"] and seen["pmd_gp"]["spec"]["num_particles"] == 16
    assert "tomotopy_gibbs" not in seen  # a peer library, not a registry method


@pytest.mark.workflow
def test_pmd_state_is_linear_in_m_and_kde_step_memory_quadratic():
    """Table 1's O(dm) memory for PMD's state, exactly (bytes of the state's arrays); the KDE step's
    peak memory grows faster than m (its m × m kernel matrix), which the paper's O(dm) leaves out."""
    args = dict(dim=4, data_size=100, batch_size=10, repeats=1)
    small, large = (table1.step_cost("pmd", {"variant": "paper", "strategy": "kde"}, m, **args) for m in (200, 400))
    assert 1.9 < large["state_bytes"] / small["state_bytes"] <= 2.0
    assert large["peak_bytes"] / small["peak_bytes"] > 3.0


def test_table_puts_each_measurement_beside_its_claim(tmp_path):
    theorem5 = {"particles": [100, 1000], "rmse": [0.1, 0.03], "seeds": 10, "slope": -0.52, "slope_se_bootstrap": 0.05}
    sgld = {**theorem5, "method": "sgld", "label": "sgld", "slope": -0.31, "spec": {}}
    fit = {"slope": 1.0, "slope_se": 0.1, "intercept": 0.0}
    cost = {"method": "pmd", "label": "pmd_kde", "spec": {"strategy": "kde"},
            **{f"by_{a}": {"time_exponent": fit, "memory_exponent": fit, "state_exponent": fit, "rows": []}
               for a in ("particles", "dim")}}
    probe = {"models": ["conjugate", "lda"], "generic_models": ["conjugate"],
             "methods": {"pmd": {"runs_on": ["conjugate"], "black_box": True}}}
    paths = {}
    for name, obj in (("t5", theorem5), ("sgld", sgld), ("cost", cost), ("bb", probe)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(obj))
    table = table1_report.assemble(paths["t5"], [paths["sgld"]], [paths["cost"]], paths["bb"])
    rows = {r["row"]: r for r in table["rows"]}
    assert rows["PMD (particles)"]["measured_rate"]["slope"] == -0.52 and rows["PMD (particles)"]["rate"] == -0.5
    assert rows["SGLD"]["measured_rate"]["slope"] == -0.31 and abs(rows["SGLD"]["rate"] + 1 / 3) < 1e-12
    assert "measured_cost" in rows["PMD (KDE)"] and "measured_cost" not in rows["PMD (particles)"]
    md = table1_report.markdown(table)
    assert r"| SGLD | Yes | \|⟨q − q*, f⟩\| | O(m^-0.333) | **-0.31 ± 0.05**" in md
    assert "Yes: runs on conjugate (1/1 generic)" in md

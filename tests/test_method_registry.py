"""The method registry: a method named in a config by registry name, by file or by module is found;
a config's method entries are checked against their constructors when the config is read, so a
misspelt hyperparameter fails before any job, named with the keys allowed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from pmd import ConfigError
from pmd_bench.workflow import config as config_mod
from pmd_bench.workflow.config import entries, method_files_from
from pmd_bench.workflow.methods import LDA_PEERS, METHODS, check_config, check_entry, resolve, runs_in

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "my_method.py"


def test_lda_peer_names_are_the_peer_registry():
    from pmd_bench.baselines.peers.topic_models import PEERS

    assert set(LDA_PEERS) == set(PEERS)


@pytest.mark.parametrize("name", ["default", "standard", "paper", "ci", "mnist"])
def test_every_committed_config_passes_its_method_check(name):
    check_config(config_mod.load(ROOT / "workflow" / "config" / f"{name}.yaml"))


def test_a_misspelt_hyperparameter_is_named_with_the_allowed_keys(tmp_path):
    cfg = config_mod.load()
    cfg["mixture"]["methods"]["pmd"]["num_partciles"] = 300
    with pytest.raises(ConfigError, match=r"mixture\.methods\.pmd: pmd takes no 'num_partciles'; its settings: .*"
                                          r"num_particles") as err:
        check_config(cfg)
    assert "data" not in str(err.value).split("its settings:")[1].split("(")[0].split(", ")


def test_an_unknown_method_and_a_method_on_a_target_it_does_not_handle_are_refused():
    with pytest.raises(ConfigError, match="mixture.methods.x: unknown method 'nope'"):
        check_entry("mixture", "x", {"method": "nope"})
    with pytest.raises(ConfigError, match="handles sparse_gp, not the mixture experiment"):
        check_entry("mixture", "x", {"method": "pmd_gp"})
    assert runs_in(METHODS["pmd"], "posteriordb") and not runs_in(METHODS["pmd"], "lda")


def test_a_method_file_is_found_from_the_config_that_names_it(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "method.py").write_text(EXAMPLE.read_text())
    overlay = folder / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"mixture": {"methods": {"langevin": {"method": "method.py:LangevinEnsemble",
                                                                            "step_sise": 0.1}}}}))
    cfg = config_mod.load()
    cfg["mixture"]["methods"]["langevin"] = {"method": "method.py:LangevinEnsemble", "step_sise": 0.1}
    method_files_from(cfg, [config_mod.DEFAULT_CONFIG, overlay])
    assert cfg["mixture"]["methods"]["langevin"]["method"] == f"{folder / 'method.py'}:LangevinEnsemble"
    with pytest.raises(ConfigError, match="takes no 'step_sise'; its settings: num_particles, step_size"):
        check_config(cfg)
    cfg["mixture"]["methods"]["langevin"] = {"method": f"{folder / 'method.py'}:LangevinEnsemble", "step_size": 0.1}
    check_config(cfg)
    assert resolve(cfg["mixture"]["methods"]["langevin"]["method"]).__name__ == "LangevinEnsemble"
    # a config read by the CLI resolves it the same way
    overlay.write_text(yaml.safe_dump({**config_mod.load(), "mixture": {
        **config_mod.load()["mixture"], "methods": {"langevin": {"method": "method.py:LangevinEnsemble"}}}}))
    loaded = config_mod.load(overlay)
    assert [e["method"] for s, _, e in entries(loaded) if s == "mixture"] == [f"{folder / 'method.py'}:LangevinEnsemble"]


def test_a_missing_file_or_class_is_named(tmp_path):
    with pytest.raises(ConfigError, match="method file .*absent.py does not exist"):
        resolve("absent.py:X", tmp_path)
    (tmp_path / "m.py").write_text("class A:\n    pass\n")
    with pytest.raises(ConfigError, match=r"defines no 'B' \(its classes: A\)"):
        resolve("m.py:B", tmp_path)
    (tmp_path / "broken.py").write_text("raise RuntimeError('no')\n")
    with pytest.raises(ConfigError, match="importing it raised RuntimeError: no"):
        resolve("broken.py:A", tmp_path)


def test_an_installed_package_registers_a_method_through_an_entry_point(tmp_path):
    """A package with an entry point in ``pmd_bench.methods`` adds its method to the registry,
    checked in a fresh interpreter (entry points are read from the installed distributions)."""
    dist = tmp_path / "site" / "my_methods-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-methods\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pmd_bench.methods]\nlangevin = my_methods:LangevinEnsemble\n")
    (tmp_path / "site" / "my_methods.py").write_text(EXAMPLE.read_text())
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path / 'site')!r})
        from pmd_bench.workflow.methods import METHODS, check_entry
        assert "langevin" in METHODS and "langevin" in list(METHODS), list(METHODS)
        assert check_entry("mixture", "langevin", {{"step_size": 0.2}}).__name__ == "LangevinEnsemble"
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr

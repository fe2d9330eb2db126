"""The registry's consistency, the ``python -m pmd_bench.datasets`` verbs and the Snakemake dataset targets."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from pmd_bench.datasets.cli import PREPARERS, main
from pmd_bench.datasets.registry import DATASETS, SOURCES
from pmd_bench.datasets.settings import DATA_DIR_ENV, MIRROR_ENV, resolve_settings

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def no_environment(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.delenv(MIRROR_ENV, raising=False)


def test_registry_entries_are_complete():
    for source in SOURCES.values():
        assert source.urls and all(url.startswith("https://") for url in source.urls), source.name
        assert source.licence and source.citation, source.name
        if source.sha256 is not None:
            assert re.fullmatch(r"[0-9a-f]{64}", source.sha256) and source.size > 0, source.name
    for dataset in DATASETS.values():
        assert set(dataset.sources) <= set(SOURCES), dataset.name


def test_every_dataset_can_be_prepared_and_configured():
    assert set(PREPARERS) == set(DATASETS)
    schema = json.loads((REPO / "workflow/schemas/config.schema.json").read_text())
    assert set(schema["properties"]["datasets"]["$defs"]["name"]["enum"]) == set(DATASETS)


def test_settings_resolution_order(monkeypatch, tmp_path):
    assert resolve_settings().data_dir == REPO / "data" and resolve_settings().mirror is None
    section = {"data_dir": str(tmp_path / "config"), "offline_mirror": str(tmp_path / "mirror")}
    assert resolve_settings(section).data_dir == tmp_path / "config"
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "env"))
    monkeypatch.setenv(MIRROR_ENV, "")
    settings = resolve_settings(section)
    assert settings.data_dir == tmp_path / "env" and settings.mirror == tmp_path / "mirror"


def test_list_shows_datasets_and_where_files_are(tmp_path, capsys):
    mirror = tmp_path / "mirror"
    (mirror / "wikipedia").mkdir(parents=True)
    (mirror / "wikipedia/dictnostops.txt").write_text("word\n")
    assert main(["--data-dir", str(tmp_path / "data"), "--mirror", str(mirror), "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in DATASETS)
    assert re.search(r"wikipedia/dictnostops\.txt\s+mirror", out)
    assert re.search(r"mnist/t10k-labels-idx1-ubyte\.gz\s+missing", out)


def test_prepare_writes_the_output_and_a_json_summary(tmp_path, capsys):
    out = tmp_path / "gp.npz"
    assert main(["--data-dir", str(tmp_path), "prepare", "gp1d-synth", "--out", str(out), "--points", "64"]) == 0
    assert json.loads(capsys.readouterr().out) == {"dataset": "gp1d-synth", "out": str(out), "points": 64, "noise": 0.1}
    with np.load(out) as data:
        assert data["y"].shape == (64,)
    with pytest.raises(SystemExit):
        main(["prepare", "gp1d-synth", "--out", str(out), "--points", "0"])
    assert "must be a positive integer, got 0" in capsys.readouterr().err


def test_fetch_without_network_says_what_to_download(tmp_path, monkeypatch, capsys):
    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    monkeypatch.setattr("pmd_bench.datasets.fetch.time.sleep", lambda seconds: None)  # no back-off between retries
    name = "mnist/t10k-labels-idx1-ubyte.gz"
    assert main(["--data-dir", str(tmp_path), "fetch", name]) == 1
    err = capsys.readouterr().err
    assert f"could not download {name}" in err and "no network" in err
    assert all(url in err for url in SOURCES[name].urls)
    assert str(tmp_path / name) in err and MIRROR_ENV in err


def test_verify_flags_a_corrupt_cached_copy(tmp_path, capsys):
    name = "mnist/t10k-labels-idx1-ubyte.gz"
    (tmp_path / name).parent.mkdir(parents=True)
    (tmp_path / name).write_bytes(b"corrupt")
    assert main(["--data-dir", str(tmp_path), "verify", "mnist-6v8"]) == 1
    out = capsys.readouterr().out
    assert f"{name}: FAILED {tmp_path / name}" in out
    assert "mnist/train-images-idx3-ubyte.gz: missing" in out


def _dry_run_targets(tmp_path: Path, configfile: str, env: dict[str, str]) -> set[str]:
    """The dataset outputs Snakemake plans for a config, through workflow/rules/datasets.smk alone."""
    snakefile = tmp_path / "Snakefile"
    snakefile.write_text(
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
        "from pmd_bench.workflow.resources import job_resources\n"  # what common.smk imports for every rule file
        f"configfile: {str(REPO / configfile)!r}\n"
        'RESULTS = config["results_dir"]\n'
        f"include: {str(REPO / 'workflow/rules/datasets.smk')!r}\n"
        "rule all:\n    input: DATASET_TARGETS\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(snakefile),
            "-d",
            str(tmp_path),
            "--dry-run",
            "--config",
            "results_dir=res",
        ],
        capture_output=True,
        text=True,
        # the venv's tools first; the system's after them (the SLURM executor plugin, which Snakemake
        # imports at start-up, runs `which`)
        env={**env, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return set(re.findall(r"res/data/([\w.-]+)", result.stdout + result.stderr))


@pytest.mark.slow
def test_default_config_needs_no_mirror_and_standard_uses_one_when_set(tmp_path):
    default = _dry_run_targets(tmp_path, "workflow/config/default.yaml", {})
    assert default == {"mnist-small-6v8.npz", "gp1d-synth.npz", "wikipedia-pypi"}  # no download beyond PyPI
    assert _dry_run_targets(tmp_path, "workflow/config/default.yaml", {MIRROR_ENV: str(tmp_path)}) == default
    without = _dry_run_targets(tmp_path, "workflow/config/standard.yaml", {})
    assert without == {"mnist-small-6v8.npz", "gp1d-synth.npz", "lda-synth"}
    with_mirror = _dry_run_targets(tmp_path, "workflow/config/standard.yaml", {MIRROR_ENV: str(tmp_path)})
    assert with_mirror == without | {"mnist-6v8.npz", "wikipedia"}

"""pyproject.toml holds the dependencies' compatible ranges, constraints.txt the exact versions measured,
and environment.yml mirrors both; the install adds two import names only."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"]).union(*project["optional-dependencies"].values())
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert set(pip) - {"-e .", "-c constraints.txt"} == wanted and "-c constraints.txt" in pip
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert project["requires-python"] == ">=3.11" and python == "python=3.11"


def test_dependencies_are_ranges_and_constraints_pin_a_point_in_each():
    """Every dependency is a compatible range (a floor and a ceiling, never ``==``, so the package can
    join an environment with other versions), and constraints.txt, which the README's commands,
    ``.ci/run`` and environment.yml install with, pins each to one version inside its range."""
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version.strip()
    for dep in project["dependencies"] + sum(project["optional-dependencies"].values(), []):
        req = Requirement(dep)
        assert "==" not in str(req.specifier) and ">=" in str(req.specifier) and "<" in str(req.specifier), dep
        name = req.name.lower().replace("_", "-")
        assert name in pins, f"constraints.txt does not pin {name}"
        assert req.specifier.contains(pins[name]), f"constraints.txt pins {name}=={pins[name]} outside {dep}"
    assert ' -c constraints.txt' in (ROOT / ".ci" / "run").read_text()


def test_the_packages_list_covers_every_folder():
    """pyproject's explicit package list (needed for the package-dir mapping) names every package on
    disk, each under its import name: a new subfolder with an ``__init__.py`` cannot be left out of
    an install."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = tool["package-dir"]
    on_disk = set()
    for name, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((name, *relative)))
    assert set(tool["packages"]) == on_disk
    assert set(mapping) == {"pmd", "pmd_bench", "pmd_bench.baselines", "pmd_bench.datasets", "pmd_bench.reports",
                            "pmd_bench.workflow"}


def test_installed_top_level_names_are_pmd_and_pmd_bench(tmp_path):
    """Installed (as the README installs it), the project adds exactly two import names, ``pmd`` and
    ``pmd_bench``: from a folder outside the checkout, ``baselines``, ``datasets``, ``workflow`` and
    ``reports`` are not importable from it (Hugging Face's ``datasets`` or OpenAI's ``baselines``, when
    installed, are theirs), and the harness is importable under ``pmd_bench``."""
    probe = """
import importlib.util, json, sys
found = {}
for name in ["baselines", "datasets", "workflow", "reports"]:
    spec = importlib.util.find_spec(name)
    found[name] = spec.origin if spec is not None else None
import pmd, pmd_bench.baselines, pmd_bench.datasets.registry, pmd_bench.reports.cost, pmd_bench.workflow.cli
print(json.dumps({"found": found, "version": pmd_bench.__version__, "sgld": pmd_bench.baselines.SGLD.__module__}))
"""
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": ""}).stdout
    result = json.loads(out)
    ours = {name: origin for name, origin in result["found"].items() if origin and str(ROOT) in origin}
    assert ours == {}, f"installed top-level names shadow other packages: {ours}"
    assert result["sgld"].startswith("pmd_bench.baselines.") and result["version"]


def test_no_code_imports_the_folders_by_their_bare_names():
    """``baselines``, ``datasets``, ``reports`` and ``workflow`` are installed only as ``pmd_bench.*``
    (their bare names are other projects' on the package index): an import by the bare name works
    only where the repository root happens to be on ``sys.path`` (``python -m pytest`` from it) and
    fails under CI's ``.venv/bin/pytest``."""
    import re

    bare = re.compile(r"^\s*(?:from|import)\s+(?:baselines|datasets|reports|workflow)\b", re.MULTILINE)
    found = [f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
             for folder in ("tests", "benchmarks", "examples", "pmd", "baselines", "datasets", "reports", "workflow")
             for path in sorted((ROOT / folder).rglob("*.py")) for text in [path.read_text()]
             for m in bare.finditer(text)]
    assert not found, f"bare imports of the harness's folders (import them as pmd_bench.<folder>): {found}"

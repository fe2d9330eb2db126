"""Every command of README.md's ```bash blocks, checked as written (so the README cannot drift from the tools).

Each command (``&&`` chains split into parts, comments dropped) must match one rule of
:data:`RULES`, the documented substitution list; a command no rule covers fails the test:

* ``ci``: the install and test commands of the quick start; ``.ci/run`` runs them verbatim, so
  the test checks that it contains them (``pip install -e . -c constraints.txt`` is covered by
  ``.ci/run``'s ``pip install -e ".[test]" -c constraints.txt``: the same project with the test
  extra) instead of rerunning them;
* ``dry-run``: ``snakemake ...`` with ``-n`` appended, run in the repository root: an unknown
  flag, a missing config file or a target after ``--configfile`` (read as a config file) fails;
* ``help``: ``mlflow ui ...`` with ``--help`` appended (click rejects unknown options first);
* ``parse``: ``pmd-bench`` / ``pmd-bench-data`` parsed by the CLI's own argument parser; the files
  it reads (``--config``, ``--data``, ``--runs``, ``--reference``) must exist in the repository or be
  written (``--out``) by an earlier command of the same block;
* ``conda``: conda is not installed here: ``environment.yml`` must exist and name the environment
  that ``conda activate`` activates.
"""

import fnmatch
import os
import re
import shlex
import subprocess
from functools import cache
from pathlib import Path

import pytest
import yaml

from pmd_bench.datasets.cli import build_parser as data_parser
from pmd_bench.workflow.cli import _parser as bench_parser

ROOT = Path(__file__).resolve().parents[1]
CI_RUN = (ROOT / ".ci" / "run").read_text()
VENV_BIN = str(Path(os.sys.executable).parent)

RULES = [
    (r"python3 -m venv \.venv", "ci"),
    (r"\.venv/bin/pip install -e \. -c constraints\.txt", "ci"),
    (r'\.venv/bin/pip install -e "\.\[test\]" -c constraints\.txt', "ci"),
    (r'\.venv/bin/pytest -n 2( -m "slow or workflow")?', "ci"),
    (r"(\.venv/bin/)?snakemake .*", "dry-run"),
    (r"(\.venv/bin/)?mlflow ui .*", "help"),
    (r"(\.venv/bin/)?pmd-bench(-data)? .*", "parse"),
    (r"conda (env create -f|activate) .*", "conda"),
]
CI_EQUIVALENT = {".venv/bin/pip install -e . -c constraints.txt": '.venv/bin/pip install -e ".[test]" -c constraints.txt'}
INPUTS = ("config", "data", "runs", "reference")


def readme_commands() -> list[tuple[int, int, str]]:
    """``(block, index in block, command part)`` of every ```bash block of README.md."""
    text = (ROOT / "README.md").read_text()
    out = []
    for b, block in enumerate(re.findall(r"```bash\n(.*?)```", text, re.S)):
        lines = block.replace("\\\n", " ").splitlines()
        commands = [re.sub(r"\s+#.*$", "", line).strip() for line in lines if not line.lstrip().startswith("#")]
        parts = [part.strip() for command in commands if command for part in command.split(" && ")]
        out.extend((b, i, part) for i, part in enumerate(parts))
    return out


COMMANDS = readme_commands()


def rule_of(command: str) -> str:
    """The rule of :data:`RULES` that checks ``command`` (the first whose pattern matches it whole)."""
    for pattern, rule in RULES:
        if re.fullmatch(pattern, command):
            return rule
    raise AssertionError(f"README command {command!r} matches no rule of tests/test_readme_commands.py: add one")


def _run(command: str) -> subprocess.CompletedProcess:
    """``command`` in bash in the repository root, the venv's tools first on PATH (so ``.venv/bin/x`` and
    ``x`` are one command, run once)."""
    return _run_normalised(re.sub(r"(^|\s)\.venv/bin/", r"\1", command))


@cache
def _run_normalised(command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", "TQDM_DISABLE": "1"}
    return subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)


def _written_earlier(block: int, index: int) -> list[str]:
    outs = []
    for b, i, part in COMMANDS:
        if b == block and i < index and rule_of(part) == "parse":
            args = shlex.split(part)
            outs += [args[k + 1] for k, a in enumerate(args[:-1]) if a == "--out"]
    return outs


def _check_parse(block: int, index: int, command: str) -> None:
    args = shlex.split(command)
    program, argv = Path(args[0]).name, args[1:]
    parser = bench_parser() if program == "pmd-bench" else data_parser()
    if program == "pmd-bench" and argv[:1] == ["data"]:  # `pmd-bench data VERB` is the datasets' CLI
        parser, argv = data_parser(), argv[1:]
    try:
        parsed = parser.parse_args(argv)
    except SystemExit as err:
        raise AssertionError(f"README command {command!r} does not parse: exit {err.code}") from err
    earlier = _written_earlier(block, index)
    for name in INPUTS:
        values = getattr(parsed, name, None)
        for value in [values] if isinstance(values, str) else values or []:
            made = any(fnmatch.fnmatch(out, value) or out == value for out in earlier)
            exists = (ROOT / value).exists() or any(ROOT.glob(value))
            assert made or exists, f"README command {command!r}: --{name} {value} neither exists nor is written before"


@pytest.mark.workflow
@pytest.mark.parametrize("block,index,command", COMMANDS, ids=[f"block{b}-{i}" for b, i, _ in COMMANDS])
def test_readme_command_runs_as_written(block, index, command):
    rule = rule_of(command)
    if rule == "ci":
        assert CI_EQUIVALENT.get(command, command) in CI_RUN, f".ci/run does not run {command!r} verbatim"
    elif rule == "dry-run":
        proc = _run(command + " -n")
        assert proc.returncode == 0, f"{command} -n failed:\n{proc.stderr[-3000:]}"
    elif rule == "help":
        proc = _run(command + " --help")
        assert proc.returncode == 0, f"{command} --help failed:\n{proc.stderr[-3000:]}"
    elif rule == "parse":
        _check_parse(block, index, command)
    else:  # conda
        env = yaml.safe_load((ROOT / "environment.yml").read_text())
        words = command.split()
        if words[1] == "activate":
            assert words[2] == env["name"]
        else:
            assert (ROOT / words[-1]).is_file()


def test_the_quick_start_lines_are_in_ci_verbatim():
    """The quick start's test line is .ci/run's, whole (not only its parts)."""
    text = (ROOT / "README.md").read_text()
    line = next(line for line in text.splitlines() if line.endswith(".venv/bin/pytest -n 2"))
    assert line in CI_RUN


def test_a_wrong_command_fails():
    """The checks catch what they are for: an unknown flag, a target after --configfile, a missing file."""
    with pytest.raises(AssertionError, match="does not parse"):
        _check_parse(99, 0, "pmd-bench run mixture --method pmd --sed 0 --out x.npz")
    with pytest.raises(AssertionError, match="neither exists"):
        _check_parse(99, 0, "pmd-bench report figure1 --data results/nowhere.npz --runs x.npz --out y.png")
    assert _run("snakemake --cores 2 --configfile workflow/config/paper.yaml results/paper/figures/table_logistic.md"
                " -n").returncode != 0

"""What users read speaks of what is true now, not of how the project got there: no work-tracker
session or issue numbers in the README, the docs (their prose: a generated block is a result
file's text, checked where the file is written), the configs' comments, the archive's guide, the
command line's help or the strings the reports write; no commit hash in their prose (a block's
provenance names its commit as code, `abc1234`); and the findings, the history of what moved, are
dated, never hashed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pmd_bench.reports.docs import BLOCK
from pmd_bench.workflow.cli import _parser

ROOT = Path(__file__).resolve().parents[1]
HISTORY = re.compile(r"\b(sessions? \d+|issues? #?\d+)\b", re.I)
# a commit hash: 7 to 40 hex digits with a letter and a digit among them (not a date, a number or a word)
COMMIT = re.compile(r"(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])")
FINDINGS = ROOT / "docs" / "findings.md"
DOCUMENTS = [ROOT / "README.md", ROOT / "archive" / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "workflow" / "config").glob("*.yaml"))]


def _hits(text: str) -> list[str]:
    return [line.strip()[:120] for line in text.splitlines() if HISTORY.search(line)]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_and_configs_name_no_session_or_issue(path):
    text = BLOCK.sub("", path.read_text()) if path.suffix == ".md" else path.read_text()
    assert not _hits(text), f"{path.relative_to(ROOT)}: {_hits(text)[:5]}"


def _prose(text: str) -> str:
    """A document's text without its generated blocks and its code, fenced or inline."""
    text = re.sub(r"```.*?```", "", BLOCK.sub("", text), flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_commit_hash_in_the_prose(path):
    hits = COMMIT.findall(_prose(path.read_text()))
    assert not hits, f"{path.relative_to(ROOT)}: {hits[:5]}"


def test_the_findings_are_dated_not_hashed():
    """docs/findings.md is where history goes: each entry under a dated heading, no commit hash even
    as code (a date says when; the archive's manifest says which commit made a file)."""
    text = FINDINGS.read_text()
    assert not COMMIT.findall(text), COMMIT.findall(text)[:5]
    assert not _hits(text)
    assert re.search(r"^#{2,3} .*\b20\d\d-\d\d-\d\d\b", text, re.M)


def test_the_command_lines_help_names_none():
    parser = _parser()
    texts = [parser.format_help()]
    for action in parser._subparsers._group_actions:
        texts += [sub.format_help() for sub in action.choices.values()]
    assert not [hit for text in texts for hit in _hits(text)]


def _strings(tree: ast.AST) -> list[str]:
    """The string literals of a module that are not docstrings (what its code may print or write)."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


@pytest.mark.parametrize("path", sorted((ROOT / "reports").glob("*.py")), ids=lambda p: p.name)
def test_the_reports_write_none(path):
    hits = [s for s in _strings(ast.parse(path.read_text())) if HISTORY.search(s)]
    assert not hits, f"{path.name}: {hits[:3]}"


def test_the_check_finds_what_it_looks_for():
    issue, session = "iss" + "ue", "sess" + "ion"  # built from pieces: this file is scanned too
    assert _hits(f"as {issue} 30 asked\nfine\n({session} 12)") == [f"as {issue} 30 asked", f"({session} 12)"]
    assert _strings(ast.parse(f'"""doc {issue} 3"""\nx = "{issue} 4"')) == [f"{issue} 4"]
    assert COMMIT.findall("### 2026-11-28: seeds 0 and 1 at 7deaad8, 1000000 rows, float64, a decade") == ["7deaad8"]
    assert _prose("run at `39968e6b05` (archive/MANIFEST.json)\n```\ngit show 7deaad8\n```\n") == \
        "run at  (archive/MANIFEST.json)\n\n"

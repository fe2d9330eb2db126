"""The code speaks of what is true now, as the docs do (tests/test_docs_words.py): no work-tracker
issue or session number in any docstring, comment, help text or string of the project's own code,
its Snakemake rules, its configs or its scripts. A sentence that needs one says the fact itself
(the goal's numbers, the measurement, the reason); the history is in git log and the dated
entries of docs/findings.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("pmd", "baselines", "workflow", "reports", "datasets", "pmd_bench", "benchmarks", "examples", "tests")
SUFFIXES = {".py", ".smk", ".yaml", ".yml", ".sh", ".json", ".toml", ".cfg"}
# the word, then at least one space, '#' or '-' (a line break too: a sentence wrapped between the
# word and its number), then the number. Joined from pieces so that this file does not match itself.
WORD = "(?:" + "iss" + "ues?|" + "sess" + "ions?)"
NUMBERED = re.compile(r"\b" + WORD + r"[\s#-]+\d+", re.I)


def _files() -> list[Path]:
    found = [path for folder in FOLDERS for path in (ROOT / folder).rglob("*")
             if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts]
    found += [path for path in (ROOT / ".ci").rglob("*") if path.is_file()]
    found.append(ROOT / "Snakefile")
    return sorted(found)


def _hits(text: str) -> list[str]:
    """Each match as ``line: text`` (its first line, the match's line number), newlines folded."""
    return [f"{text.count(chr(10), 0, m.start()) + 1}: {' '.join(m.group().split())}" for m in NUMBERED.finditer(text)]


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_or_session_number_in_the_code(path):
    hits = _hits(path.read_text(errors="replace"))
    assert not hits, f"{path.relative_to(ROOT)}, line {'; line '.join(hits[:5])}: say the fact, not its number"


def test_the_check_finds_what_it_looks_for():
    word, other = "iss" + "ue", "Sess" + "ion"
    assert _hits(f"as {word} 30 asked\nfine\n({other} 12)") == [f"1: {word} 30", f"3: {other} 12"]
    assert _hits(f"# wrapped by the {word}\n#   35's fix") == [f"1: {word} # 35"]  # across a line break
    assert _hits(f"{word}s 32 and 35, {word} #4, {word}-16") == [f"1: {word}s 32", f"1: {word} #4", f"1: {word}-16"]
    assert not _hits(f"the {word}'s target; a tis{word} 3; {other.lower()}2 = open(); {other} id 7; 16 {word}s")
    assert (ROOT / "Snakefile").is_file() and (ROOT / ".ci" / "run").is_file()
    assert len(_files()) > 200

"""README.md's results, generated: every block between ``<!-- generated: NAME from PATH -->`` and
``<!-- /generated: NAME -->`` is rendered from the result file ``PATH`` (a table the workflow or a
benchmark wrote, verbatim; ``rate.json`` as one sentence), indented like its opening marker.

``pmd-bench readme`` reads the result files, rewrites the blocks and refreshes the committed
snapshot of those files (``docs/readme_sources.json``); ``pmd-bench readme --block NAME ...`` reads
only the named blocks' files and takes every other block's from the snapshot, so one experiment's
table can be refreshed on a checkout that holds none of the other results (``results/`` is not
committed); ``pmd-bench readme --check --sources
docs/readme_sources.json`` re-renders the blocks from the snapshot and fails when README.md
differs, so a number typed by hand into a block, or a block edited without its source, fails
``tests/test_readme_generated.py``; so does a measured number typed into the results section's prose
(:func:`typed_numbers`).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .resultfiles import atomic_path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SNAPSHOT = ROOT / "docs" / "readme_sources.json"
BLOCK = re.compile(r"^(?P<indent>[ \t]*)<!-- generated: (?P<name>[\w-]+) from (?P<path>\S+) -->\n"
                   r"(?P<body>.*?)^[ \t]*<!-- /generated: (?P=name) -->", re.M | re.S)


def render_source(path: str, text: str) -> str:
    """The block's Markdown from the source file's text: a ``.md`` table verbatim (except that a
    file's own ``# title`` is dropped and its ``## section`` lines become bold lines, so a report
    file's headings do not break the README's outline), Theorem 5's ``rate.json`` as a sentence
    (its RMS errors and fitted slope)."""
    if path.endswith(".md"):
        lines = [line for line in text.strip().split("\n") if not line.startswith("# ")]
        return "\n".join(f"**{line[3:]}**" if line.startswith("## ") else line for line in lines).strip()
    if path.endswith("rate.json"):
        r = json.loads(text)
        errs = ", ".join(f"{e:.3f}" for e in r["rmse"])
        ms = ", ".join(str(m) for m in r["particles"])
        se = r.get("slope_se_bootstrap", r.get("slope_se"))
        return (f"RMS error of `E[θ1]` over {r['seeds']} seeds for m ∈ {{{ms}}}: {errs} — a log-log slope of "
                f"**{r['slope']:.2f} ± {se:.2f}** (Theorem 5: −½).")
    raise ValueError(f"README block source {path}: no renderer for this kind of file (.md tables, rate.json)")


def blocks(readme: str) -> list[re.Match]:
    """The generated blocks of ``readme``, in order."""
    return list(BLOCK.finditer(readme))


def render(readme: str, sources: dict[str, str]) -> str:
    """``readme`` with every generated block re-rendered from ``sources`` (path -> file text)."""
    def one(m: re.Match) -> str:
        if m["path"] not in sources:
            raise FileNotFoundError(f"README block {m['name']!r}: its source {m['path']} is missing")
        indent = m["indent"]
        body = "\n".join(indent + line if line else line for line in render_source(m["path"], sources[m["path"]]).split("\n"))
        return f"{indent}<!-- generated: {m['name']} from {m['path']} -->\n{body}\n{indent}<!-- /generated: {m['name']} -->"

    return BLOCK.sub(one, readme)


def drifted(readme: str, sources: dict[str, str]) -> list[str]:
    """Names of the blocks whose text differs from what ``sources`` render."""
    fresh = {m["name"]: m.group(0) for m in blocks(render(readme, sources))}
    return [m["name"] for m in blocks(readme) if fresh[m["name"]] != m.group(0)]


RESULTS_HEADING = "## Results"
# a decimal (not a section number such as H.3.1), a percentage, or a ratio such as 3.2× or 12x
MEASURED = re.compile(r"(?<![\w.])\d[\d,]*\.\d+(?!\.\d)|\d\s?%|\d\s?[×x](?![\w²])")


def typed_numbers(readme: str) -> list[str]:
    """The lines of the README's results section (from ``## Results`` to the next ``## `` heading)
    that hold a measured-looking number outside a generated block and outside code (inline or
    fenced, where settings and formulas are written): such a number was typed by hand."""
    start = readme.find(f"\n{RESULTS_HEADING}\n")
    if start < 0:
        raise ValueError(f"README.md has no '{RESULTS_HEADING}' section")
    end = readme.find("\n## ", start + 1)
    section = readme[start:end if end > 0 else len(readme)]
    section = BLOCK.sub("", section)
    section = re.sub(r"```.*?```", "", section, flags=re.S)
    return [line for line in section.split("\n") if MEASURED.search(re.sub(r"`[^`]*`", "", line))]


def read_sources(readme: str, root: Path = ROOT) -> dict[str, str]:
    """The current text of every block's source file (paths relative to ``root``)."""
    out = {}
    for m in blocks(readme):
        path = root / m["path"]
        if not path.exists():
            raise FileNotFoundError(f"README block {m['name']!r}: its source {m['path']} does not exist; "
                                    f"run the workflow (or benchmark) that writes it")
        out[m["path"]] = path.read_text()
    return out


def refreshed_sources(readme: str, snapshot: dict[str, str], names: list[str], root: Path = ROOT) -> dict[str, str]:
    """``snapshot`` with the source files of the blocks ``names`` read afresh from ``root``; an
    unknown name or a missing file is an error that names it."""
    by_name = {m["name"]: m["path"] for m in blocks(readme)}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"README.md has no generated block {', '.join(map(repr, unknown))}; "
                         f"its blocks are: {', '.join(by_name)}")
    fresh = read_sources("\n".join(m.group(0) for m in blocks(readme) if m["name"] in names), root)
    return {path: fresh.get(path, text) for path, text in snapshot.items()} | fresh


def main(check: bool, sources_path: str | None, names: list[str] | None = None) -> int:
    """``pmd-bench readme``: rewrite README.md and the snapshot, or (``check``) report drift;
    ``names``: refresh only those blocks' sources, the others from the snapshot (module docstring)."""
    readme = README.read_text()
    if names:
        snapshot = json.loads(Path(sources_path).read_text() if sources_path else SNAPSHOT.read_text())
        sources = refreshed_sources(readme, snapshot, names)
    else:
        sources = json.loads(Path(sources_path).read_text()) if sources_path else read_sources(readme)
    if check:
        bad = drifted(readme, sources)
        if bad:
            print(f"README.md: generated blocks differ from their sources: {', '.join(bad)} "
                  f"(run `pmd-bench readme`)", file=sys.stderr)
        return 1 if bad else 0
    with atomic_path(README) as tmp:
        tmp.write_text(render(readme, sources))
    with atomic_path(SNAPSHOT) as tmp:
        tmp.write_text(json.dumps(sources, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"README.md: {len(blocks(readme))} generated blocks from {len(sources)} result files; snapshot {SNAPSHOT}")
    return 0

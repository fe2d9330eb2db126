"""The documentation's measured numbers, generated: every block between ``<!-- generated: NAME from
PATH -->`` and ``<!-- /generated: NAME -->`` in README.md or docs/results.md (:data:`DOCUMENTS`) is
rendered from the result file ``PATH`` (a table the workflow or a benchmark wrote, verbatim; a
``.txt`` output as a code block; ``rate.json`` as one sentence), indented like its opening marker.

``pmd-bench docs`` reads the result files, rewrites the blocks, refreshes the committed snapshot of
those files (``docs/sources.json``) and regenerates the methods page (docs/methods.md,
:mod:`reports.methods_page`); ``--block NAME ...`` reads only the named blocks' files and takes every
other block's from the snapshot, so one experiment's table can be refreshed on a checkout that holds
none of the other results (``results/`` is not committed); ``--example`` first runs README.md's
example (:func:`run_readme_example`) and records its output; ``--check --sources docs/sources.json``
re-renders the blocks from the snapshot and fails when a document differs, so a number typed by hand
into a block, or a block edited without its source, fails ``tests/test_docs_generated.py``; so does
a measured number typed into README.md or docs/results.md outside a block (:func:`typed_numbers`),
and a comparison of measured values in words (a rank, a fraction, a multiplier) in docs/results.md's
prose (:func:`typed_comparisons`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from .resultfiles import atomic_path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RESULTS = ROOT / "docs" / "results.md"
DOCUMENTS = (README, RESULTS)
SNAPSHOT = ROOT / "docs" / "sources.json"
EXAMPLE_OUTPUT = "results/docs/readme_example.txt"
BLOCK = re.compile(r"^(?P<indent>[ \t]*)<!-- generated: (?P<name>[\w-]+) from (?P<path>\S+) -->\n"
                   r"(?P<body>.*?)^[ \t]*<!-- /generated: (?P=name) -->", re.M | re.S)


def render_source(path: str, text: str) -> str:
    """The block's Markdown from the source file's text: a ``.md`` table verbatim (except that a
    file's own ``# title`` is dropped and its ``## section`` lines become bold lines, so a report
    file's headings do not break the document's outline), Theorem 5's ``rate.json`` as a sentence
    (its RMS errors and fitted slope)."""
    if path.endswith(".txt"):
        return "```text\n" + text.strip("\n") + "\n```"
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
    raise ValueError(f"generated block source {path}: no renderer for this kind of file (.md tables, .txt, rate.json)")


def blocks(text: str) -> list[re.Match]:
    """The generated blocks of a document's ``text``, in order."""
    return list(BLOCK.finditer(text))


def render(text: str, sources: dict[str, str]) -> str:
    """``text`` with every generated block re-rendered from ``sources`` (path -> file text)."""
    def one(m: re.Match) -> str:
        if m["path"] not in sources:
            raise FileNotFoundError(f"generated block {m['name']!r}: its source {m['path']} is missing")
        indent = m["indent"]
        body = "\n".join(indent + line if line else line for line in render_source(m["path"], sources[m["path"]]).split("\n"))
        return f"{indent}<!-- generated: {m['name']} from {m['path']} -->\n{body}\n{indent}<!-- /generated: {m['name']} -->"

    return BLOCK.sub(one, text)


def drifted(text: str, sources: dict[str, str]) -> list[str]:
    """Names of the blocks whose text differs from what ``sources`` render."""
    fresh = {m["name"]: m.group(0) for m in blocks(render(text, sources))}
    return [m["name"] for m in blocks(text) if fresh[m["name"]] != m.group(0)]


# a decimal (not a section number such as H.3.1), a percentage, or a ratio such as 3.2× or 12x
MEASURED = re.compile(r"(?<![\w.])\d[\d,]*\.\d+(?!\.\d)|\d\s?%|\d\s?[×x](?![\w²])")


def typed_numbers(text: str) -> list[str]:
    """The lines of a document (README.md, docs/results.md) that hold a measured-looking number
    outside a generated block and outside code (inline or fenced, where settings and formulas are
    written): such a number was typed by hand."""
    text = BLOCK.sub("", text)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return [line for line in text.split("\n") if MEASURED.search(re.sub(r"`[^`]*`", "", line))]


# Words that compare measured values: a count of a count ("eleven of twelve", "2 of 13", "one of
# them"), a fraction ("a tenth above", "three quarters", "a two-hundredth", "half as long"), a
# multiplier ("twice", "three times faster", "times NUTS's time", "× faster", "tenfold") or a rank
# ("ranks first", "fifth of eleven", "twelve standard errors"). A bare count, a multiple of a
# setting or a reference ("one seed per method", "ten times the budget", "Table 1 of the paper") is
# not matched.
_WORD = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
         r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|hundred|thousand)")
_NUM = rf"(?:{_WORD}|(?<![.\w])\d+)"
_ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|last)"
_FRACTION = (r"(?:half|halves|thirds?|quarters?|fifths?|sixths?|sevenths?|eighths?|ninths?|tenths?|twelfths?|"
             r"fifteenths?|twentieths?|thirtieths?|fortieths?|fiftieths?|hundredths?|thousandths?)")
_MORE = r"(?:as|faster|slower|cheaper|costlier|longer|shorter|larger|smaller|more|less|fewer|higher|lower|better|worse)"
COMPARATIVE = re.compile("|".join([
    rf"\b{_WORD} (?:out )?of\b",                                   # eleven of twelve; one of them
    rf"{_NUM} (?:out )?of (?:the |its |all )?{_NUM}\b",             # 2 of 13
    rf"\b(?:a|an|{_NUM})[ -](?:{_WORD}-)?{_FRACTION}\b",           # a tenth; three quarters; a two-hundredth
    r"\bhalf (?:as|an?|its|their|the)\b",                          # half as long; half its time
    r"\b(?:twice|thrice)\b",
    rf"\b(?:{_WORD}|several|many)-?fold\b",                        # tenfold
    rf"\btimes (?:{_MORE}|its|their)\b",                           # three times faster; times its work
    r"\btimes \w+['’]s\b",                                         # times NUTS's time
    rf"[×x] {_MORE}\b",                                            # × faster
    rf"\brank(?:s|ed)? (?:\*\*)?(?:{_ORDINAL}|\d+)\b",            # ranks first; ranked 2
    rf"\b{_ORDINAL} of {_NUM}\b",                                  # fifth of eleven
    rf"\b{_NUM}(?: and a half)? standard errors?\b",               # twelve standard errors
]), re.I)


def _prose(text: str) -> str:
    """A document's prose: its text without generated blocks, code (fenced or inline) and headings,
    each paragraph on one line (a phrase broken across lines is one phrase)."""
    text = BLOCK.sub("", text)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    lines = [re.sub(r"`[^`]*`", "", line) for line in text.split("\n") if not line.lstrip().startswith("#")]
    return "\n".join(re.sub(r"[ \t]*\n[ \t]*(?=\S)", " ", para) for para in "\n".join(lines).split("\n\n"))


def typed_comparisons(text: str) -> list[str]:
    """The phrases of docs/results.md's prose (outside generated blocks, code and headings) that
    compare measured values in words (:data:`COMPARATIVE`), each with the words around it: a rank,
    a fraction or a multiplier belongs in a table generated from the result files, where it moves
    with them, not in the text around it."""
    prose = _prose(text)
    return [prose[max(0, m.start() - 40):m.end() + 40].replace("\n", " ") for m in COMPARATIVE.finditer(prose)]


def documents_text() -> str:
    """Every document's text, joined: the blocks of all of them (block names are unique across them)."""
    return "\n".join(path.read_text() for path in DOCUMENTS)


def readme_python_blocks(readme: str) -> list[str]:
    """The code of README.md's ```python blocks, in order: the example, then what continues it."""
    found = re.findall(r"```python\n(.*?)```", readme, re.S)
    if not found:
        raise ValueError("README.md has no ```python block (its example)")
    return found


def readme_example(readme: str) -> str:
    """The code of README.md's example: its first ```python block."""
    return readme_python_blocks(readme)[0]


def run_readme_example(out: Path, timeout: float = 600) -> str:
    """Run README.md's example as a user would (a fresh interpreter, in the folder of ``out``) and
    write what it prints to ``out`` atomically; returns that output. A failing example raises with
    its stderr."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    script = out.parent / "readme_example.py"
    script.write_text(readme_example(README.read_text()))
    done = subprocess.run([sys.executable, str(script)], cwd=out.parent, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "TQDM_DISABLE": "1"})
    if done.returncode != 0:
        raise RuntimeError(f"README.md's example failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    with atomic_path(out) as tmp:
        tmp.write_text(done.stdout)
    return done.stdout


def read_sources(text: str, root: Path = ROOT) -> dict[str, str]:
    """The current text of every block's source file (paths relative to ``root``)."""
    out = {}
    for m in blocks(text):
        path = root / m["path"]
        if not path.exists():
            raise FileNotFoundError(f"generated block {m['name']!r}: its source {m['path']} does not exist; "
                                    f"run the workflow (or benchmark) that writes it")
        out[m["path"]] = path.read_text()
    return out


def refreshed_sources(text: str, snapshot: dict[str, str], names: list[str], root: Path = ROOT) -> dict[str, str]:
    """``snapshot`` with the source files of the blocks ``names`` read afresh from ``root`` and
    without the files no block of ``text`` reads any more (a block removed from the documents); an
    unknown name or a missing file is an error that names it."""
    by_name = {m["name"]: m["path"] for m in blocks(text)}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"the documents have no generated block {', '.join(map(repr, unknown))}; "
                         f"their blocks are: {', '.join(by_name)}")
    fresh = read_sources("\n".join(m.group(0) for m in blocks(text) if m["name"] in names), root)
    used = set(by_name.values())
    return {path: fresh.get(path, old) for path, old in snapshot.items() if path in used} | fresh


def main(check: bool, sources_path: str | None, names: list[str] | None = None, example: bool = False) -> int:
    """``pmd-bench docs``: rewrite the documents' blocks, the snapshot and the methods page, or
    (``check``) report drift; ``names``: refresh only those blocks' sources, the others from the
    snapshot; ``example``: run README.md's example first (module docstring)."""
    from . import methods_page

    if example:
        run_readme_example(ROOT / EXAMPLE_OUTPUT)
        names = sorted(set(names or []) | {"readme-example"})
    text = documents_text()
    if names:
        snapshot = json.loads(Path(sources_path).read_text() if sources_path else SNAPSHOT.read_text())
        sources = refreshed_sources(text, snapshot, names)
    else:
        sources = json.loads(Path(sources_path).read_text()) if sources_path else read_sources(text)
    if check:
        bad = [f"{path.relative_to(ROOT)}: {name}" for path in DOCUMENTS for name in drifted(path.read_text(), sources)]
        if bad:
            print(f"generated blocks differ from their sources: {', '.join(bad)} (run `pmd-bench docs`)",
                  file=sys.stderr)
        return max(1 if bad else 0, methods_page.main(check=True))
    for path in DOCUMENTS:
        rendered = render(path.read_text(), sources)
        with atomic_path(path) as tmp:
            tmp.write_text(rendered)
    with atomic_path(SNAPSHOT) as tmp:
        tmp.write_text(json.dumps(sources, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"{', '.join(str(p.relative_to(ROOT)) for p in DOCUMENTS)}: {len(blocks(text))} generated blocks from "
          f"{len(sources)} result files; snapshot {SNAPSHOT.relative_to(ROOT)}")
    return methods_page.main(check=False)

"""docs/methods.md, generated: every method a config's ``methods:`` entry can name.

Everything on the page comes from the code, so it cannot drift from it: the names and classes of
the registries (:data:`workflow.methods.METHODS`, the JAX methods, and
:data:`baselines.peers.topic_models.PEERS`, the topic-model libraries the LDA experiment runs beside
them), each class's ``method_family`` and ``reference`` (:mod:`pmd.interface`), its hyperparameters
and their defaults from its constructor's signature, its summary from its docstring's first
paragraph, and the experiments of the default and paper configs that run it
(:func:`workflow.experiments.black_box.configured`). ``tests/test_methods_page.py`` checks that
the committed page equals :func:`render`; :func:`main` rewrites it, or with ``check`` names how it
is stale.
"""

from __future__ import annotations

import difflib
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

import pmd
from pmd_bench.baselines.peers.topic_models import PEERS
from pmd_bench.workflow import methods
from pmd_bench.workflow.config import DEFAULT_CONFIG
from pmd_bench.workflow.experiments.black_box import configured

from .resultfiles import atomic_path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "methods.md"
CONFIGS = (DEFAULT_CONFIG, DEFAULT_CONFIG.parent / "paper.yaml")
# constructor arguments the workflow supplies (workflow.methods.build, workflow.experiments.lda):
# not hyperparameters a config entry sets
SUPPLIED = frozenset({"model", "data_size", "data", "num_steps", "seed"})
_ROLE = re.compile(r":(?:class|func|mod|meth|data|attr):`~?([^`]+)`")

INTRO = """\
Every inference method the workflow can run, by the name a config gives it. An experiment's
`methods:` section maps a label to an entry: `method: <name>` picks one of the methods below (the
label itself when `method:` is left out, so one method can run under several labels with different
settings), and the entry's other keys are that method's hyperparameters, passed to its constructor
as keyword arguments; `batch_size`, `num_passes` and `eval_every` in an entry override the
experiment's run settings for that method (`workflow.methods.split_spec`). A JAX method is built
as `Class(model, data_size=N, **hyperparameters)`, with `data=` (the whole data set) and
`num_steps=` (the run's length) added when its constructor takes them (`workflow.methods.build`),
and has the interface of `pmd.interface`: `init(key)`, a pure `step(key, state, batch)` and
`posterior(state)`. A *peer library* (the LDA experiment's topic-model libraries) is no JAX
method: `workflow.experiments.lda` builds it as `Class(model, num_docs, seed, **hyperparameters)`
and feeds it the same batches of word counts.

Hyperparameters are the constructor's arguments with their defaults, written as a config would
write them (`required`: the entry must give it); the arguments the workflow supplies (`model`,
`data_size`, `data`, `num_steps`, `seed`) are left out. Family and reference are the class's
`method_family` and `reference` attributes. *Configured in* names the experiments of
`workflow/config/default.yaml` and `paper.yaml` whose `methods:` run the method."""


def registry() -> dict[str, type]:
    """Every name a config's method entry can give -> its class: the JAX methods, then the peers."""
    return {**methods.METHODS, **PEERS}


def about(cls: type) -> tuple[str, str]:
    """``(method_family, reference)`` of a method class; a missing or empty one is an error naming it."""
    values = tuple(getattr(cls, attr, "") for attr in ("method_family", "reference"))
    if not all(isinstance(v, str) and v for v in values):
        raise ValueError(f"{cls.__module__}.{cls.__qualname__} needs a non-empty method_family and reference "
                         "(pmd.interface)")
    return values


def show(value: Any) -> str:
    """A default as a config writes it: JSON's flow form of YAML (``null``, ``true``, ``"robust"``),
    a float that six significant digits do not give exactly as ``≈`` its six digits, any other
    object as its ``repr``."""
    if isinstance(value, float) and float(f"{value:.6g}") != value:
        return f"≈{value:.6g}"
    try:
        return json.dumps(value, ensure_ascii=False)
    except TypeError:
        return repr(value)


def hyperparameters(cls: type) -> list[tuple[str, str, str]]:
    """``(name, type, default)`` of each constructor argument a config entry sets, in the signature's
    order (``SUPPLIED`` left out); the default is ``required`` when there is none."""
    rows = []
    for p in inspect.signature(cls).parameters.values():
        if p.name in SUPPLIED or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        kind = "" if p.annotation is p.empty else (
            p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(p.annotation))
        rows.append((p.name, kind, "required" if p.default is p.empty else show(p.default)))
    return rows


def summary(cls: type) -> str:
    """The first paragraph of the class docstring on one line, its reST roles and literals as Markdown code."""
    paragraph = (inspect.getdoc(cls) or "").split("\n\n")[0]
    return _ROLE.sub(r"`\1`", " ".join(paragraph.split())).replace("``", "`")


def configured_in() -> dict[str, list[str]]:
    """Name -> ``"<config file>: <experiment>, ..."`` for each config of ``CONFIGS`` that runs it."""
    out: dict[str, list[str]] = {}
    for path in CONFIGS:
        for name, record in configured(yaml.safe_load(path.read_text()), registry()).items():
            out.setdefault(name, []).append(f"`{path.name}`: {', '.join(record['experiments'])}")
    return out


def _row(*cells: str) -> str:
    """A Markdown table row; a ``|`` inside a cell (``int | None``) is escaped, as GFM needs even in code."""
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _section(name: str, cls: type, used: list[str]) -> list[str]:
    family, reference = about(cls)
    peer = " (peer library)" if name in PEERS else ""
    lines = [f"### `{name}`", "", summary(cls), "",
             f"- class: `{cls.__module__}.{cls.__qualname__}`{peer}",
             f"- family: {family}",
             f"- reference: {reference}",
             f"- configured in: {'; '.join(used) if used else 'no experiment of the default or paper config'}", ""]
    rows = hyperparameters(cls)
    if rows:
        lines += ["| hyperparameter | type | default |", "|---|---|---|"]
        lines += [_row(f"`{arg}`", f"`{kind}`" if kind else "", default if default == "required" else f"`{default}`")
                  for arg, kind, default in rows]
        lines.append("")
    return lines


def render() -> str:
    """The Markdown of docs/methods.md: the intro, a table of families, then one section per method,
    grouped by family (PMD's first, the others alphabetically) and sorted by name within one."""
    names = registry()
    used = configured_in()
    groups: dict[str, list[str]] = {}
    for name in sorted(names):
        groups.setdefault(about(names[name])[0], []).append(name)
    order = sorted(groups, key=lambda family: (family != pmd.PMD.method_family, family.casefold()))
    lines = ["# Methods", "",
             "<!-- generated by pmd_bench.reports.methods_page.main from the method registries: edit the code, "
             "not this page -->", "", INTRO, "",
             "| family | methods |", "|---|---|"]
    lines += [_row(family, ", ".join(f"[`{n}`](#{n})" for n in groups[family])) for family in order]
    lines.append("")
    for family in order:
        lines += [f"## {family}", ""]
        for name in groups[family]:
            lines += _section(name, names[name], used.get(name, []))
    return "\n".join(lines).rstrip("\n") + "\n"


def main(check: bool) -> int:
    """Rewrite docs/methods.md from :func:`render` (atomically); with ``check`` write nothing and
    return 1, printing the lines that differ, when the committed page is stale."""
    text = render()
    if check:
        old = PAGE.read_text() if PAGE.exists() else ""
        diff = list(difflib.unified_diff(old.splitlines(), text.splitlines(), str(PAGE), "render()", lineterm="", n=0))
        if diff:
            print(f"{PAGE} is stale (rewrite it with pmd_bench.reports.methods_page.main(check=False)):\n"
                  + "\n".join(diff[:60]), file=sys.stderr)
        return 1 if diff else 0
    with atomic_path(PAGE) as tmp:
        tmp.write_text(text)
    print(f"{PAGE}: {len(registry())} methods")
    return 0

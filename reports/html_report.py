"""The report: one self-contained HTML page of every experiment's figures and tables.

For each experiment of the project it shows the paper's claim beside the measured figures and
tables (read from ``{results_dir}/figures/``), the experiment's config section, the git commits
that produced its runs and links to those runs in the MLflow UI. Everything is inside the page:
images as ``data:`` URIs, CSS inline, no script, nothing fetched from the network; the only
``http`` addresses are plain links to the MLflow UI (the tracking server, or the address ``mlflow
ui`` serves for a local store). An experiment the config has no section for is listed as not run
in this config; one whose files are missing is listed with the files it lacks. A section with
tuning grids also shows what the tuning chose (``tuning_<experiment>.md``, :mod:`reports.tuning`).
"""

from __future__ import annotations

import base64
import datetime
import html
import json
import re
from pathlib import Path
from typing import Any

import yaml

from pmd_bench.workflow.config import posteriordb_skip_reason

from .resultfiles import atomic_path

LOCAL_UI = "http://127.0.0.1:5000"  # where `mlflow ui` serves a local store
MAX_RUNS = 40

# (config section, title, the paper's claim, files under {results_dir}/figures/)
EXPERIMENTS = [
    ("table1", "Table 1 (section 5): rate, cost and black box, measured",
     "Table 1: PMD's integral error falls as O(m^-1/2), SGLD's as O(m^-1/3); SVI, NPV and static SMC are not "
     "provable. Computation per iteration: SVI Ω(d), NPV Ω(dm²N + d²N), static SMC Ω(dm), SGLD Ω(d), PMD Ω(dm) "
     "(Ω(dm²) with the KDE); memory O(dm) (SVI O(d)); static SMC, SGLD and PMD are black box, SVI and NPV not.",
     ["table1.md", "table1.png"]),
    ("rate", "Theorem 5's rate", "Theorem 5: with m particles the error of an integral ⟨q, f⟩ is O(m^-1/2).",
     ["rate.json", "rate.png"]),
    ("mixture", "Mixture model (section 6, Figures 1 and 3; H.1)",
     "Section 6: PMD captures both modes of the Welling-Teh posterior and reaches the best total variation and "
     "cross entropy; Gibbs and SGLD get stuck in one mode and SVI fails.",
     ["table_mixture.md", "figure1.png", "figure3.png", "cost_mixture.md", "cost_mixture.png", "profiles_mixture.md",
      "profiles_mixture.png"]),
    ("logistic", "Bayesian logistic regression (section 6, Figure 2(1); H.2)",
     "Section 6: on MNIST8M 6-vs-8 PMD reaches about 98.8% test accuracy, comparable to SVI and better than the "
     "other sampling methods.",
     ["table_logistic.md", "figure2.png", "curves_logistic.png", "cost_logistic.md", "cost_logistic.png",
      "profiles_logistic.md", "profiles_logistic.png"]),
    ("posteriordb", "posteriordb reference posteriors (not in the paper)",
     "Not in the paper: a test of the claim that PMD is a black-box method (Table 1) on 12 posteriors with "
     "reference draws.",
     ["table_posteriordb.md", "posteriordb.png", "cost_posteriordb.md", "cost_posteriordb.png", "profiles_posteriordb.md",
      "profiles_posteriordb.png"]),
    ("custom", "Your own models (not in the paper)",
     "Not in the paper: every method on the PyMC models named in the config's custom.models, scored as on "
     "posteriordb against reference draws (the model file's, else NUTS behind the convergence gate).",
     ["table_custom.md", "custom.png", "cost_custom.md", "cost_custom.png", "profiles_custom.md", "profiles_custom.png"]),
    ("sparse_gp", "Sparse Gaussian processes (section 6, Figure 2(2), Figure 4; F.1, H.3)",
     "Section 6: on YearPredictionMSD PMD has the best RMSE (0.027), significantly better than one-pass SMC and "
     "SVI; Figure 4: PMD's predictive approaches the truth within 80 iterations.",
     ["table_sparse_gp.md", "curves_sparse_gp.png", "figure4.png", "cost_sparse_gp.md",
      "cost_sparse_gp.png", "profiles_sparse_gp.md", "profiles_sparse_gp.png"]),
    ("lda", "Latent Dirichlet allocation (section 6, Figure 2(3), Figure 5; F.2, H.4)",
     "Section 6: PMD with one particle reaches the best held-out perplexity on Wikipedia, significantly better "
     "than SGRLD and SVI; SMC does well early.",
     ["table_lda.md", "curves_lda.png", "figure5.png", "table_lda_grid.md", "cost_lda.md", "cost_lda.png",
      "profiles_lda.md", "profiles_lda.png"]),
]

CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-top:.5em}
.claim{background:#f4f6fa;border-left:4px solid #5a78b0;padding:.5em 1em;margin:.5em 0}
.absent{color:#a33}table{border-collapse:collapse;margin:.8em 0;font-size:.85em}
td,th{border:1px solid #bbb;padding:.25em .5em;text-align:left;vertical-align:top}th{background:#eee}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}pre{background:#f7f7f7;padding:.5em;overflow:auto;font-size:.8em}
.runs td{font-family:monospace}
"""


def _inline(text: str) -> str:
    """Escaped text with Markdown's **bold** and `code`."""
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def markdown_html(md: str) -> str:
    """The Markdown the reports write (pipe tables, headings, paragraphs) as HTML."""
    out, table = [], []

    def flush():
        if table:
            rows = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
                    for line in table if not re.fullmatch(r"\|?[\s:|-]+\|?", line.strip())]
            head, body = rows[0], rows[1:]
            out.append("<table><thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</tbody></table>")
            table.clear()

    for line in md.splitlines():
        if line.strip().startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")) + 2, 6)
            out.append(f"<h{level}>{_inline(line.lstrip('#').strip())}</h{level}>")
        elif line.strip():
            out.append(f"<p>{_inline(line.strip())}</p>")
    flush()
    return "\n".join(out)


def _image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(path.name)}">'


def _rate_html(path: Path) -> str:
    r = json.loads(path.read_text())
    rows = "".join(f"<tr><td>{m:,}</td><td>{e:.4g}</td></tr>" for m, e in zip(r["particles"], r["rmse"]))
    se = r.get("slope_se_bootstrap", r.get("slope_se"))
    return (f"<p>Measured log-log slope <strong>{r['slope']:+.3f} ± {se:.3f}</strong> over {r['seeds']} seeds "
            f"per m (Theorem 5: −0.5).</p><table><thead><tr><th>m</th><th>RMS error of E[θ1]</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


# a result file's title in words, by its name without suffix (a table's own "# " heading comes first)
TITLES = {"table1": "Table 1", "rate": "Theorem 5's rate, measured", "table_mixture": "Accuracy of each method",
          "figure1": "Figure 1: the posteriors", "figure3": "Figure 3: each method's posterior",
          "cost_mixture": "Cost to the accuracy criterion", "table_logistic": "Accuracy of each method",
          "figure2": "Figure 2: error against data seen, one panel per experiment",
          "curves_logistic": "Error and distance to NUTS against data seen", "cost_logistic": "Cost to the accuracy criterion",
          "table_posteriordb": "Accuracy on each posterior", "posteriordb": "Error on each posterior (heat map)",
          "cost_posteriordb": "Cost to the accuracy criterion", "table_custom": "Accuracy on each model",
          "custom": "Error on each model (heat map)", "cost_custom": "Cost to the accuracy criterion",
          "table_sparse_gp": "Accuracy of each method", "curves_sparse_gp": "Error against data seen, each problem",
          "figure4": "Figure 4: the posterior's mean and spread", "table_lda": "Accuracy of each method",
          "curves_lda": "Held-out perplexity against documents seen", "figure5": "Figure 5: topics",
          "table_lda_grid": "The step-size grid", "cost_lda": "Cost to the accuracy criterion",
          "cost_sparse_gp": "Cost to the accuracy criterion",
          # the profiles' figures (reports/profiles.py; their Markdown has its own heading)
          **{f"profiles_{key}": "Data and performance profiles, with bootstrap bands"
             for key in ("mixture", "logistic", "posteriordb", "custom", "sparse_gp", "lda")}}


def artifact_title(path: Path) -> str:
    """What a result file shows, in words: a table's own ``# `` heading, else :data:`TITLES`,
    else its name with spaces."""
    if path.suffix == ".md":
        first = path.read_text().split("\n", 1)[0]
        if first.startswith("# "):
            return first[2:].strip()
    return TITLES.get(path.stem, path.stem.replace("_", " ").capitalize())


def _artifact(path: Path) -> str:
    if path.suffix == ".png":
        return _image(path)
    if path.suffix == ".md":
        return markdown_html(path.read_text())
    return _rate_html(path)


def mlflow_runs(uri: str, experiment: str) -> dict[str, Any]:
    """The newest run of each name in MLflow experiment ``experiment`` (at most ``MAX_RUNS``):
    ``{"experiment_id", "runs": [{"name", "run_id", "status", "commit", "start"}]}``, or ``{"error"}``."""
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
        return {"error": f"no MLflow store at {uri}"}
    from mlflow.tracking import MlflowClient

    try:
        client = MlflowClient(tracking_uri=uri)
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            return {"error": f"no MLflow experiment {experiment!r} in {uri}"}
        newest: dict[str, Any] = {}
        for run in client.search_runs([exp.experiment_id], order_by=["attributes.start_time DESC"], max_results=1000):
            newest.setdefault(run.info.run_name, run)
    except Exception as err:  # noqa: BLE001  (an unreachable store is reported in the page, not fatal)
        return {"error": f"MLflow store {uri}: {type(err).__name__}: {err}"}
    runs = [{"name": name, "run_id": r.info.run_id, "status": r.info.status, "commit": r.data.tags.get("git_commit", "?"),
             "start": datetime.datetime.fromtimestamp(r.info.start_time / 1000).isoformat(timespec="seconds")}
            for name, r in sorted(newest.items())][:MAX_RUNS]
    return {"experiment_id": exp.experiment_id, "runs": runs, "more": max(0, len(newest) - MAX_RUNS)}


def _runs_html(found: dict, ui: str) -> str:
    if "error" in found:
        return f'<p class="absent">MLflow: {html.escape(found["error"])}</p>'
    if not found["runs"]:
        return "<p>MLflow: no runs logged for this experiment.</p>"
    commits = sorted({r["commit"] for r in found["runs"]})
    rows = "".join(
        f'<tr><td><a href="{html.escape(ui)}/#/experiments/{found["experiment_id"]}/runs/{r["run_id"]}">'
        f'{html.escape(r["name"])}</a></td><td>{r["status"]}</td><td>{r["start"]}</td><td>{html.escape(r["commit"])}</td></tr>'
        for r in found["runs"])
    more = f"<p>… and {found['more']} more runs.</p>" if found["more"] else ""
    return (f"<p>Git commit(s) of these runs: {', '.join(f'<code>{html.escape(c)}</code>' for c in commits)}</p>"
            f'<details><summary>MLflow runs (newest of each name)</summary><table class="runs"><thead><tr><th>run</th>'
            f"<th>status</th><th>started</th><th>commit</th></tr></thead><tbody>{rows}</tbody></table>{more}</details>")


def section_html(cfg: dict, key: str, title: str, claim: str, files: list[str], uri: str, ui: str) -> str:
    """One experiment: the claim, its figures and tables, its config section and its MLflow runs."""
    head = f'<section id="{key}"><h2>{html.escape(title)}</h2><p class="claim"><strong>Paper:</strong> {_inline(claim)}</p>'
    if key not in cfg:
        return head + '<p class="absent">Not run in this config (it has no <code>' + key + "</code> section).</p></section>"
    skipped = posteriordb_skip_reason(cfg) if key == "posteriordb" else None
    if skipped:
        return head + f'<p class="absent">Skipped: {html.escape(skipped)}.</p></section>'
    figures = Path(cfg["results_dir"]) / "figures"
    if cfg[key].get("tuning", {}).get("grids"):  # what the tuning protocol chose (reports/tuning.py)
        files = [*files, f"tuning_{key}.md"]
    present = [figures / f for f in files if (figures / f).exists()]
    missing = [f for f in files if not (figures / f).exists() and not f.startswith("table_lda_grid")]
    body = "".join(f"<h3>{html.escape(artifact_title(p))}</h3>{_artifact(p)}" for p in present)
    if missing:
        body += f'<p class="absent">Not built yet: {", ".join(html.escape(m) for m in missing)}.</p>'
    config = html.escape(yaml.safe_dump({key: cfg[key]}, sort_keys=False, allow_unicode=True))
    experiment = f"{cfg['tracking']['experiment_prefix']}/{key}"
    runs = _runs_html(mlflow_runs(uri, experiment), ui) if key not in ("table1", "rate") else ""
    return (head + body + f"<details><summary>Config section <code>{key}</code></summary><pre>{config}</pre></details>"
            + runs + "</section>")


def answer_html(cfg: dict) -> str:
    """The report's first section: the digest of the leaderboards and each experiment's
    leaderboard (reports/leaderboard.py), as far as they are built."""
    figures = Path(cfg["results_dir"]) / "figures"
    head = '<section id="answer"><h2>The answer: who reaches each criterion, at what work and seconds</h2>'
    digest = figures / "leaderboard.md"
    if not digest.exists():
        return head + '<p class="absent">Not built yet: the leaderboards (rule <code>leaderboard</code>).</p></section>'
    body = _artifact(digest)
    for board in sorted(figures.glob("leaderboard_*.md")):
        title = board.read_text().splitlines()[0].lstrip("# ").strip()
        body += f"<details><summary>{html.escape(title)}</summary>{_artifact(board)}</details>"
    return head + body + "</section>"


def build(cfg: dict, config_path: str | None, uri: str, out: str | Path, commit: str) -> Path:
    """Write the report of the config ``cfg`` (its results under ``cfg["results_dir"]``, its runs in the
    MLflow store ``uri``) to ``out``; ``commit`` is the git commit rendering it."""
    ui = uri.rstrip("/") if uri.startswith(("http://", "https://")) else LOCAL_UI
    start = (f"<code>mlflow ui --backend-store-uri {html.escape(uri)}</code>, then" if ui == LOCAL_UI else "")
    sections = [answer_html(cfg)] + [section_html(cfg, *entry, uri, ui) for entry in EXPERIMENTS]
    toc = '<li><a href="#answer">The answer: the leaderboards</a></li>' + "".join(
        f'<li><a href="#{k}">{html.escape(t)}</a></li>' for k, t, *_ in EXPERIMENTS)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>pmd-bench report</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<style>{CSS}</style></head><body>
<h1>pmd-bench: Particle Mirror Descent (Dai et al., AISTATS 2016) — the paper's claims beside what was measured</h1>
<p>Results folder <code>{html.escape(str(cfg['results_dir']))}</code>, config <code>{html.escape(str(config_path or 'the embedded default'))}</code>,
rendered at commit <code>{html.escape(commit)}</code> on {datetime.datetime.now().isoformat(timespec='seconds')}.
MLflow store <code>{html.escape(uri)}</code>: the run links open in its UI ({start} {html.escape(ui)}).</p>
<ul>{toc}</ul>
{''.join(sections)}
<details><summary>The whole config</summary><pre>{html.escape(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))}</pre></details>
</body></html>
"""
    out = Path(out)
    with atomic_path(out) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return out


def screenshot(report: str | Path) -> Path | None:
    """Open the report from disk in headless Chromium and save ``screenshot.png`` beside it;
    ``None`` (and nothing written) when Chromium is not installed."""
    from . import browser

    if browser.CHROMIUM is None:
        return None
    report = Path(report).resolve()
    with browser.Chromium() as chromium:
        return chromium.screenshot(chromium.open(report.as_uri()), report.parent / "screenshot.png")

"""The HTML report as a person sees it: headless Chromium opens it from disk (reports/browser.py).

A results folder with the rate experiment's files and Table 1's, and a config with no other
experiment section: every image must decode (``naturalWidth > 0``), every table be there, the
absent experiments be listed as not run, nothing on the page point at the network except the
MLflow links (plain anchors), and a screenshot be saved beside the report. Skipped, with the
reason, where Chromium is not installed (Debian: ``apt-get install chromium``; .ci/run does).
"""

import json
from pathlib import Path

import pytest

from pmd_bench.reports import browser, html_report
from pmd_bench.reports import rate as rate_report

CONFIG = {"results_dir": None, "tracking": {"uri": None, "experiment_prefix": "pmd-bench"},
          "rate": {"particles": [100, 1000], "seeds": 4}, "table1": {}, "logistic": {}}
FAKE_RUNS = {"experiment_id": "7", "more": 0,
             "runs": [{"name": "pmd-seed0", "run_id": "abc123", "status": "FINISHED", "commit": "deadbeef",
                       "start": "2026-01-01T00:00:00"}]}


@pytest.fixture
def report(tmp_path, monkeypatch):
    figures = tmp_path / "results" / "figures"
    figures.mkdir(parents=True)
    (figures / "rate.json").write_text(json.dumps({"particles": [100, 1000], "rmse": [0.1, 0.03], "seeds": 4,
                                                   "slope": -0.52, "slope_se": 0.0}))
    rate_report.render(figures / "rate.json", figures / "rate.png")
    (figures / "table1.md").write_text("| method | rate |\n|---|---|\n| PMD | **-0.50** |\n")
    (figures / "table_logistic.md").write_text("Caption.\n\n| method | accuracy |\n|---|---|\n| pmd | 98.5 |\n")
    monkeypatch.setattr(html_report, "mlflow_runs", lambda uri, experiment: FAKE_RUNS)
    cfg = {**CONFIG, "results_dir": str(tmp_path / "results")}
    return html_report.build(cfg, "test.yaml", "sqlite:///nowhere.db", tmp_path / "results" / "report" / "index.html",
                             "0123abcd")


@pytest.mark.skipif(browser.CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_opens_from_disk_with_every_image_and_table(report):
    page = (
        "({images: [...document.images].map(i => [i.alt, i.complete, i.naturalWidth]),"
        " tables: document.querySelectorAll('table').length,"
        " links: [...document.querySelectorAll('[src],[href]')].map(e => [e.tagName, e.getAttribute('src') || e.getAttribute('href')]),"
        " text: document.body.innerText})"
    )
    with browser.Chromium() as chromium:
        session = chromium.open(report.resolve().as_uri())
        seen = chromium.evaluate(session, page)
        shot = chromium.screenshot(session, report.parent / "screenshot.png")
    # the rate figure and Table 1's figure slot: rate.png is the one image present
    assert seen["images"] and all(done and width > 0 for _, done, width in seen["images"]), seen["images"]
    assert [alt for alt, _, _ in seen["images"]] == ["rate.png"]
    # rate's table, table1.md's, the logistic table, the MLflow runs' table of logistic
    assert seen["tables"] == 4, seen["tables"]
    network = [(tag, url) for tag, url in seen["links"] if url.startswith(("http:", "https:", "//"))]
    assert network == [("A", "http://127.0.0.1:5000/#/experiments/7/runs/abc123")], network
    assert all(url.startswith(("data:image/png;base64,", "#", "http://127.0.0.1:5000/")) for _, url in seen["links"])
    for absent in ("mixture", "posteriordb", "sparse_gp", "lda"):
        assert f"Not run in this config (it has no {absent} section)" in seen["text"]
    assert "Not built yet: table1.png" in seen["text"]
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_markdown_tables_become_html_tables():
    html = html_report.markdown_html("Caption **bold**.\n\n| a | b |\n|---|---|\n| 1 | `x` |\n")
    assert html == ("<p>Caption <strong>bold</strong>.</p>\n<table><thead><tr><th>a</th><th>b</th></tr></thead>"
                    "<tbody><tr><td>1</td><td><code>x</code></td></tr></tbody></table>")


def test_a_section_with_tuning_grids_shows_what_the_tuning_chose(tmp_path, monkeypatch):
    figures = tmp_path / "figures"
    figures.mkdir()
    monkeypatch.setattr(html_report, "mlflow_runs", lambda uri, experiment: FAKE_RUNS)
    cfg = {**CONFIG, "results_dir": str(tmp_path)}
    plain = html_report.section_html(cfg, "logistic", "Logistic", "claim", ["table_logistic.md"], "sqlite:///x", "ui")
    assert "tuning_logistic.md" not in plain  # no tuning grids: nothing asked for
    cfg["logistic"] = {"tuning": {"grids": {"svi": {"learning_rate": [0.01, 0.1]}}}}
    absent = html_report.section_html(cfg, "logistic", "Logistic", "claim", ["table_logistic.md"], "sqlite:///x", "ui")
    assert "Not built yet: table_logistic.md, tuning_logistic.md" in absent
    (figures / "tuning_logistic.md").write_text("# Tuning: logistic\n\n| method | chosen |\n|---|---|\n| svi | 0.1 |\n")
    shown = html_report.section_html(cfg, "logistic", "Logistic", "claim", ["table_logistic.md"], "sqlite:///x", "ui")
    assert "<h3>Tuning: logistic</h3>" in shown and "<td>svi</td><td>0.1</td>" in shown  # the table's own title


def test_the_report_opens_with_the_leaderboards_and_titles_in_words(tmp_path):
    figures = tmp_path / "figures"
    figures.mkdir()
    cfg = {**CONFIG, "results_dir": str(tmp_path)}
    assert "Not built yet: the leaderboards" in html_report.answer_html(cfg)
    (figures / "leaderboard.md").write_text("# The answer in brief\n\n| experiment | first |\n|---|---|\n| Mixture | svi |\n")
    (figures / "leaderboard_mixture.md").write_text("# Leaderboard: Two-mode mixture\n\n| rank | method |\n|---|---|\n"
                                                   "| 1 | svi |\n")
    shown = html_report.answer_html(cfg)
    assert shown.startswith('<section id="answer">') and "<td>Mixture</td><td>svi</td>" in shown
    assert "<summary>Leaderboard: Two-mode mixture</summary>" in shown
    assert html_report.artifact_title(Path("figures/figure1.png")) == "Figure 1: the posteriors"

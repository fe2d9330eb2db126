"""README.md's results blocks are generated (reports/readme.py): re-rendered from the committed
snapshot of their result files (docs/readme_sources.json) they must equal what README.md holds,
so a number typed into a block, or a block left behind by a changed result, fails here."""

import json
import re

import pytest

from pmd_bench.reports import readme

SOURCES = json.loads(readme.SNAPSHOT.read_text())
TEXT = readme.README.read_text()


def test_readme_blocks_equal_their_result_files():
    assert readme.blocks(TEXT), "README.md has no generated blocks"
    assert readme.drifted(TEXT, SOURCES) == []


def test_every_block_source_is_in_the_snapshot():
    assert {m["path"] for m in readme.blocks(TEXT)} == set(SOURCES)


def test_a_number_typed_into_a_block_is_caught():
    block = readme.blocks(TEXT)[0]
    digit = re.search(r"\d", block["body"])
    i = block.start("body") + digit.start()
    edited = TEXT[:i] + str((int(TEXT[i]) + 1) % 10) + TEXT[i + 1:]
    assert readme.drifted(edited, SOURCES) == [block["name"]]


def test_rate_sentence_is_rendered_from_rate_json():
    text = readme.render_source("results/figures/rate.json", json.dumps(
        {"particles": [100, 1000], "rmse": [0.1, 0.031], "seeds": 20, "slope": -0.5089, "slope_se_bootstrap": 0.083}))
    assert text == ("RMS error of `E[θ1]` over 20 seeds for m ∈ {100, 1000}: 0.100, 0.031 — a log-log slope of "
                    "**-0.51 ± 0.08** (Theorem 5: −½).")


def test_a_report_files_headings_do_not_break_the_readme_outline():
    text = readme.render_source("results/figures/table.md", "# Title\n\nbudget\n\n## accuracy\n\n| a |\n|---|\n| 1 |\n")
    assert text == "budget\n\n**accuracy**\n\n| a |\n|---|\n| 1 |"


def test_no_measured_number_is_typed_into_the_results_prose():
    assert readme.typed_numbers(TEXT) == []


def test_a_number_typed_into_the_prose_is_caught_and_settings_are_not():
    head = "# x\n\n## Results\n\nIntro.\n\n"
    block = "<!-- generated: t from results/t.md -->\n| 98.76 | 3.2× |\n<!-- /generated: t -->\n"
    tail = "\n## Next\n\nOutside the section: 0.5\n"
    clean = ("Settings `m = 1500`, `ε = 0.005`, H.3.1 and eq. 19, 4 chains × 1000 draws, `2.5×`, M = 2¹⁰.\n"
             "```\nspeed 1.5x\n```\n")
    assert readme.typed_numbers(head + block + clean + tail) == []
    for typed in ["PMD reaches 98.72 accuracy.", "an error 12% lower", "ours is 3.2× faster", "ours is 12x faster"]:
        assert readme.typed_numbers(head + block + clean + typed + "\n" + tail) == [typed]


def test_one_block_is_refreshed_from_its_file_and_the_others_from_the_snapshot(tmp_path):
    text = ("<!-- generated: a from results/a.md -->\nold a\n<!-- /generated: a -->\n"
            "<!-- generated: b from results/b.md -->\nold b\n<!-- /generated: b -->\n")
    snapshot = {"results/a.md": "old a\n", "results/b.md": "old b\n"}
    (tmp_path / "results").mkdir()
    (tmp_path / "results/a.md").write_text("new a\n")
    assert readme.refreshed_sources(text, snapshot, ["a"], tmp_path) == {"results/a.md": "new a\n",
                                                                         "results/b.md": "old b\n"}
    with pytest.raises(FileNotFoundError, match="'b'.*results/b.md"):
        readme.refreshed_sources(text, snapshot, ["b"], tmp_path)
    with pytest.raises(ValueError, match="no generated block 'c'"):
        readme.refreshed_sources(text, snapshot, ["c"], tmp_path)

"""The documents' measured blocks (README.md, docs/results.md) are generated (reports/docs.py):
re-rendered from the committed snapshot of their result files (docs/sources.json) they must equal
what the documents hold, so a number typed into a block, or a block left behind by a changed
result, fails here; so does a measured number typed into either document's prose, or a measured
value compared in words (a rank, a fraction, a multiplier) in docs/results.md's prose."""

import json
import re

import pytest

from pmd_bench.reports import docs

SOURCES = json.loads(docs.SNAPSHOT.read_text())
TEXT = docs.documents_text()


@pytest.mark.parametrize("path", docs.DOCUMENTS, ids=lambda p: p.name)
def test_blocks_equal_their_result_files(path):
    text = path.read_text()
    assert docs.blocks(text), f"{path.name} has no generated blocks"
    assert docs.drifted(text, SOURCES) == []


def test_every_block_source_is_in_the_snapshot_and_names_are_unique():
    assert {m["path"] for m in docs.blocks(TEXT)} == set(SOURCES)
    names = [m["name"] for m in docs.blocks(TEXT)]
    assert len(names) == len(set(names))


def test_a_number_typed_into_a_block_is_caught():
    block = docs.blocks(TEXT)[0]
    digit = re.search(r"\d", block["body"])
    i = block.start("body") + digit.start()
    edited = TEXT[:i] + str((int(TEXT[i]) + 1) % 10) + TEXT[i + 1:]
    assert docs.drifted(edited, SOURCES) == [block["name"]]


def test_rate_sentence_is_rendered_from_rate_json():
    text = docs.render_source("results/figures/rate.json", json.dumps(
        {"particles": [100, 1000], "rmse": [0.1, 0.031], "seeds": 20, "slope": -0.5089, "slope_se_bootstrap": 0.083}))
    assert text == ("RMS error of `E[θ1]` over 20 seeds for m ∈ {100, 1000}: 0.100, 0.031 — a log-log slope of "
                    "**-0.51 ± 0.08** (Theorem 5: −½).")


def test_a_report_files_headings_do_not_break_the_readme_outline():
    text = docs.render_source("results/figures/table.md", "# Title\n\nbudget\n\n## accuracy\n\n| a |\n|---|\n| 1 |\n")
    assert text == "budget\n\n**accuracy**\n\n| a |\n|---|\n| 1 |"


@pytest.mark.parametrize("path", docs.DOCUMENTS, ids=lambda p: p.name)
def test_no_measured_number_is_typed_into_the_prose(path):
    assert docs.typed_numbers(path.read_text()) == []


def test_a_number_typed_into_the_prose_is_caught_and_settings_are_not():
    head = "# x\n\n## Results\n\nIntro.\n\n"
    block = "<!-- generated: t from results/t.md -->\n| 98.76 | 3.2× |\n<!-- /generated: t -->\n"
    tail = "\n## Next\n\nAnother section.\n"
    clean = ("Settings `m = 1500`, `ε = 0.005`, H.3.1 and eq. 19, 4 chains × 1000 draws, `2.5×`, M = 2¹⁰.\n"
             "```\nspeed 1.5x\n```\n")
    assert docs.typed_numbers(head + block + clean + tail) == []
    for typed in ["PMD reaches 98.72 accuracy.", "an error 12% lower", "ours is 3.2× faster", "ours is 12x faster"]:
        assert docs.typed_numbers(head + block + clean + typed + "\n" + tail) == [typed]
        assert docs.typed_numbers(head + block + clean + tail + typed + "\n") == [typed]  # the whole document


def test_no_measured_value_is_compared_in_words_in_the_results_prose():
    assert docs.typed_comparisons(docs.RESULTS.read_text()) == []


def test_a_comparison_in_words_is_caught_and_settings_are_not():
    head = "# x\n\n## Eleven of twelve posteriors\n\nIntro.\n\n"
    block = ("<!-- generated: t from results/t.md -->\nPMD ranks **2 of 17**, eleven of twelve, a tenth above.\n"
             "<!-- /generated: t -->\n")
    clean = ("One seed per method, ten times the standard budget, 1000 draws, 4 chains × 1000 draws, Table 1 of\n"
             "the paper and section 6 of it, Figure 2(3) is the third panel, batches of 100, `half as long`.\n"
             "```\ntwice as fast\n```\n")
    tail = "\n## Next\n\nAnother section.\n"
    assert docs.typed_comparisons(head + block + clean + tail) == []
    for typed, phrase in [("SVI reaches eleven of twelve posteriors.", "eleven of"),
                          ("BlackJAX's tempered SMC reaches 12 of 12.", "12 of 12"),
                          ("at a median work about a tenth above PMD's.", "a tenth"),
                          ("for a two-hundredth of PMD's work", "a two-hundredth"),
                          ("three quarters of it is compilation", "three quarters"),
                          ("half as long again", "half as"),
                          ("it takes twice NUTS's time", "twice"),
                          ("about three times faster than NUTS", "times faster"),
                          ("at up to a hundred times PMD's work", "times PMD's"),
                          ("it is 3 × faster", "× faster"),
                          ("PMD ranks first on posteriordb", "ranks first"),
                          ("it ranks **2** after tuning", "ranks **2"),
                          ("PMD is fifth of eleven", "fifth of eleven"),
                          ("ahead by twelve standard errors", "twelve standard errors"),
                          ("a lead of five and a half standard errors", "five and a half standard errors"),
                          ("SVI solves ten of\ntwelve, a line apart", "ten of")]:
        for text in (head + block + clean + typed + "\n" + tail, head + block + clean + tail + typed + "\n"):
            hits = docs.typed_comparisons(text)
            assert len(hits) == 1 and phrase in hits[0], (typed, hits)


def test_a_text_output_renders_as_a_code_block():
    assert docs.render_source("results/docs/out.txt", "\nline 1\nline 2\n\n") == "```text\nline 1\nline 2\n```"


def test_one_block_is_refreshed_from_its_file_and_the_others_from_the_snapshot(tmp_path):
    text = ("<!-- generated: a from results/a.md -->\nold a\n<!-- /generated: a -->\n"
            "<!-- generated: b from results/b.md -->\nold b\n<!-- /generated: b -->\n")
    snapshot = {"results/a.md": "old a\n", "results/b.md": "old b\n"}
    (tmp_path / "results").mkdir()
    (tmp_path / "results/a.md").write_text("new a\n")
    assert docs.refreshed_sources(text, snapshot, ["a"], tmp_path) == {"results/a.md": "new a\n",
                                                                         "results/b.md": "old b\n"}
    # a block removed from the documents takes its source out of the snapshot
    removed = {**snapshot, "results/gone.md": "a block no document has any more\n"}
    assert "results/gone.md" not in docs.refreshed_sources(text, removed, ["a"], tmp_path)
    with pytest.raises(FileNotFoundError, match="'b'.*results/b.md"):
        docs.refreshed_sources(text, snapshot, ["b"], tmp_path)
    with pytest.raises(ValueError, match="no generated block 'c'"):
        docs.refreshed_sources(text, snapshot, ["c"], tmp_path)

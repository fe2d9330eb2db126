"""Write and read ``.npy`` files of rows chunk by chunk, holding one chunk in memory at a time.

Plain file reads and writes rather than a memory map: the file's pages never count towards the
process's resident memory, which keeps the peak of a 1.6M-row preparation bounded by its chunk.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from pmd_bench.datasets.errors import FormatError


class NpyRowWriter:
    """Append rows of shape ``row_shape`` and dtype ``dtype`` to a new ``.npy`` file.

    The header is written for zero rows and rewritten with the final count on :meth:`close`
    (numpy pads the header so that the row count can grow in place).
    """

    def __init__(self, path: str | Path, row_shape: tuple[int, ...], dtype) -> None:
        self.path = Path(path)
        self.row_shape = tuple(row_shape)
        self.dtype = np.dtype(dtype)
        self.rows = 0
        self._handle = open(self.path, "wb")
        self._header_size = self._write_header()

    def _write_header(self) -> int:
        self._handle.seek(0)
        header = {
            "descr": np.lib.format.dtype_to_descr(self.dtype),
            "fortran_order": False,
            "shape": (self.rows, *self.row_shape),
        }
        np.lib.format.write_array_header_1_0(self._handle, header)
        return self._handle.tell()

    def append(self, chunk: np.ndarray) -> None:
        """Write ``chunk`` (shape ``(k, *row_shape)``) after the rows written so far."""
        if chunk.shape[1:] != self.row_shape:
            raise ValueError(f"{self.path}: chunk rows have shape {chunk.shape[1:]}, expected {self.row_shape}")
        self._handle.write(np.ascontiguousarray(chunk, dtype=self.dtype).tobytes())
        self.rows += len(chunk)

    def close(self) -> None:
        """Record the final row count in the header and close the file."""
        end = self._handle.tell()
        if self._write_header() != self._header_size:
            raise RuntimeError(f"{self.path}: .npy header changed size when rewritten")
        self._handle.seek(end)
        self._handle.close()

    def __enter__(self) -> NpyRowWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        if exc_info[0] is None:
            self.close()
        else:
            self._handle.close()


def npy_shape(path: str | Path) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype recorded in a ``.npy`` header."""
    with open(path, "rb") as handle:
        np.lib.format.read_magic(handle)
        shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(handle)
    if fortran_order:
        raise FormatError(f"{path}: Fortran-ordered .npy files cannot be streamed by rows")
    return shape, dtype


def iter_npy_rows(path: str | Path, chunk_rows: int) -> Iterator[np.ndarray]:
    """Yield a row-major ``.npy`` file in consecutive chunks of ``chunk_rows`` rows (the last may be shorter)."""
    shape, dtype = npy_shape(path)
    row_items = int(np.prod(shape[1:]))
    with open(path, "rb") as handle:
        np.lib.format.read_magic(handle)
        np.lib.format.read_array_header_1_0(handle)
        for start in range(0, shape[0], chunk_rows):
            rows = min(chunk_rows, shape[0] - start)
            chunk = np.fromfile(handle, dtype=dtype, count=rows * row_items)
            if chunk.size != rows * row_items:
                raise FormatError(f"{path}: file ends before row {start + rows:,} of {shape[0]:,}")
            yield chunk.reshape(rows, *shape[1:])

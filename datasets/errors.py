"""The errors the datasets package raises; each message names the file, field or value at fault."""


class DatasetError(Exception):
    """Base class of every error raised by :mod:`datasets`."""


class ChecksumError(DatasetError):
    """A file's SHA-256 (or byte size) differs from the registry's or from the hash pinned earlier."""


class DownloadError(DatasetError):
    """No copy of a source file could be found or downloaded."""


class FormatError(DatasetError):
    """A file's content is not what its format or the registry says it should be."""

"""File helpers: atomic writes, checksums, and transparent gzip.

Results are files first (DESIGN.md): every file another stage reads is written to a
temporary name in the same directory, flushed to disk and renamed, so a crash, a kill or a
full disk never leaves a half-written file under its final name.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

GZIP_MAGIC = b"\x1f\x8b"
# What reading a truncated or corrupt (gzip) text file raises, beside the format's own errors.
UNREADABLE = (EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError)
_CHUNK = 1 << 20
FILE_MODE = 0o666  # what open() asks for a new file, before the umask
DIRECTORY_MODE = 0o777  # what mkdir() asks for, before the umask


def md5_file(path: Path, *, decompress: bool = False) -> str:
    """MD5 of a file's bytes (of its decompressed bytes with `decompress`)."""
    digest = hashlib.md5()
    opener = gzip.open if decompress else open
    with opener(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def is_gzip(path: Path) -> bool:
    """Whether the file starts with the gzip magic bytes (whatever its name)."""
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def open_text(path: Path) -> IO[str]:
    """Open a text file for reading, decompressing it when it is gzip."""
    if is_gzip(path):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


@contextlib.contextmanager
def atomic_open(path: Path, mode: str = "wb", *, gzip_level: int | None = None) -> Iterator[IO[Any]]:
    """Write `path` through a temporary sibling that replaces it only on success.

    With `gzip_level` the content is gzip-compressed with mtime 0, so that equal content
    gives byte-identical files (and equal md5s) on every run.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as raw:
            os.fchmod(raw.fileno(), default_permissions(FILE_MODE))  # not mkstemp's owner-only 0600: others may read results
            binary: IO[bytes] = raw
            if gzip_level is not None:
                binary = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=gzip_level, mtime=0)
            if "t" in mode:
                text = io.TextIOWrapper(binary, encoding="utf-8", newline="\n")
                yield text
                text.flush()
                text.detach()
            else:
                yield binary
            if binary is not raw:
                binary.close()  # writes the gzip trailer; leaves `raw` open
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def default_permissions(mode: int) -> int:
    """`mode` less the process's umask: the permissions open() or mkdir() would give a new file or directory."""
    umask = os.umask(0)  # reading the umask means setting it; it is restored at once
    os.umask(umask)
    return mode & ~umask


def atomic_write_json(path: Path, payload: Any, *, gzip_level: int | None = None) -> None:
    """Write JSON atomically (pretty-printed when uncompressed, for people reading job dirs)."""
    indent = None if gzip_level is not None else 2
    with atomic_open(path, "wt", gzip_level=gzip_level) as handle:
        json.dump(payload, handle, indent=indent, sort_keys=True, ensure_ascii=False)
        handle.write("\n")


def read_json(path: Path) -> Any:
    """Read a JSON file, gzip-compressed or not."""
    with open_text(path) as handle:
        return json.load(handle)


def publish_directory(staging: Path, final: Path) -> None:
    """Replace directory `final` by the finished `staging` directory in one rename.

    The old directory, if any, is moved aside first and removed only after the new one is
    in place, so readers see either the old complete content or the new complete content.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    retired = None
    if final.exists():
        retired = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, retired)
    os.replace(staging, final)
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)

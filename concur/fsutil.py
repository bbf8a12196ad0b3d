"""File helpers: atomic writes, checksums, and transparent gzip.

Results are files first: every file another stage reads is written to a
temporary name in the same directory, flushed to disk and renamed, so a crash, a kill or a
full disk never leaves a half-written file under its final name.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import socket
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from concur.errors import ConcurError
from concur.oserrors import with_path
from concur.processes import process_gone

GZIP_MAGIC = b"\x1f\x8b"
# What reading a truncated or corrupt (gzip) text file raises, beside the format's own errors.
UNREADABLE = (EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError)
_CHUNK = 1 << 20
FILE_MODE = 0o666  # what open() asks for a new file, before the umask
DIRECTORY_MODE = 0o777  # what mkdir() asks for, before the umask
# A leftover tagged by another host cannot have its writer asked whether it still runs: it is
# taken as abandoned once untouched this long (no write of ours pauses for a day).
ABANDONED_AFTER_SECONDS = 24 * 60 * 60
OWNER_SEPARATOR = "@"  # in `STEM@HOST@PID[.SUFFIX]`, the names of files and directories a process owns while it writes them
STAGING_SUFFIX = ".staging"  # `.NAME.staging@HOST@PID`: a directory being built before it is published as NAME
RETIRED_SUFFIX = ".old"  # `.NAME.old@HOST@PID`: the previous NAME, moved aside while the new one is published


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
    fd, tmp_name = tempfile.mkstemp(prefix=owned_name(f".{path.name}") + ".", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as raw:
            os.fchmod(raw.fileno(), default_permissions(FILE_MODE))  # not mkstemp's owner-only 0600: others may read results
            binary: IO[bytes] = raw
            if gzip_level is not None:
                # typeshed's GzipFile is a BufferedIOBase, not an IO[bytes], though it has all of IO[bytes]'s methods
                binary = cast(IO[bytes], gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=gzip_level, mtime=0))
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
    except OSError as error:  # a full disk while writing: named by the file meant, not a nameless handle
        tmp.unlink(missing_ok=True)
        if error.filename is None:
            raise with_path(error, path) from error
        raise
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


def move_aside(path: Path, destination: Path) -> Path:
    """Move a damaged file to `destination` (same filesystem: a rename), refusing to replace anything there; returns it."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.exists():
        raise ConcurError(f"cannot move {path} aside: {destination} exists already")
    os.replace(path, destination)
    return destination


def read_json(path: Path) -> Any:
    """Read a JSON file, gzip-compressed or not."""
    with open_text(path) as handle:
        return json.load(handle)


def publish_directory(staging: Path, final: Path) -> bool:
    """Replace directory `final` by the finished `staging` directory in one rename; False when another process won.

    The old directory, if any, is moved aside first and removed only after the new one is
    in place, so readers see either the old complete content or the new complete content;
    if the new one cannot be put in place the old one is moved back. When another process
    publishes `final` between the two renames (drivers preparing one benchmark together), its
    directory is as new as ours and stays: ours and the old one are removed, and False is
    returned. `final` must name an entry directly inside the staging directory's parent
    (where the rename is atomic): a name such as `.` or `..` would otherwise move the parent
    itself or what lies above it.
    """
    parent = staging.parent
    _require_entry_of(parent, final)
    remove_leftovers(final)
    retired = None
    if final.exists():
        retired = parent / owned_name(f".{final.name}{RETIRED_SUFFIX}")
        shutil.rmtree(retired, ignore_errors=True)  # this very name can only be left by an earlier process with our pid
        os.replace(final, retired)
    try:
        os.replace(staging, final)
    except OSError as error:
        if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):  # not a directory another process put there
            if retired is not None:
                os.replace(retired, final)
            raise
        published = False
    except BaseException:
        if retired is not None:
            os.replace(retired, final)
        raise
    else:
        published = True
    for leftover in (retired, None if published else staging):
        if leftover is not None:
            shutil.rmtree(leftover, ignore_errors=True)
    return published


def entry_path(parent: Path, name: str) -> Path:
    """`parent / name`, refused unless `name` is one plain entry: `.`, `..`, `a/b` or an absolute path reach elsewhere."""
    if name in ("", ".", "..") or "/" in name or (os.altsep and os.altsep in name):
        raise ConcurError(f"{name!r} does not name an entry directly inside {parent}; refusing to write there")
    return parent / name


def _require_entry_of(parent: Path, final: Path) -> None:
    """Refuse a `final` that is not strictly inside `parent` (its parent itself, above it, or deeper)."""
    if final.name in ("", ".", "..") or final.parent.resolve() != parent.resolve():
        raise ConcurError(f"refusing to publish {final}: it is not a directory strictly inside {parent}")


def this_host() -> str:
    """This machine's name as it appears in owned names (without the separator, which a host name never holds)."""
    return socket.gethostname().replace(OWNER_SEPARATOR, "_").replace("/", "_")


def owned_name(stem: str) -> str:
    """`STEM@HOST@PID`: a name that tells which process wrote it, so its leftover can be removed once that process is gone."""
    return f"{stem}{OWNER_SEPARATOR}{this_host()}{OWNER_SEPARATOR}{os.getpid()}"


def staging_directory(final: Path) -> Path:
    """Where this process builds the directory it will publish as `final` (a sibling, so the rename is atomic)."""
    _require_entry_of(final.parent, final)
    return final.parent / owned_name(f".{final.name}{STAGING_SUFFIX}")


def remove_leftovers(final: Path) -> None:
    """Remove the staging and retired siblings of `final` whose writers were killed (see `remove_abandoned`)."""
    for suffix in (STAGING_SUFFIX, RETIRED_SUFFIX):
        remove_abandoned(final.parent, f".{final.name}{suffix}")


def remove_abandoned_temporaries(path: Path) -> None:
    """Remove the temporary files `atomic_open` left beside `path` when a writer was killed before its rename."""
    remove_abandoned(path.parent, f".{path.name}")


def remove_abandoned(directory: Path, stem: str) -> list[Path]:
    """Remove the entries `owned_name(stem)[.SUFFIX]` in `directory` whose writer is gone; returns them.

    A writer on this host is gone when its pid no longer runs; one on another host when the
    entry is older than `ABANDONED_AFTER_SECONDS`. Nothing of a running writer is touched
    (a reused pid only keeps a leftover a while longer). Failures (a read-only directory,
    a concurrent removal) are ignored: a leftover is never worth failing the work for.
    """
    pattern = re.compile(re.escape(stem) + rf"{OWNER_SEPARATOR}([^{OWNER_SEPARATOR}/]+){OWNER_SEPARATOR}(\d+)(\.[^{OWNER_SEPARATOR}/]*)?")
    removed: list[Path] = []
    try:
        entries = list(directory.iterdir()) if directory.is_dir() else []
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or not _abandoned(entry, match.group(1), int(match.group(2))):
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError:
            continue
        removed.append(entry)
    return removed


def _abandoned(entry: Path, host: str, pid: int) -> bool:
    """Whether the process that owns `entry` is gone (see `remove_abandoned`)."""
    if host == this_host():
        return pid != os.getpid() and not _pid_runs(pid)
    try:
        stat = entry.lstat()
    except OSError:
        return False
    return time.time() - max(stat.st_mtime, stat.st_ctime) > ABANDONED_AFTER_SECONDS


def _pid_runs(pid: int) -> bool:
    """Whether a process with this pid runs on this host (one owned by another user counts; a zombie does not)."""
    return process_gone(pid, None) is None

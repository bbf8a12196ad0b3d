"""Download source files and extract archive members, verified, resumable and atomic.

A download streams into `<name>.part` beside its destination; `<name>.part.json` records the
URL and the server's validator (ETag or Last-Modified). An interrupted or truncated transfer
keeps its bytes there, and the next attempt asks only for the rest (`Range` with `If-Range`,
so a file that changed upstream is fetched whole again). The finished file is renamed into
place only after its size, its md5 and (for gzip data without a declared md5) its whole gzip
stream check out, so a wrong checksum, a truncated transfer, an HTML error page or a dropped
connection never leaves a file under its final name. Bytes that can never become right (a
wrong md5, a corrupt gzip stream, an HTML page) are deleted rather than kept for resuming.
A killed download (SIGKILL, a lost node) leaves only `<name>.part` and `<name>.part.json`,
named so that no reader takes them for data; the next attempt resumes from them, and removes
the temporary files a killed writer of `<name>` or its resume state left (`.<name>@HOST@PID...`).

Archive members are copied out of `.tar[.gz]` and `.zip` archives the same way: through a
temporary file that replaces the destination only when the member's md5 matches.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import http.client
import json
import os
import re
import tarfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from concur import __version__
from concur.errors import DownloadError, closest
from concur.fsutil import GZIP_MAGIC, atomic_open, atomic_write_json, md5_file, remove_abandoned_temporaries
from concur.progress import download_progress

TIMEOUT_SECONDS = 60
PARTIAL_SUFFIX = ".part"
RESUME_STATE_SUFFIX = ".part.json"
GZIP_NAMES = (".gz", ".tgz")
ZIP_MAGIC = b"PK\x03\x04"
_CHUNK = 1 << 16
_HEAD = 512  # bytes inspected for an HTML page served in place of data
_HTML_PREFIXES = (b"<!doctype html", b"<html", b"<head")
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


@dataclass(frozen=True)
class _Resume:
    """What the next request continues from: bytes already in the partial file and their validator."""

    offset: int
    validator: str | None
    size: int | None  # the whole file's size, when the server told


class _RangeRefused(Exception):
    """The server cannot continue the partial file (416, or another range than asked): start over."""


def partial_path(destination: Path) -> Path:
    """Where the bytes of an unfinished download of `destination` are kept for resuming."""
    return destination.with_name(destination.name + PARTIAL_SUFFIX)


def download(url: str, destination: Path, md5: str | None) -> str:
    """Fetch `url` into `destination`, resuming an earlier partial transfer; returns the md5 of the file."""
    partial = partial_path(destination)
    for path in (destination, _resume_state_path(partial)):
        remove_abandoned_temporaries(path)
    try:
        try:
            _transfer(url, partial, _resume_state(url, partial))
        except _RangeRefused:
            _discard(partial)
            _transfer(url, partial, None)
    except DownloadError:
        _discard_if_empty(partial)
        raise
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
        kept = _discard_if_empty(partial)
        reason = getattr(exc, "reason", exc)
        raise DownloadError(f"{url}: download failed ({reason}) after {kept:,} bytes" + _kept_note(partial, kept)) from None
    return _publish(url, partial, destination, md5)


def _transfer(url: str, partial: Path, resume: _Resume | None) -> None:
    """Stream the response into `partial`, appending on `206` and starting over on `200`."""
    headers = {"User-Agent": f"concur/{__version__}"}
    if resume is not None:
        headers["Range"] = f"bytes={resume.offset}-"
        if resume.validator:
            headers["If-Range"] = resume.validator
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS)
    except urllib.error.HTTPError as exc:
        if resume is not None and exc.code == http.HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE:
            exc.close()
            raise _RangeRefused from None
        raise
    with response:
        length = _content_length(response)
        if response.status == http.HTTPStatus.PARTIAL_CONTENT:
            if resume is None:
                raise DownloadError(f"{url}: the server answered 206 Partial Content to a request for the whole file")
            offset, mode, head = resume.offset, "ab", _read_head(partial)
            size = _range_total(response.headers.get("Content-Range"), resume)
        else:  # a complete body: the first request, a server that ignores ranges, or a file changed upstream
            offset, mode, head, size = 0, "wb", b"", length
            partial.parent.mkdir(parents=True, exist_ok=True)
            _save_resume_state(url, partial, _validator(response), size)
        received, html = 0, False
        try:
            with download_progress() as bar, open(partial, mode) as handle:
                task = bar.add_task(partial.name.removesuffix(PARTIAL_SUFFIX), total=size, completed=offset)
                while chunk := response.read(_CHUNK):
                    if len(head) < _HEAD:
                        head += chunk[: _HEAD - len(head)]
                        if html := _is_html(head):
                            break
                    handle.write(chunk)
                    received += len(chunk)
                    bar.update(task, advance=len(chunk))
        except http.client.IncompleteRead:
            raise _truncated(url, partial, size) from None
    if html:
        _discard(partial)
        raise DownloadError(f"{url}: received an HTML page instead of the data file (an error or login page?)")
    if length is not None and received != length:
        raise _truncated(url, partial, size)
    if offset + received == 0:
        _discard(partial)
        raise DownloadError(f"{url}: the server sent an empty file")


def _publish(url: str, partial: Path, destination: Path, md5: str | None) -> str:
    """Verify the complete partial file and rename it to `destination` (fsync first)."""
    actual = md5_file(partial)
    if md5 is not None and actual != md5:
        size = partial.stat().st_size
        _discard(partial)
        raise DownloadError(f"{url}: md5 mismatch, expected {md5} but got {actual} ({size:,} bytes); the download was deleted")
    if md5 is None and _looks_gzip(destination, partial):
        problem = _gzip_problem(partial)
        if problem is not None:
            _discard(partial)
            raise DownloadError(f"{url}: the gzip stream is corrupt or truncated ({problem}); the download was deleted")
    with open(partial, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(partial, destination)
    _resume_state_path(partial).unlink(missing_ok=True)
    return actual


def _resume_state(url: str, partial: Path) -> _Resume | None:
    """The partial file's resume point, if it holds bytes of this very URL."""
    state_path = _resume_state_path(partial)
    if not partial.is_file() or not state_path.is_file():
        _discard(partial)
        return None
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = None
    offset = partial.stat().st_size
    if not isinstance(state, dict) or state.get("url") != url or offset == 0 or offset == state.get("size"):
        _discard(partial)  # another URL's bytes, or a complete file left by a crash before its rename: fetch again
        return None
    return _Resume(offset=offset, validator=state.get("validator"), size=state.get("size"))


def _save_resume_state(url: str, partial: Path, validator: str | None, size: int | None) -> None:
    atomic_write_json(_resume_state_path(partial), {"url": url, "validator": validator, "size": size})


def _resume_state_path(partial: Path) -> Path:
    return partial.with_name(partial.name.removesuffix(PARTIAL_SUFFIX) + RESUME_STATE_SUFFIX)


def _discard(partial: Path) -> None:
    partial.unlink(missing_ok=True)
    _resume_state_path(partial).unlink(missing_ok=True)


def _discard_if_empty(partial: Path) -> int:
    """Remove a partial file with nothing to resume from; returns the bytes it keeps."""
    kept = partial.stat().st_size if partial.is_file() else 0
    if not kept:
        _discard(partial)
    return kept


def _truncated(url: str, partial: Path, size: int | None) -> DownloadError:
    kept = _discard_if_empty(partial)
    of = f" of {size:,}" if size is not None else ""
    return DownloadError(f"{url}: truncated download, the connection closed after {kept:,}{of} bytes" + _kept_note(partial, kept))


def _kept_note(partial: Path, kept: int) -> str:
    return f"; the bytes received are kept in {partial} and the next attempt resumes from there" if kept else ""


def _range_total(content_range: str | None, resume: _Resume) -> int | None:
    """The whole file's size from a 206 answer that continues the partial file exactly where it ends."""
    match = _CONTENT_RANGE.fullmatch((content_range or "").strip())
    if match is None or int(match.group(1)) != resume.offset:
        raise _RangeRefused
    total = None if match.group(3) == "*" else int(match.group(3))
    if total is not None and resume.size is not None and total != resume.size:
        raise _RangeRefused  # the file's size changed upstream: these bytes belong to another version
    return total if total is not None else resume.size


def _validator(response) -> str | None:
    """The response's strong ETag, else its Last-Modified: what `If-Range` may carry (RFC 9110)."""
    etag = response.headers.get("ETag")
    if etag and not etag.startswith("W/"):
        return etag
    return response.headers.get("Last-Modified")


def _content_length(response) -> int | None:
    value = response.headers.get("Content-Length")
    return int(value) if value and value.isdigit() else None


def _read_head(partial: Path) -> bytes:
    with open(partial, "rb") as handle:
        return handle.read(_HEAD)


def _is_html(head: bytes) -> bool:
    """Whether the file starts like an HTML page (a login, error or redirect page) served in place of data."""
    return head.lstrip().lower().startswith(_HTML_PREFIXES)


def _looks_gzip(destination: Path, partial: Path) -> bool:
    return destination.name.endswith(GZIP_NAMES) or _read_head(partial).startswith(GZIP_MAGIC)


def _gzip_problem(path: Path) -> str | None:
    """Why the file's gzip stream does not decompress to its end, or None when it does."""
    try:
        with gzip.open(path, "rb") as stream:
            for _ in iter(lambda: stream.read(_CHUNK), b""):  # read to the end: a damaged stream raises on the way
                continue
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        return str(exc) or type(exc).__name__
    return None


def extract_member(archive: Path, member: str, destination: Path, md5: str | None) -> str:
    """Copy one file out of a tar or zip archive into `destination`; returns its md5."""
    kind = "zip" if archive.name.endswith(".zip") or _starts_with(archive, ZIP_MAGIC) else "tar"
    opener = _zip_member if kind == "zip" else _tar_member
    digest = hashlib.md5()
    remove_abandoned_temporaries(destination)
    try:
        with opener(archive, member) as source, atomic_open(destination) as handle:
            while chunk := source.read(_CHUNK):
                handle.write(chunk)
                digest.update(chunk)
            if md5 is not None and digest.hexdigest() != md5:
                raise DownloadError(f"{archive}: member {member!r} has md5 {digest.hexdigest()}, expected {md5}")
    except (tarfile.TarError, zipfile.BadZipFile, gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise DownloadError(f"{archive}: not a readable {kind} archive ({exc})") from None
    return digest.hexdigest()


@contextlib.contextmanager
def _tar_member(archive: Path, member: str) -> Iterator[IO[bytes]]:
    with tarfile.open(archive) as tar:
        try:
            info = tar.getmember(member)
        except KeyError:
            raise _no_member(archive, member, tar.getnames()) from None
        source = tar.extractfile(info)
        if source is None:
            raise DownloadError(f"{archive}: member {member!r} is not a regular file")
        with source:
            yield source


@contextlib.contextmanager
def _zip_member(archive: Path, member: str) -> Iterator[IO[bytes]]:
    with zipfile.ZipFile(archive) as bundle:
        try:
            info = bundle.getinfo(member)
        except KeyError:
            raise _no_member(archive, member, bundle.namelist()) from None
        if info.is_dir():
            raise DownloadError(f"{archive}: member {member!r} is not a regular file")
        with bundle.open(info) as source:
            yield source


def _no_member(archive: Path, member: str, names: list[str]) -> DownloadError:
    hint = closest(member, names)
    return DownloadError(f"{archive}: has no member {member!r}" + (f"; did you mean {hint!r}?" if hint else ""))


def _starts_with(path: Path, magic: bytes) -> bool:
    with open(path, "rb") as handle:
        return handle.read(len(magic)) == magic

"""Download source files and extract archive members, verified and atomic.

A download streams into a temporary file beside its destination and is renamed into place
only after its size and md5 check out, so a wrong checksum, a truncated transfer, an HTML
error page or a dropped connection never leaves a file under its final name.
"""

from __future__ import annotations

import hashlib
import http.client
import shutil
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

from concur import __version__
from concur.errors import DownloadError, closest
from concur.fsutil import atomic_open, md5_file
from concur.progress import download_progress

TIMEOUT_SECONDS = 60
_CHUNK = 1 << 16
_HTML_PREFIXES = (b"<!doctype html", b"<html", b"<head")


def download(url: str, destination: Path, md5: str | None) -> str:
    """Fetch `url` into `destination`; returns the md5 of what was written."""
    request = urllib.request.Request(url, headers={"User-Agent": f"concur/{__version__}"})
    digest = hashlib.md5()
    received = 0
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            expected_size = _content_length(response)
            with download_progress() as bar, atomic_open(destination) as handle:
                task = bar.add_task(destination.name, total=expected_size)
                head = b""
                while chunk := response.read(_CHUNK):
                    if len(head) < 512:
                        head += chunk[:512]
                        _reject_html(url, head)
                    handle.write(chunk)
                    digest.update(chunk)
                    received += len(chunk)
                    bar.update(task, advance=len(chunk))
                if expected_size is not None and received != expected_size:
                    raise DownloadError(f"{url}: truncated download, received {received:,} of {expected_size:,} bytes")
                if not received:
                    raise DownloadError(f"{url}: the server sent an empty file")
                actual = digest.hexdigest()
                if md5 is not None and actual != md5:
                    raise DownloadError(f"{url}: md5 mismatch, expected {md5} but got {actual} ({received:,} bytes)")
    except http.client.IncompleteRead as exc:
        raise DownloadError(f"{url}: truncated download, the connection closed after {received + len(exc.partial):,} bytes") from None
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(f"{url}: download failed ({reason}) after {received:,} bytes") from None
    except OSError as exc:
        raise DownloadError(f"{url}: download failed ({exc}) after {received:,} bytes") from None
    return actual


def extract_member(archive: Path, member: str, destination: Path, md5: str | None) -> str:
    """Copy one file out of a tar archive into `destination`; returns its md5."""
    try:
        with tarfile.open(archive) as tar:
            try:
                info = tar.getmember(member)
            except KeyError:
                hint = closest(member, tar.getnames())
                raise DownloadError(f"{archive}: has no member {member!r}" + (f"; did you mean {hint!r}?" if hint else "")) from None
            source = tar.extractfile(info)
            if source is None:
                raise DownloadError(f"{archive}: member {member!r} is not a regular file")
            with source, atomic_open(destination) as handle:
                shutil.copyfileobj(source, handle, _CHUNK)
    except (tarfile.TarError, EOFError) as exc:
        raise DownloadError(f"{archive}: not a readable tar archive ({exc})") from None
    actual = md5_file(destination)
    if md5 is not None and actual != md5:
        destination.unlink()
        raise DownloadError(f"{archive}: member {member!r} has md5 {actual}, expected {md5}")
    return actual


def _content_length(response) -> int | None:
    value = response.headers.get("Content-Length")
    return int(value) if value and value.isdigit() else None


def _reject_html(url: str, head: bytes) -> None:
    """Fail on an HTML page (a login, error or redirect page) served in place of data."""
    if head.lstrip().lower().startswith(_HTML_PREFIXES):
        raise DownloadError(f"{url}: received an HTML page instead of the data file (an error or login page?)")

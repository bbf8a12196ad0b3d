"""Line-by-line reading of text files (plain or gzip) with errors that name file and line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from concur.errors import DataFormatError
from concur.fsutil import UNREADABLE, open_text
from concur.userfiles import parse_json


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """`(line number, line without its newline)`; a truncated or corrupt file is a DataFormatError."""
    number = 0
    try:
        with open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                yield number, line.rstrip("\n")
    except UNREADABLE as exc:
        raise DataFormatError(path, f"truncated, corrupt or not UTF-8 after line {number} ({exc})") from None


def parse_json_line(path: Path, line: str, number: int) -> Any:
    """One JSON value from line `number` of `path`; invalid JSON is a DataFormatError naming the line and column."""
    return parse_json(line, path, line=number)

"""Readers of upstream formats, by the names benchmark specs use in `reader = "..."`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from concur.data.babi import read_babi
from concur.data.model import Split
from concur.data.mrqa import read_mrqa
from concur.data.squad import read_squad
from concur.errors import DataFormatError, UnknownNameError
from concur.fsutil import UNREADABLE, open_text

Reader = Callable[[Path, str], Split]

READERS: dict[str, Reader] = {
    "mrqa": lambda path, split: _renamed(read_mrqa(path), split),
    "squad": read_squad,
    "babi": read_babi,
}


def get_reader(name: str) -> Reader:
    """The reader registered as `name`; unknown names suggest the closest."""
    if name not in READERS:
        raise UnknownNameError("reader", name, READERS)
    return READERS[name]


def detect_format(path: Path) -> str:
    """'mrqa' for JSON lines with a header, 'squad' for a SQuAD JSON document."""
    try:
        with open_text(path) as handle:
            first = handle.readline()
    except (*UNREADABLE, OSError) as exc:
        raise DataFormatError(path, f"unreadable: {exc}") from None
    if not first.strip():
        raise DataFormatError(path, "the file is empty")
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        return "squad"  # a pretty-printed JSON document spans many lines
    if isinstance(record, dict) and "header" in record:
        return "mrqa"
    if isinstance(record, dict) and "data" in record:
        return "squad"
    raise DataFormatError(path, "neither MRQA JSON lines (header first) nor SQuAD JSON ('data' list)", 1)


def read_any(path: Path) -> Split:
    """Read a SQuAD JSON or MRQA JSON-lines file, whichever it is."""
    return get_reader(detect_format(path))(path, "")


def _renamed(split: Split, name: str) -> Split:
    if name:
        split.split = name
    return split

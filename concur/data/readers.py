"""Reading a source with the reader its spec names, and telling the two common formats apart.

Readers are components (`concur.components`): a spec names one in `reader = "..."` and may
pass it options (`[sources.<name>.options]`, typed and checked when the spec is loaded) and
companion files (other sources of the same spec, named in the options: QAMR's questions need
the file of its sentences).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from concur.components import ReaderKind, resolve
from concur.data.model import Split
from concur.errors import DataFormatError
from concur.fsutil import UNREADABLE, open_text


def read_source(reader: str, path: Path, split_name: str, options: Mapping[str, Any], companions: Mapping[str, Path]) -> Split:
    """Read `path` with the named reader, its options, and its companions' located paths."""
    definition: ReaderKind = resolve("reader", reader)
    arguments = {name: companions[value] if name in definition.companions else value for name, value in options.items()}
    return definition.read(path, split_name, **arguments)


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
    return resolve("reader", detect_format(path)).read(path, "")

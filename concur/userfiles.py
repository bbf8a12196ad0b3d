"""Read the TOML and JSON files a user hands us, so that every problem is one line: `FILE, line L column C: problem`.

Specs, study files, recipes and configs are TOML; results imports, leaderboards, predictions
and upstream data are JSON (plain or gzip). Every such file is parsed here and nowhere else:
a syntax error names its line and column, and a binary, compressed or truncated file is said
to be one instead of ending in a UnicodeDecodeError traceback. TOML problems are `SpecError`s,
JSON problems `DataFormatError`s.
"""

from __future__ import annotations

import codecs
import gzip
import json
import re
import tomllib
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from concur.errors import ConcurError, DataFormatError, SpecError
from concur.fsutil import GZIP_MAGIC

_TOML_POSITION = re.compile(r"\s*\(at (?:line (?P<line>\d+), column (?P<column>\d+)|end of document)\)$")
_JSON_WHITESPACE = " \t\n\r"

Problem = Callable[[Path, str, int | None, int | None], ConcurError]  # (file, problem, line, column) -> the error to raise


def _spec_problem(path: Path, problem: str, line: int | None = None, column: int | None = None) -> SpecError:
    return SpecError(path, None, problem, line=line, column=column)


def load_toml(path: Path) -> dict[str, Any]:
    """A TOML file's table; any problem is a SpecError naming the file, line and column."""
    return parse_toml(read_text(path, "TOML", _spec_problem, gzip_ok=False), path)


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    """TOML `text` read from `path`; a syntax error names its line and column."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_POSITION.search(str(exc))
        message = str(exc)[: found.start()] if found else str(exc)
        if found and found["line"]:
            line, column = int(found["line"]), int(found["column"])
        else:  # "at end of document"
            line, column = text.count("\n") + 1, len(text) - (text.rfind("\n") + 1) + 1
        raise SpecError(path, None, f"invalid TOML: {message}", line=line, column=column) from None


def toml_key_line(path: Path, key: str) -> int | None:
    """The line of top-level `key = ...` in a TOML file (tomllib keeps no positions), for errors about its value."""
    pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*=")
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if line.lstrip().startswith("["):
            return None  # past the top-level keys
        if pattern.match(line):
            return number
    return None


def load_json(path: Path) -> Any:
    """A JSON file's value (plain or gzip); any problem is a DataFormatError naming the file, line and column."""
    return parse_json(read_text(path, "JSON", DataFormatError, gzip_ok=True), path)


def parse_json(text: str, path: Path, *, line: int = 1) -> Any:
    """JSON `text` from `path` starting at `line` (a JSON-lines record); a syntax error names its line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, f"invalid JSON: {exc.msg}", exc.lineno + line - 1, exc.colno) from None


def load_json_list(path: Path) -> list[tuple[int, Any]]:
    """`(line, element)` for each element of a file holding one JSON array, so that errors about an element name its line."""
    text = read_text(path, "JSON", DataFormatError, gzip_ok=True)
    value = parse_json(text, path)
    if not isinstance(value, list):
        raise DataFormatError(path, f"expected a JSON array [...] of objects, got a JSON {_json_kind(value)}", 1, 1)
    return list(zip(_element_lines(text), value, strict=True))


def read_text(path: Path, kind: str, problem: Problem, *, gzip_ok: bool) -> str:
    """The UTF-8 text of `path` (gunzipped where `gzip_ok`); a missing, binary or damaged file is `problem`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise problem(path, f"cannot read the {kind} file: {exc.strerror or exc}", None, None) from None
    if data[: len(GZIP_MAGIC)] == GZIP_MAGIC:
        if not gzip_ok:
            raise problem(path, f"is gzip-compressed, not {kind} text; decompress it first", None, None)
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise problem(path, f"a truncated or corrupt gzip file ({exc})", None, None) from None
    data = data.removeprefix(codecs.BOM_UTF8)  # a byte-order mark, as some editors write, is not content
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = len(data[data.rfind(b"\n", 0, exc.start) + 1 : exc.start].decode("utf-8")) + 1  # in characters, as editors count
        raise problem(
            path, f"not UTF-8 text (byte 0x{data[exc.start]:02x}); {kind} files must be UTF-8 (is this a binary file?)", line, column
        ) from None


def _element_lines(text: str) -> list[int]:
    """The line on which each element of the (valid) top-level JSON array in `text` starts."""
    decoder = json.JSONDecoder()
    index = _skip_whitespace(text, text.index("[") + 1)
    lines, line, counted = [], 1, 0
    while text[index] != "]":
        line += text.count("\n", counted, index)
        counted = index
        lines.append(line)
        _, index = decoder.raw_decode(text, index)
        index = _skip_whitespace(text, index)
        if text[index] == ",":
            index = _skip_whitespace(text, index + 1)
    return lines


def _skip_whitespace(text: str, index: int) -> int:
    while text[index] in _JSON_WHITESPACE:
        index += 1
    return index


def _json_kind(value: Any) -> str:
    """A JSON value's type as JSON names it, for messages."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")

"""Token annotations kept on disk per spaCy pipeline, so that the jobs of a study tag each text once.

A study trains each with-features reader on the same benchmark under several hyperparameter
settings and seeds, and tagging SQuAD's passages takes minutes every time. The cache is one
SQLite file per pipeline (its name and version, read from the pipeline's `meta.json` without
loading spaCy) under `runs/cache/annotations/`, keyed by a hash of each token sequence and its
spacing. Rows are written in one transaction per call, so a killed job leaves a valid cache,
and concurrent jobs share it (WAL). A job whose texts are all cached never imports spaCy, and
on a machine without the pipeline either (a GPU node), the cache is found by the pipeline's
name and records its version.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from concur.errors import ConcurError

Sequences = Sequence[tuple[Sequence[str], Sequence[bool]]]
Row = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]  # pos, ner, lemma

# SQLite's default limit on the parameters of one statement is 999 (before 3.32).
_KEYS_PER_QUERY = 900
_BUSY_TIMEOUT_S = 60.0
# `package==version` pins a pipeline's version, as pip does.
PIN = "=="


def pipeline_meta(pipeline: str) -> dict[str, Any] | None:
    """The `meta.json` of a pipeline directory or installed pipeline package; None when there is none."""
    directory = Path(pipeline)
    if not directory.is_dir():
        try:
            found = importlib.util.find_spec(pipeline) if pipeline.isidentifier() else None
        except (ImportError, ValueError):
            found = None
        if found is None or not found.submodule_search_locations:
            return None
        directory = Path(next(iter(found.submodule_search_locations)))
    meta = directory / "meta.json"
    if not meta.is_file():
        return None
    return json.loads(meta.read_text(encoding="utf-8"))


def pipeline_name(meta: dict[str, Any]) -> str:
    """`en_core_web_sm 2.2.5`: what a result records, and what the cache is keyed by."""
    return f"{meta['lang']}_{meta['name']} {meta['version']}"


def split_pin(pipeline: str) -> tuple[str, str | None]:
    """`en_core_web_sm==2.2.5` -> (`en_core_web_sm`, `2.2.5`): a spec may pin the pipeline's version; unpinned -> None."""
    package, pin, version = pipeline.partition(PIN)
    if pin and not (package and version):
        raise ConcurError(f"spaCy pipeline {pipeline!r}: a pinned pipeline reads 'en_core_web_sm{PIN}2.2.5'")
    return package, version or None


def cached_pipeline_name(cache_dir: Path, pipeline: str, version: str | None = None) -> str | None:
    """The recorded name of the one annotation cache that pipeline `pipeline` made, for a machine lacking the pipeline.

    `pipeline` is a package name or directory (`en_core_web_sm`, `.../site-packages/en_core_web_sm`)
    whose last part names the pipeline as its meta.json does; `version`, when given, is the only
    version that matches. None when no cache matches. Caches of several versions are ambiguous
    without `version`: only the pipeline's own meta.json could say which applies.
    """
    key = Path(pipeline).name
    matches = {}
    for path in sorted((cache_dir / "annotations").glob(f"{_file_stem(key)}-*.sqlite")):
        name = _recorded_name(path)
        if name is not None and name.partition(" ")[0] == key and version in (None, _version_of(name)):
            matches[name] = path
    if len(matches) > 1:
        listed = ", ".join(f"{name!r} ({path})" for name, path in matches.items())
        pinned = f"{key}{PIN}{_version_of(next(reversed(matches)))}"
        raise ConcurError(
            f"spaCy pipeline {pipeline!r} is not installed here and its annotation cache exists for several versions: "
            f"{listed}; pin one in the approach spec's [model] spacy_pipeline (e.g. {pinned!r}), install the pipeline "
            "(its meta.json says which version applies) or remove the other caches"
        )
    return next(iter(matches), None)


def _version_of(name: str) -> str:
    """`2.2.5` of the recorded name `en_core_web_sm 2.2.5`."""
    return name.rpartition(" ")[2]


def _recorded_name(path: Path) -> str | None:
    """The pipeline name a cache file records; None for a file without one."""
    try:
        connection = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S)
        try:
            if connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pipeline'").fetchone() is None:
                return None
            row = connection.execute("SELECT name FROM pipeline").fetchone()
        finally:
            connection.close()
    except sqlite3.DatabaseError as error:
        raise _unreadable(path, error) from error
    return row[0] if row else None


def _unreadable(path: Path, error: sqlite3.DatabaseError) -> ConcurError:
    return ConcurError(f"annotation cache {path} is unreadable ({error}); delete it and the texts are tagged again")


def _file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name)


def sequence_key(words: Sequence[str], spaces: Sequence[bool]) -> bytes:
    return hashlib.blake2b(json.dumps([list(words), [bool(s) for s in spaces]]).encode("utf-8"), digest_size=16).digest()


class AnnotationCache:
    """The cached annotations of one pipeline: look up many sequences at once, store many at once."""

    def __init__(self, cache_dir: Path, name: str) -> None:
        directory = cache_dir / "annotations"
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{_file_stem(name)}.sqlite"
        self.name = name
        try:
            with self._connect() as connection:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("CREATE TABLE IF NOT EXISTS annotations (key BLOB PRIMARY KEY, value TEXT NOT NULL)")
                # the exact name, for machines that have the cache but not the pipeline's meta.json
                connection.execute("CREATE TABLE IF NOT EXISTS pipeline (name TEXT NOT NULL)")
                if connection.execute("SELECT COUNT(*) FROM pipeline").fetchone() == (0,):
                    connection.execute("INSERT INTO pipeline (name) VALUES (?)", (name,))
        except sqlite3.DatabaseError as error:
            raise _unreadable(self.path, error) from error

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S)

    def lookup(self, keys: Sequence[bytes]) -> dict[bytes, Row]:
        """The cached rows among `keys`."""
        found: dict[bytes, Row] = {}
        unique = list(dict.fromkeys(keys))
        connection = self._connect()
        try:
            for chunk in _chunks(unique, _KEYS_PER_QUERY):
                marks = ",".join("?" * len(chunk))
                for key, value in connection.execute(f"SELECT key, value FROM annotations WHERE key IN ({marks})", chunk):
                    pos, ner, lemma = json.loads(value)
                    found[key] = (tuple(pos), tuple(ner), tuple(lemma))
        finally:
            connection.close()
        return found

    def store(self, rows: dict[bytes, Row]) -> None:
        """Add `rows` in one transaction."""
        if not rows:
            return
        connection = self._connect()
        try:
            with connection:
                connection.executemany(
                    "INSERT OR REPLACE INTO annotations (key, value) VALUES (?, ?)",
                    ((key, json.dumps([list(pos), list(ner), list(lemma)])) for key, (pos, ner, lemma) in rows.items()),
                )
        finally:
            connection.close()

    def __len__(self) -> int:
        connection = self._connect()
        try:
            return connection.execute("SELECT COUNT(*) FROM annotations").fetchone()[0]
        finally:
            connection.close()


def _chunks(items: list[bytes], size: int) -> Iterator[list[bytes]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]

"""Stream a Wikidata JSON dump (`latest-all.json.bz2` / `.gz`) into a `KGBuilder`, one entity at a time.

The dump is a JSON array written one entity per line: `[`, then `{...},` lines, then `]`.
It is read line by line through the standard library's streaming decompressors, so its
size does not matter. Per entity we take the English (by default) label and aliases, and:

- items: item-valued statements become triples, P31 (instance of) and P279 (subclass of)
  become hypernyms;
- item-valued properties: the inverse, from P1696 (inverse property), else P2302 (property
  constraint) = Q21510855 (inverse constraint) with its P2306 (property) qualifier, else
  P7087 (inverse label item).

Deprecated statements and no-value / unknown-value snaks are skipped.
"""

from __future__ import annotations

import bz2
import gzip
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.progress import Progress

from concur.data.kg import HYPERNYM_PROPERTIES, KGBuilder, is_id
from concur.data.textfile import parse_json_line
from concur.errors import DataFormatError
from concur.progress import download_progress

INVERSE_PROPERTY = "P1696"
PROPERTY_CONSTRAINT = "P2302"
INVERSE_CONSTRAINT = "Q21510855"
CONSTRAINT_PROPERTY = "P2306"  # the qualifier naming the constrained-to property
INVERSE_LABEL_ITEM = "P7087"
ITEM_DATATYPE = "wikibase-item"
_PROGRESS_EVERY = 1000  # lines between progress updates

_READ_ERRORS = (EOFError, OSError, UnicodeDecodeError)  # truncated or corrupt compressed streams


def read_dump(path: Path, builder: KGBuilder, language: str = "en") -> int:
    """Feed every entity of the dump to `builder`; returns the number of entities read."""
    entities = 0
    with download_progress() as progress:
        for number, entity in _entities(path, progress):
            entities += 1
            try:
                _add_entity(entity, builder, language)
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise DataFormatError(path, f"entity {entity.get('id')!r} is not shaped like a Wikidata entity ({exc!r})", number) from None
    return entities


def _decompressed(raw: io.BufferedReader) -> io.BufferedReader | bz2.BZ2File | gzip.GzipFile:
    """The dump's byte stream: bz2 and gzip recognised by their magic bytes, anything else read as is."""
    magic = raw.read(3)
    raw.seek(0)
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(raw)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=raw)
    return raw


def _entities(path: Path, progress: Progress) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line number, entity)` for each entity line; the array's brackets and trailing commas are dropped."""
    task = progress.add_task(f"read {path.name}", total=path.stat().st_size)
    number = 0
    try:
        with open(path, "rb") as raw, io.TextIOWrapper(_decompressed(raw), encoding="utf-8") as text:
            for number, line in enumerate(text, start=1):
                if number % _PROGRESS_EVERY == 0:
                    progress.update(task, completed=raw.tell())  # compressed bytes consumed
                stripped = line.strip()
                if stripped in ("[", "]", ""):
                    continue
                if stripped.endswith(","):
                    stripped = stripped[:-1]
                entity = parse_json_line(path, stripped, number)
                if not isinstance(entity, dict) or not isinstance(entity.get("id"), str):
                    raise DataFormatError(path, "expected an entity object with an 'id'", number)
                yield number, entity
    except _READ_ERRORS as exc:
        raise DataFormatError(path, f"truncated, corrupt or not UTF-8 after line {number} ({exc})") from None
    progress.update(task, completed=path.stat().st_size)


def _add_entity(entity: dict[str, Any], builder: KGBuilder, language: str) -> None:
    kind, identifier = entity.get("type"), entity["id"]
    labels = _texts(entity, language)
    claims = entity.get("claims") or {}
    if isinstance(claims, list):  # the dump writes an empty claims map as []
        claims = {}
    if kind == "item" and is_id(identifier, "Q"):
        builder.add_entity(identifier, labels)
        for pid, statements in claims.items():
            for target in dict.fromkeys(_item_values(statements)):
                if pid in HYPERNYM_PROPERTIES:
                    builder.add_hypernym(identifier, target)
                else:
                    builder.add_triple(identifier, pid, target)
    elif kind == "property" and is_id(identifier, "P") and entity.get("datatype") == ITEM_DATATYPE:
        builder.add_property(identifier, labels, _inverse(claims))


def _texts(entity: dict[str, Any], language: str) -> list[str]:
    """The label, then the aliases, in `language`."""
    label = (entity.get("labels") or {}).get(language)
    aliases = (entity.get("aliases") or {}).get(language) or []
    return ([label["value"]] if label else []) + [alias["value"] for alias in aliases]


def _values(statements: list[dict[str, Any]], entity_type: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """`(target id, statement)` of each non-deprecated statement whose value is an entity of `entity_type`."""
    for statement in statements:
        if statement.get("rank") == "deprecated":
            continue
        target = _snak_target(statement["mainsnak"], entity_type)
        if target is not None:
            yield target, statement


def _snak_target(snak: dict[str, Any], entity_type: str) -> str | None:
    if snak.get("snaktype") != "value":
        return None
    value = snak["datavalue"]["value"]
    if not isinstance(value, dict) or value.get("entity-type") != entity_type:
        return None
    letter = "Q" if entity_type == "item" else "P"
    target = value.get("id") or f"{letter}{value['numeric-id']}"
    return target if is_id(target, letter) else None


def _item_values(statements: list[dict[str, Any]]) -> Iterator[str]:
    return (target for target, _ in _values(statements, "item"))


def _inverse(claims: dict[str, list[dict[str, Any]]]) -> str | None:
    """The property's inverse: P1696, else an inverse constraint's property, else P7087's label item."""
    for target, _ in _values(claims.get(INVERSE_PROPERTY, []), "property"):
        return target
    for target, statement in _values(claims.get(PROPERTY_CONSTRAINT, []), "item"):
        if target == INVERSE_CONSTRAINT:
            for snak in (statement.get("qualifiers") or {}).get(CONSTRAINT_PROPERTY, []):
                qualifier = _snak_target(snak, "property")
                if qualifier is not None:
                    return qualifier
    for target, _ in _values(claims.get(INVERSE_LABEL_ITEM, []), "item"):
        return target
    return None

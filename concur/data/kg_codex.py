"""Build the WikidataSyntheticQA graph from CoDEx (Safavi & Koutra 2020) and FB15k-237's Wikidata labels.

Where no Wikidata dump is at hand, CoDEx supplies a Wikidata-derived graph: item-to-item
triples (`QID<TAB>PID<TAB>QID` per line, in `triples/codex-{s,m,l}/{train,valid,test}.txt`),
English property labels (`relations/en/relations.json`), each entity's instance-of /
subclass-of classes (`types/entity2types.json`, the hypernyms) and English labels of those
classes (`types/en/types.json`). CoDEx's own entity labels are not available here, so
entity labels and aliases come from FB15k-237's `entity2wikidata.json` (`label` and
`alternatives` of 14,515 popular entities), completed with the class labels. Hence:

- only entities with an English label are kept, and only triples between them (`KGBuilder`);
- CoDEx properties have a label and no aliases, and no inverses (CoDEx has no P1696 /
  P2302 / P7087 data), so questions never use an inverse property.

Every file may be a gzip copy; `.gz` is appended when the plain name is absent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from concur.data.kg import KGBuilder, is_id
from concur.data.textfile import numbered_lines
from concur.errors import DataFormatError, MissingSourceError
from concur.userfiles import load_json

CODEX_SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class CodexFiles:
    """The input files; `entity_types` and `type_labels` are optional (without them there are no hypernyms)."""

    triples: tuple[Path, ...]
    relations: Path
    labels: Path
    entity_types: Path | None = None
    type_labels: Path | None = None

    @classmethod
    def from_directory(cls, codex_data: Path, labels: Path, size: str = "m") -> CodexFiles:
        """The files of CoDEx-`size` under a checkout's `data/` directory (all three triple splits)."""
        return cls(
            triples=tuple(located(codex_data / "triples" / f"codex-{size}" / f"{split}.txt") for split in CODEX_SPLITS),
            relations=located(codex_data / "relations" / "en" / "relations.json"),
            labels=located(labels),
            entity_types=located(codex_data / "types" / "entity2types.json"),
            type_labels=located(codex_data / "types" / "en" / "types.json"),
        )

    def describe(self) -> str:
        """The KG header's `source`: the file names, which say which CoDEx graph and labels were used."""
        names = [*self.triples, self.relations, self.labels, self.entity_types, self.type_labels]
        return "codex: " + ", ".join(f"{path.parent.name}/{path.name.removesuffix('.gz')}" for path in names if path is not None)


def located(path: Path) -> Path:
    """`path`, or its gzip copy `path.gz`."""
    for candidate in (path, path.with_name(path.name + ".gz")):
        if candidate.is_file():
            return candidate
    raise MissingSourceError(f"{path} not found (nor {path.name}.gz)")


def read_codex(files: CodexFiles, builder: KGBuilder) -> None:
    """Feed the labelled entities, CoDEx properties, triples and types to `builder`."""
    for qid, labels in _entity_labels(files).items():
        builder.add_entity(qid, labels)
    for pid, relation in _json_object(files.relations).items():
        if not is_id(pid, "P") or not isinstance(relation, dict) or not isinstance(relation.get("label"), str):
            raise DataFormatError(files.relations, f"{pid!r} is not a property id with a 'label'")
        builder.add_property(pid, [relation["label"]])
    for path in files.triples:
        for subject, predicate, obj in _triples(path):
            builder.add_triple(subject, predicate, obj)
    if files.entity_types is not None:
        for qid, classes in _json_object(files.entity_types).items():
            if not is_id(qid, "Q") or not isinstance(classes, list) or not all(is_id(cls, "Q") for cls in classes):
                raise DataFormatError(files.entity_types, f"{qid!r} must map an item id to a list of item ids")
            for cls in dict.fromkeys(classes):
                builder.add_hypernym(qid, cls)


def _entity_labels(files: CodexFiles) -> dict[str, list[str]]:
    """Item id -> English label and aliases: FB15k-237's (in file order), then the class labels of types.json."""
    labels: dict[str, list[str]] = {}
    for key, entry in _json_object(files.labels).items():
        qid = entry.get("wikidata_id") if isinstance(entry, dict) else None
        if qid is None:
            continue  # an FB15k-237 entity with no Wikidata item
        names = [entry.get("label"), *(entry.get("alternatives") or [])]
        if not is_id(qid, "Q") or not all(isinstance(name, str) or name is None for name in names):
            raise DataFormatError(files.labels, f"entry {key!r} needs an item 'wikidata_id', a string 'label' and 'alternatives'")
        labels.setdefault(qid, []).extend(name for name in names if name)
    if files.type_labels is not None:
        for qid, entry in _json_object(files.type_labels).items():
            if not is_id(qid, "Q") or not isinstance(entry, dict) or not isinstance(entry.get("label"), str):
                raise DataFormatError(files.type_labels, f"{qid!r} is not a class id with a 'label'")
            labels.setdefault(qid, []).append(entry["label"])
    return labels


def _json_object(path: Path) -> dict[str, Any]:
    data = load_json(path)
    if not isinstance(data, dict):
        raise DataFormatError(path, "expected a JSON object")
    return data


def _triples(path: Path) -> Iterator[tuple[str, str, str]]:
    for number, line in numbered_lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 3 or not (is_id(fields[0], "Q") and is_id(fields[1], "P") and is_id(fields[2], "Q")):
            raise DataFormatError(path, "expected 'QID<TAB>PID<TAB>QID'", number)
        yield fields[0], fields[1], fields[2]

"""Public leaderboards as tidy tables: the MRQA 2019 shared task and SQuADShifts.

Leaderboards rank systems that other people trained, so they show whether benchmarks
rank *submitted systems* alike; each value is already reduced (one score per system), so
rows carry no `hparam_id` or `seed` (tidy.py). The files are declared in
`data/leaderboards.toml` and located and md5-checked by `SourceLocator`.

Ids. An approach id is a lowercase slug of the system's name ("+" spelled "plus", so that
"EAZI+" and "EAZI" stay apart). Names whose slugs coincide (the MRQA file lists
"Bert-Multi-Finetune (BLCU)" and "bert-multi-finetune (BLCU)", two submissions by one
user) are told apart deterministically: the earliest submission keeps the plain slug, the
next ones get "-2", "-3". Submission times are the same in all three MRQA files, so a
system has the same id in each. Benchmarks are `mrqa19-<split>-<dataset>` and
`squadshifts-<set>`, plus `squad-test` for the SQuAD v1.1 hidden test set.

SQuADShifts x SQuAD. The SQuADShifts leaderboard has no original-distribution score; it
comes from the SQuAD v1.1 leaderboard, which names systems differently. `match_squad`
compares normalised names (`parse_system_name`): case, white space, braces, URLs and the
institution are ignored, "(single)" equals "(single model)", and a missing "(single
model)"/"(ensemble)" matches either as long as that is unambiguous. Among resubmissions
under one name, a name's date ("MARS (single model, June 21 2018)") picks the entry
submitted within a day of it, the institution picks the entries of that institution, and
otherwise the latest scored submission wins. Models left without a match keep their
shifted-set scores; the notes list them with the reason.
"""

from __future__ import annotations

import contextlib
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, Literal, overload

import pandas as pd

from concur.analysis.tidy import tidy_frame
from concur.data.sources import SourceLocator
from concur.errors import DataFormatError, SpecError, UnknownNameError
from concur.registry.specs import SourceFile
from concur.userfiles import load_json, load_toml

LEADERBOARDS: tuple[str, ...] = ("mrqa2019-in-domain-dev", "mrqa2019-ood-dev", "mrqa2019-ood-test", "squadshifts")
SQUAD_LEADERBOARD = "squad-v1.1"  # the SQuADShifts models' SQuAD v1.1 test scores come from SQuAD's own leaderboard
SPEC_FILE = Path(__file__).parent / "data" / "leaderboards.toml"
SPEC_FIELDS = ("path", "md5", "url", "citation")

# A system's architecture is not reliably in its leaderboard name ("D-NET", "Delphi" are
# pretrained, names without "BERT" may be too), so leaderboard systems get a family of
# their own rather than a guessed "pretrained"/"non-pretrained" that would skew analyses
# sliced by family. All the datasets here were written or collected by people: "human".
APPROACH_FAMILY = "leaderboard system"
BENCHMARK_FAMILY = "human"

ROW_COLUMNS = ("approach", "benchmark", "em", "f1", "approach_name", "benchmark_name")
MRQA_SPLITS = {"mrqa2019-in-domain-dev": "indomain", "mrqa2019-ood-dev": "dev", "mrqa2019-ood-test": "test"}
MRQA_SPLIT_NAMES = {"indomain": "in-domain dev", "dev": "out-of-domain dev", "test": "out-of-domain test"}
MRQA_SCORE_KEY = re.compile(r"^(?P<dataset>.+)_(?P<metric>em|f1)$")

SHIFT_SETS = ("new-wiki", "nyt", "reddit", "amazon")
SHIFT_NAMES = {"new-wiki": "New Wikipedia", "nyt": "New York Times", "reddit": "Reddit", "amazon": "Amazon Reviews"}  # as in the paper
SQUAD_TEST = "squad-test"
SQUAD_TEST_NAME = "SQuAD v1.1 (hidden test)"
DATE_TOLERANCE = timedelta(days=1)  # a name's date is local time, `created` is UTC

MATCHED = "matched"
NO_ENTRY = "no SQuAD entry with this name"
UNSCORED = "its SQuAD entries have no score"
AMBIGUOUS_KIND = "the name does not say single model or ensemble, and SQuAD has both"
NO_ENTRY_ON_DATE = "no scored SQuAD entry submitted on the date the name gives"
SHARED = "another SQuADShifts model matches the same SQuAD entry"

_KINDS = {"single": "single", "single model": "single", "single-model": "single", "ensemble": "ensemble", "ensemble model": "ensemble"}
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")
_URL = re.compile(r"(?:https?://|www\.)\S*")
_GROUP = re.compile(r"\(([^()]*)\)")
_TRAILING_GROUP = re.compile(r"\(([^()]*)\)\s*$")
_DATE = re.compile(r"^(?P<month>[a-z]+)\.? (?P<day>\d{1,2})(?:,? (?P<year>\d{4}))?$")


@dataclass(frozen=True)
class ImportedResults:
    """A tidy table and what a reader should know about how it was made."""

    frame: pd.DataFrame
    notes: tuple[str, ...]


@dataclass(frozen=True)
class LeaderboardFile:
    """One declared upstream file and the work to cite for it."""

    source: SourceFile
    citation: str


@dataclass(frozen=True)
class SystemName:
    """A leaderboard name reduced to what identifies the system."""

    core: str  # the name proper, case- and space-folded
    kind: str | None  # "single" or "ensemble" when the name says so
    qualifier: str | None  # text after the kind, e.g. a date: "(single model, May 8 2019)"
    institution: str | None


@dataclass(frozen=True)
class SquadEntry:
    """One submission on the SQuAD v1.1 leaderboard (`em`, `f1` are None if never scored)."""

    description: str
    name: SystemName
    em: float | None
    f1: float | None
    created: int | None


@dataclass(frozen=True)
class Match:
    """The SQuAD entry a SQuADShifts model was matched to, or why there is none."""

    model: str
    entry: SquadEntry | None
    reason: str
    candidates: int  # scored SQuAD entries under the model's name (resubmissions when > 1)


@cache
def leaderboard_files() -> dict[str, LeaderboardFile]:
    """The upstream files, keyed as in `data/leaderboards.toml`."""
    spec = load_toml(SPEC_FILE)
    files = {}
    for key, table in spec.items():
        for field in SPEC_FIELDS:
            if not isinstance(table, dict) or not isinstance(table.get(field), str):
                raise SpecError(SPEC_FILE, f"{key}.{field}", "must be a string")
        source = SourceFile(name=key, reader="json", path=table["path"], md5=table["md5"], url=table["url"])
        files[key] = LeaderboardFile(source, table["citation"])
    return files


def leaderboard_sources(name: str) -> tuple[str, ...]:
    """The upstream files (keys of `leaderboard_files`) a leaderboard of `LEADERBOARDS` is read from."""
    if name not in LEADERBOARDS:
        raise UnknownNameError("leaderboard", name, LEADERBOARDS)
    return (name,) if name in MRQA_SPLITS else ("squadshifts", SQUAD_LEADERBOARD)


def load_leaderboard(name: str, locator: SourceLocator) -> ImportedResults:
    """Locate (md5-checked), read and convert one leaderboard of `LEADERBOARDS`."""
    files = [_read(key, locator) for key in leaderboard_sources(name)]
    read_notes = tuple(note for _, _, note in files)
    if name in MRQA_SPLITS:
        ((payload, origin, _),) = files
        results = mrqa_results(payload, MRQA_SPLITS[name], origin=origin)
    else:
        (shifts, shifts_origin, _), (squad, squad_origin, _) = files
        results = squadshifts_results(shifts, squad, shifts_origin=shifts_origin, squad_origin=squad_origin)
    return ImportedResults(results.frame, (*read_notes, *results.notes))


def mrqa_results(payload: Any, split: str, *, origin: str = "MRQA leaderboard") -> ImportedResults:
    """An MRQA 2019 CodaLab leaderboard (`split` one of indomain, dev, test) as a tidy table.

    Systems whose evaluation never ran have null scores; they are left out and named in the notes.
    """
    if split not in MRQA_SPLIT_NAMES:
        raise UnknownNameError("MRQA split", split, MRQA_SPLIT_NAMES)
    entries = _list(payload, "leaderboard", origin, "the file")
    names, created, scores = [], [], []
    for index, entry in enumerate(entries):
        submission = _get(entry, "submission", origin, f"leaderboard entry {index}")
        description = _get(submission, "description", origin, f"leaderboard entry {index}")
        where = f"leaderboard entry {index} ({description!r})"
        names.append(_display_name(description, origin, where))
        created.append(_timestamp(submission.get("created"), origin, where))
        scores.append(_mrqa_scores(_get(entry, "scores", origin, where), origin, where))
    datasets = sorted({dataset for entry_scores in scores for dataset in entry_scores}, key=str.lower)
    ids = unique_ids(names, [(stamp or 0, name) for stamp, name in zip(created, names)])
    rows, unscored = [], []
    for index, (approach, name, entry_scores) in enumerate(zip(ids, names, scores)):
        missing = [dataset for dataset in datasets if dataset not in entry_scores]
        if missing:
            raise DataFormatError(origin, f"leaderboard entry {index} ({name!r}): missing key {missing[0]}_em")
        scored = {dataset: (em, f1) for dataset, (em, f1) in entry_scores.items() if em is not None}
        if not scored:
            unscored.append(name)
        for dataset, (em, f1) in scored.items():
            rows.append((approach, f"mrqa19-{split}-{slug(dataset)}", em, f1, name, dataset))
    note = (
        f"MRQA 2019 {MRQA_SPLIT_NAMES[split]}: {len(entries) - len(unscored)} of {len(entries)} systems scored on "
        f"{len(datasets)} datasets ({', '.join(datasets)})"
    )
    if unscored:
        note += f"; {len(unscored)} left out (no scores): {'; '.join(unscored)}"
    return ImportedResults(_tidy(rows, origin), (note,))


def squadshifts_results(
    shifts_payload: Any, squad_payload: Any, *, shifts_origin: str = "SQuADShifts leaderboard", squad_origin: str = "SQuAD v1.1 leaderboard"
) -> ImportedResults:
    """SQuADShifts model scores, with their SQuAD v1.1 hidden-test score as benchmark `squad-test`."""
    models = _shift_scores(shifts_payload, "models", shifts_origin)
    names = list(dict.fromkeys(name for _, name, _, _, _ in models))
    ids = dict(zip(names, unique_ids(names, names)))
    institutions: dict[str, str] = {}
    for _, name, institution, _, _ in models:
        if institution:
            institutions.setdefault(name, institution)
    matches = match_squad([(name, institutions.get(name, "")) for name in names], squad_entries(squad_payload, origin=squad_origin))
    rows: list[tuple[str, str, float | None, float | None, str, str]] = [
        (ids[name], f"squadshifts-{shift}", em, f1, name, f"SQuADShifts {SHIFT_NAMES[shift]}") for shift, name, _, em, f1 in models
    ]
    rows += [(ids[m.model], SQUAD_TEST, m.entry.em, m.entry.f1, m.model, SQUAD_TEST_NAME) for m in matches if m.entry is not None]
    return ImportedResults(_tidy(rows, shifts_origin), _squadshifts_notes(models, matches))


def squadshifts_humans(shifts_payload: Any, *, origin: str = "SQuADShifts leaderboard") -> pd.DataFrame:
    """The human annotators' scores (columns benchmark, name, em, f1): a reference, not a system."""
    rows = [(f"squadshifts-{shift}", name, em, f1) for shift, name, _, em, f1 in _shift_scores(shifts_payload, "humans", origin)]
    return pd.DataFrame(rows, columns=["benchmark", "name", "em", "f1"])


def squad_entries(payload: Any, *, origin: str = "SQuAD v1.1 leaderboard") -> list[SquadEntry]:
    """The named submissions of a SQuAD CodaLab leaderboard dump (nameless ones cannot be matched)."""
    entries = []
    for index, entry in enumerate(_list(payload, "leaderboard", origin, "the file")):
        submission = _get(entry, "submission", origin, f"leaderboard entry {index}")
        description = _get(submission, "description", origin, f"leaderboard entry {index}")
        if not isinstance(description, str):
            raise DataFormatError(origin, f"leaderboard entry {index}: description must be text, got {description!r}")
        if not description.strip():
            continue
        where = f"leaderboard entry {index} ({description.strip()!r})"
        scores = _get(entry, "scores", origin, where)
        em = _number(_get(scores, "exact_match", origin, where), origin, f"{where}, exact_match")
        f1 = _number(_get(scores, "f1", origin, where), origin, f"{where}, f1")
        name = parse_system_name(description, trailing_institution=True)
        entries.append(SquadEntry(description, name, em, f1, _timestamp(submission.get("created"), origin, where)))
    return entries


def parse_system_name(text: str, *, trailing_institution: bool = False) -> SystemName:
    """Split "Name (single model, qualifier) (Institution) url" into its parts, normalised.

    SQuAD leaderboard descriptions end with the institution even without a kind group:
    pass `trailing_institution` for them, so that "FastQA (DFKI)" names the system "fastqa".
    """
    text = _normalise(text)
    for group in _GROUP.finditer(text):
        kind, _, qualifier = group.group(1).partition(",")
        if kind.strip() in _KINDS:
            return SystemName(
                _fold(text[: group.start()]), _KINDS[kind.strip()], _fold(qualifier) or None, _fold(text[group.end() :]) or None
            )
    trailing = _TRAILING_GROUP.search(text) if trailing_institution else None
    if trailing:
        return SystemName(_fold(text[: trailing.start()]), None, None, _fold(trailing.group(1)) or None)
    return SystemName(_fold(text), None, None, None)


def match_squad(models: Sequence[tuple[str, str]], entries: Sequence[SquadEntry]) -> list[Match]:
    """Match each (name, institution) to at most one scored SQuAD entry, deterministically (module docstring)."""
    by_core: dict[str, list[SquadEntry]] = defaultdict(list)
    for entry in entries:
        by_core[entry.name.core].append(entry)
    matches = [_match_one(name, institution, by_core[parse_system_name(name).core]) for name, institution in models]
    claims = Counter(id(m.entry) for m in matches if m.entry is not None)
    return [Match(m.model, None, SHARED, m.candidates) if m.entry is not None and claims[id(m.entry)] > 1 else m for m in matches]


def unique_ids(names: Sequence[str], order: Sequence[Any]) -> list[str]:
    """`slug(name)` for each name; where slugs coincide, the first by `order` keeps it, the others get -2, -3, ..."""
    slugs = [slug(name) for name in names]
    taken = set(slugs)
    ids = list(slugs)
    groups: dict[str, list[int]] = defaultdict(list)
    for index, value in enumerate(slugs):
        groups[value].append(index)
    for value, members in groups.items():
        rank = 1
        for index in sorted(members, key=lambda member: order[member])[1:]:
            rank += 1
            while f"{value}-{rank}" in taken:
                rank += 1
            ids[index] = f"{value}-{rank}"
            taken.add(ids[index])
    return ids


def slug(name: str) -> str:
    """A lowercase id: ASCII letters and digits joined by "-", "+" spelled "plus"."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower().replace("+", " plus ")
    return "-".join(re.findall(r"[a-z0-9]+", ascii_name))


def _match_one(name: str, institution: str, same_core: list[SquadEntry]) -> Match:
    wanted = parse_system_name(name)
    named = [entry for entry in same_core if wanted.kind is None or entry.name.kind in (None, wanted.kind)]
    scored = [entry for entry in named if entry.em is not None]
    if not scored:
        return Match(name, None, UNSCORED if named else NO_ENTRY, 0)
    if wanted.kind is None and len({entry.name.kind for entry in scored} - {None}) > 1:
        return Match(name, None, AMBIGUOUS_KIND, len(scored))
    candidates = scored
    institution_name = wanted.institution or _fold(_normalise(institution))
    same_institution = [entry for entry in candidates if institution_name and entry.name.institution == institution_name]
    candidates = same_institution or candidates
    day = _named_date(wanted.qualifier)
    if day is not None:
        apart = [(entry, _days_apart(entry.created, day)) for entry in candidates if entry.created is not None]
        near = [(entry, days) for entry, days in apart if days <= DATE_TOLERANCE]
        if not near:
            return Match(name, None, NO_ENTRY_ON_DATE, len(scored))
        nearest = min(days for _, days in near)
        candidates = [entry for entry, days in near if days == nearest]
    chosen = max(candidates, key=lambda entry: (entry.created or 0, entry.description))
    return Match(name, chosen, MATCHED, len(scored))


def _squadshifts_notes(models: list[tuple[str, str, str, float, float]], matches: list[Match]) -> tuple[str, ...]:
    per_set = Counter(shift for shift, *_ in models)
    matched = [m for m in matches if m.entry is not None]
    resubmitted = sum(1 for m in matched if m.candidates > 1)
    notes = [
        f"SQuADShifts: {len(matches)} models ({', '.join(f'{per_set[shift]} on {shift}' for shift in SHIFT_SETS if shift in per_set)}); "
        "human annotators are not in the table (see squadshifts_humans)",
        f"SQuADShifts: {len(matched)} of {len(matches)} models matched a SQuAD v1.1 leaderboard entry ({SQUAD_TEST}); "
        f"{len(matches) - len(matched)} left out; {resubmitted} of the matches chose among resubmissions under one name",
    ]
    by_reason: dict[str, list[str]] = defaultdict(list)
    for m in matches:
        if m.entry is None:
            by_reason[m.reason].append(m.model)
    notes += [f"SQuADShifts: left out, {reason} ({len(names)}): {'; '.join(names)}" for reason, names in by_reason.items()]
    return tuple(notes)


def _shift_scores(payload: Any, group: str, origin: str) -> list[tuple[str, str, str, float, float]]:
    """(set, name, institution, em, f1) for each model (or human) of each SQuADShifts set."""
    if not isinstance(payload, dict):
        raise DataFormatError(origin, f"the file must be a JSON object keyed by set ({', '.join(SHIFT_SETS)})")
    unknown = sorted(set(payload) - set(SHIFT_SETS))
    if unknown:
        raise DataFormatError(origin, f"unknown SQuADShifts set {unknown[0]!r}; known: {', '.join(SHIFT_SETS)}")
    rows = []
    for shift in (shift for shift in SHIFT_SETS if shift in payload):
        for index, item in enumerate(_list(payload[shift], group, origin, f"set {shift!r}")):
            where = f"set {shift!r}, {group} entry {index}"
            name = _display_name(_get(item, "name", origin, where), origin, where)
            where = f"{where} ({name!r})"
            institution = item.get("institution") or ""
            em, f1 = (
                _number(_get(item, key, origin, where), origin, f"{where}, {key}", required=True) for key in (f"{shift}_em", f"{shift}_f1")
            )
            rows.append((shift, name, institution.strip() if isinstance(institution, str) else "", em, f1))
    return rows


def _mrqa_scores(scores: Any, origin: str, where: str) -> dict[str, tuple[float | None, float | None]]:
    if not isinstance(scores, dict):
        raise DataFormatError(origin, f"{where}: scores must be an object, got {scores!r}")
    parsed: dict[str, dict[str, float | None]] = defaultdict(dict)
    for key, value in scores.items():
        match = MRQA_SCORE_KEY.match(key)
        if match is None:
            raise DataFormatError(origin, f"{where}: score key {key!r} is not <dataset>_em or <dataset>_f1")
        parsed[match["dataset"]][match["metric"]] = _number(value, origin, f"{where}, {key}")
    for dataset, metrics in parsed.items():
        for metric in ("em", "f1"):
            if metric not in metrics:
                raise DataFormatError(origin, f"{where}: missing key {dataset}_{metric}")
    return {dataset: (metrics["em"], metrics["f1"]) for dataset, metrics in parsed.items()}


def _read(key: str, locator: SourceLocator) -> tuple[Any, str, str]:
    spec = leaderboard_files()[key]
    located = locator.locate(spec.source)
    payload = load_json(located.path)
    checked = "md5 verified" if located.verified else "md5 not checked"
    return payload, str(located.path), f"{key}: {located.path} ({located.origin}, {checked}); cite: {spec.citation}"


def _tidy(rows: list[tuple[Any, ...]], origin: str) -> pd.DataFrame:
    """Rows in `ROW_COLUMNS` order, with the families, checked by `tidy_frame`."""
    frame = pd.DataFrame(rows, columns=list(ROW_COLUMNS))
    return tidy_frame(frame.assign(approach_family=APPROACH_FAMILY, benchmark_family=BENCHMARK_FAMILY), origin, imported=True)


def _get(mapping: Any, key: str, origin: str, where: str) -> Any:
    if not isinstance(mapping, Mapping) or key not in mapping:
        raise DataFormatError(origin, f"{where}: missing key {key!r}")
    return mapping[key]


def _list(mapping: Any, key: str, origin: str, where: str) -> list[Any]:
    value = _get(mapping, key, origin, where)
    if not isinstance(value, list):
        raise DataFormatError(origin, f"{where}: {key!r} must be a list, got {type(value).__name__}")
    return value


def _display_name(value: Any, origin: str, where: str) -> str:
    name = " ".join(value.split()) if isinstance(value, str) else ""
    if not slug(name):
        raise DataFormatError(origin, f"{where}: the system name must be text with letters or digits (to make an id from), got {value!r}")
    return name


@overload
def _number(value: Any, origin: str, where: str, *, required: Literal[True]) -> float: ...
@overload
def _number(value: Any, origin: str, where: str, *, required: bool = False) -> float | None: ...
def _number(value: Any, origin: str, where: str, *, required: bool = False) -> float | None:
    """A score: a JSON number or numeric text; null means "not scored" unless `required`."""
    if value is None and not required:
        return None
    if not isinstance(value, bool) and isinstance(value, int | float | str):
        with contextlib.suppress(ValueError):  # not numeric text: reported below
            return float(value)
    raise DataFormatError(origin, f"{where}: score must be a number, got {value!r}")


def _timestamp(value: Any, origin: str, where: str) -> int | None:
    if value in (None, ""):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataFormatError(origin, f"{where}: 'created' must be a Unix time, got {value!r}")
    return int(value)


def _normalise(text: str) -> str:
    """Case-folded, without URLs and braces (the leaderboards' markup), "w/" spelled "with"."""
    text = _URL.sub(" ", unicodedata.normalize("NFKC", text)).casefold().replace("{", "").replace("}", "")
    return re.sub(r"\bw/(?=\s)", "with", text)


def _fold(text: str) -> str:
    return " ".join(text.replace("(", " ").replace(")", " ").split())


def _named_date(qualifier: str | None) -> tuple[int, int, int | None] | None:
    """(month, day, year or None) of a qualifier such as "june 21 2018" or "jan 23"."""
    found = _DATE.match(qualifier or "")
    if found is None or len(found["month"]) < 3:
        return None
    months = [number for number, month in enumerate(_MONTHS, start=1) if month.startswith(found["month"])]
    return (months[0], int(found["day"]), int(found["year"]) if found["year"] else None) if months else None


def _days_apart(created: int, named: tuple[int, int, int | None]) -> timedelta:
    """Calendar days between a submission and a named date (in the submission's year if it has none)."""
    submitted = datetime.fromtimestamp(created, tz=UTC).date()
    month, day, year = named
    try:
        return abs(submitted - date(year or submitted.year, month, day))
    except ValueError:  # e.g. "feb 30"
        return timedelta.max

"""Materialise a benchmark: read its sources, apply its transforms, write MRQA files.

A benchmark's splits are read from its sources (optionally carved from one source) or, for a
synthetic benchmark, made by its seeded generator from its input sources. The result is
`runs/data/<id>/{train,test}.jsonl.gz` plus `manifest.json` (spec hash,
source md5s, question and context counts, dropped examples, creation time). The directory
is built under a temporary name and renamed into place complete, so a half-prepared
benchmark is never read. Preparing again with an unchanged spec does no work.

Prepared data is checked against its manifest before every use, since its `data_hash` (the
hash of the split files' md5s) is part of every job key: an edited, truncated or missing split
file must stop a run rather than pass under the key of the data it replaced. A file whose
content was checked has its stat recorded in `verified.json`, so an unchanged file costs one
`stat` and a changed one (even only touched) is hashed again before it is trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict, TypeGuard

from concur import __version__
from concur.data.generators import run_generator
from concur.data.model import Split
from concur.data.mrqa import read_mrqa, write_mrqa
from concur.data.readers import read_source
from concur.data.sources import LocatedSource, SourceLocator
from concur.data.transforms import carve, downsample
from concur.errors import ConcurError, DataFormatError, SpecError
from concur.fsutil import (
    UNREADABLE,
    atomic_write_json,
    entry_path,
    md5_file,
    publish_directory,
    read_json,
    remove_leftovers,
    staging_directory,
)
from concur.registry.specs import BenchmarkSpec, Carve, SourceFile, SplitPlan, SplitSizes

SPLITS = ("train", "test")
MANIFEST = "manifest.json"
VERIFIED = "verified.json"  # {file: its stat when its md5 last matched the manifest, and that md5}
OFFLINE_ORIGINS = ("local", "cache")  # `SourceLocator.availability` values that need no download


class PreparedDataError(DataFormatError):
    """Prepared data that cannot be used as its manifest describes it (missing, unreadable, inconsistent)."""

    def __init__(self, path: Path, problem: str, benchmark: str) -> None:
        super().__init__(path, f"{problem}; prepare it again with `concur data prepare {benchmark} --force`")


class DataChangedError(PreparedDataError):
    """A prepared split file whose content is not the content its manifest (and every job key made from it) records."""

    def __init__(self, path: Path, expected: str, actual: str, benchmark: str) -> None:
        self.expected, self.actual = expected, actual
        problem = (
            f"content changed since it was prepared: its md5 is {actual}, but {path.parent / MANIFEST} records {expected}, "
            "so results made from it could be taken for results on the prepared data"
        )
        super().__init__(path, problem, benchmark)


@dataclass(frozen=True)
class PreparedBenchmark:
    """A materialised benchmark on disk."""

    directory: Path
    manifest: dict[str, Any]
    # Stat fingerprints of split files this object checked, so a read-only data dir is not re-hashed per use.
    _checked: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def data_hash(self) -> str:
        """Identity of the data, part of every job key: a hash of both splits' content."""
        return self.manifest["data_hash"]

    @property
    def benchmark(self) -> str:
        return self.directory.name

    def path(self, split: str) -> Path:
        return self.directory / self.manifest["splits"][split]["file"]

    def load(self, split: str) -> Split:
        """One split, read only once its file is checked against the manifest (by stat when unchanged)."""
        self.verify([split])
        return read_mrqa(self.path(split))

    def verify(self, splits: Iterable[str] = SPLITS, *, full: bool = False) -> None:
        """Check split files against the manifest's md5s: a file whose stat matches its record is trusted unread.

        A file checked by content gets its record refreshed, unless the directory cannot be
        written (a read-only runs dir): then it is checked by content at each use.
        """
        records = {} if full else {**_read_records(self.directory), **self._checked}
        fresh = {}
        for split in splits:
            path, expected = self.path(split), self.manifest["splits"][split]["md5"]
            record = {**_fingerprint(path, self.benchmark), "md5": expected}
            if records.get(path.name) != record:
                _check_content(path, expected, self.benchmark)
                fresh[path.name] = record
        self._checked.update(fresh)
        if fresh:
            _write_records(self.directory, fresh)


def prepared(data_dir: Path, spec: BenchmarkSpec, *, full: bool = False) -> PreparedBenchmark | None:
    """The benchmark's materialised data if it is made from this spec, checked against its manifest.

    None when it is not prepared or was prepared from another spec (then it is prepared
    again); a `PreparedDataError` when its files are missing, damaged or changed. With
    `full` every file is hashed, whatever its recorded check says.
    """
    directory = entry_path(data_dir, spec.id)
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        return None
    manifest = _read_manifest(manifest_path, spec.id)
    if manifest.get("spec_hash") != spec.spec_hash:
        return None
    bench = PreparedBenchmark(directory, manifest)
    bench.verify(full=full)
    return bench


def prepare(spec: BenchmarkSpec, locator: SourceLocator, data_dir: Path, *, force: bool = False) -> tuple[PreparedBenchmark, bool]:
    """Materialise `spec` unless it already is; returns the data and whether work was done.

    Leftovers of a killed earlier prepare of this benchmark are removed first, whether or
    not there is work to do; nothing outside its directory and their own names is touched.
    """
    final = entry_path(data_dir, spec.id)
    remove_leftovers(final)
    if not force and (existing := prepared(data_dir, spec)) is not None:
        return existing, False
    located = {name: locator.locate(spec.sources[name]) for name in needed_sources(spec)}
    splits = _build_splits(spec, located)
    data_dir.mkdir(parents=True, exist_ok=True)
    staging = staging_directory(final)
    shutil.rmtree(staging, ignore_errors=True)
    try:
        manifest = _write(spec, splits, located, staging)
        if not force and (existing := prepared(data_dir, spec)) is not None:
            return existing, True  # another driver finished first: replacing its copy would pull it from under its jobs
        if not publish_directory(staging, final):  # another driver published at the same moment: its copy stands
            return _published_by_another(data_dir, spec), True
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return PreparedBenchmark(final, manifest), True


def _published_by_another(data_dir: Path, spec: BenchmarkSpec) -> PreparedBenchmark:
    """The copy another process published while this one prepared: verified, and of this very spec."""
    bench = prepared(data_dir, spec)
    if bench is None:
        raise ConcurError(f"another process prepared {spec.id!r} from a different spec at the same time; run again")
    return bench


def data_hash(md5s: Iterable[str]) -> str:
    """The manifest's `data_hash` from its splits' md5s, in `SPLITS` order: what job keys hold of the data."""
    return hashlib.sha256("".join(md5s).encode()).hexdigest()


def _read_manifest(path: Path, benchmark: str) -> dict[str, Any]:
    """The manifest, with its split entries and its `data_hash` consistent with their md5s."""
    try:
        manifest = read_json(path)
    except (OSError, ValueError, *UNREADABLE) as exc:
        raise PreparedDataError(path, f"the manifest cannot be read ({_reason(exc)})", benchmark) from None
    splits = manifest.get("splits") if isinstance(manifest, dict) else None
    found = [splits.get(split) if isinstance(splits, dict) else None for split in SPLITS]
    entries = [entry for entry in found if _is_split_entry(entry)]
    if len(entries) != len(SPLITS):
        needs = f"not a benchmark manifest: it needs a file and an md5 for each of the splits {', '.join(SPLITS)}"
        raise PreparedDataError(path, needs, benchmark)
    expected = data_hash(entry["md5"] for entry in entries)
    if manifest.get("data_hash") != expected:
        raise PreparedDataError(path, f"data_hash {manifest.get('data_hash')!r} is not the hash of its split md5s ({expected})", benchmark)
    return manifest


class _SplitEntry(TypedDict):
    """What a manifest's split entry must hold to be used (it holds counts too)."""

    file: str
    md5: str


class _WrittenSplitEntry(_SplitEntry):
    """A split entry as `prepare` writes it."""

    questions: int
    contexts: int
    dropped: dict[str, int]


def _is_split_entry(entry: object) -> TypeGuard[_SplitEntry]:
    return isinstance(entry, dict) and _is_plain_name(entry.get("file")) and isinstance(entry.get("md5"), str)


def _is_plain_name(name: Any) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name


def _fingerprint(path: Path, benchmark: str) -> dict[str, int]:
    """What changes when a file is rewritten, touched or replaced; ctime and inode also when its mtime is put back."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise PreparedDataError(path, "missing: the prepared benchmark is incomplete", benchmark) from None
    except OSError as exc:
        raise PreparedDataError(path, f"cannot be read ({_reason(exc)})", benchmark) from None
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "ctime_ns": stat.st_ctime_ns, "inode": stat.st_ino}


def _check_content(path: Path, expected: str, benchmark: str) -> None:
    """Hash the decompressed content as the manifest did, and compare."""
    try:
        actual = md5_file(path, decompress=True)
    except (OSError, *UNREADABLE) as exc:
        raise PreparedDataError(path, f"cannot be read, the file is damaged or truncated ({_reason(exc)})", benchmark) from None
    if actual != expected:
        raise DataChangedError(path, expected, actual, benchmark)


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _read_records(directory: Path) -> dict[str, Any]:
    """The recorded checks; an unreadable record only means checking by content again."""
    try:
        records = read_json(directory / VERIFIED)
    except (OSError, ValueError, *UNREADABLE):
        return {}
    return records if isinstance(records, dict) else {}


def _write_records(directory: Path, fresh: dict[str, Any]) -> None:
    """Add `fresh` checks to the record, unless the directory cannot be written (a read-only runs dir)."""
    with contextlib.suppress(OSError):  # the record only saves work: a run on read-only data goes on without it
        atomic_write_json(directory / VERIFIED, {**_read_records(directory), **fresh})


def load_split(spec: BenchmarkSpec, locator: SourceLocator, data_dir: Path, split: str) -> Split:
    """One split of a benchmark, for looking at it (`concur data stats`, `concur data show`).

    A prepared benchmark is read from disk, and a generated or carved one is prepared whole
    (its splits are made together). When each split has its own source, only that split's
    source is read and nothing is written: a test-only set such as SQuADShifts, whose
    training source is the full SQuAD train, can be inspected without that training file.
    """
    if (existing := prepared(data_dir, spec)) is not None:
        return existing.load(split)
    if spec.generator is not None or spec.carve is not None:
        bench, _ = prepare(spec, locator, data_dir)
        return bench.load(split)
    plan = getattr(spec, split)
    located = {name: locator.locate(spec.sources[name]) for name in _with_companions(spec, [plan.source])}
    data = _transformed(_read(located, plan.source, split), plan)
    _check_split(spec, split, data, located)
    return data


def needed_sources(spec: BenchmarkSpec) -> list[str]:
    """The sources a benchmark reads: its generator's inputs, or its splits' sources and their companions."""
    if spec.generator is not None:
        return list(dict.fromkeys(spec.generator.inputs))
    names = [spec.carve.source] if spec.carve else list(dict.fromkeys(plan.source for plan in (spec.train, spec.test)))
    return _with_companions(spec, names)


def _with_companions(spec: BenchmarkSpec, names: list[str]) -> list[str]:
    return names + [companion for name in names for companion in spec.sources[name].companions if companion not in names]


def _read(located: dict[str, LocatedSource], name: str, split_name: str) -> Split:
    source = located[name].source
    assert source.reader is not None  # the spec's loader refuses a split read from a source that names no reader
    companions = {companion: located[companion].path for companion in source.companions}
    return read_source(source.reader, located[name].path, split_name, source.options, companions)


def _build_splits(spec: BenchmarkSpec, located: dict[str, LocatedSource]) -> dict[str, Split]:
    if spec.generator is not None:
        generated = run_generator(spec.generator.name, spec.generator.seed, spec.generator.options, {n: s.path for n, s in located.items()})
        raw = dict(zip(SPLITS, generated))
    elif spec.carve is not None:
        raw = dict(zip(SPLITS, _carved(spec, spec.carve, _read(located, spec.carve.source, "all"), located[spec.carve.source].path)))
    else:
        raw = {split: _read(located, plan.source, split) for split, plan in zip(SPLITS, (spec.train, spec.test))}
    splits = {split: _transformed(raw[split], plan) for split, plan in zip(SPLITS, (spec.train, spec.test))}
    for split, data in splits.items():
        _check_split(spec, split, data, located)
    return splits


def _carved(spec: BenchmarkSpec, plan: Carve, whole: Split, path: Path) -> tuple[Split, Split]:
    """The carve's train and test splits, checked against the sizes the spec records.

    Recorded sizes pin the carve: a different source file, seed or carving rule gives
    different splits, which must not pass silently under the same benchmark id.
    """
    try:
        splits = carve(whole, by=plan.by, test_fraction=plan.test_fraction, seed=plan.seed)
    except ConcurError as exc:
        raise SpecError(spec.file, "carve", f"{exc} (source {path})") from None
    for split, data in zip(SPLITS, splits):
        recorded = plan.sizes.get(split)
        if recorded is None:
            continue
        measured = carved_sizes(data, plan.by)
        for key in (size.name for size in fields(SplitSizes)):
            expected, actual = getattr(recorded, key), getattr(measured, key)
            if expected != actual:
                raise SpecError(
                    spec.file,
                    f"carve.sizes.{split}.{key}",
                    f"records {expected:,}, but carving {path} made {actual:,}; the source or the carve differs from the one "
                    "measured (if the carve was changed on purpose, record the new sizes)",
                )
    return splits


def carved_sizes(split: Split, by: str) -> SplitSizes:
    """A carved split's sizes as a spec records them: questions, passages, and articles when carved by article."""
    return SplitSizes(split.n_questions, split.n_passages, split.n_articles if by == "article" else None)


def offline_availability(spec: BenchmarkSpec, locator: SourceLocator, data_dir: Path) -> str:
    """Whether the benchmark can be prepared without a network: for choosing what to run on an offline machine.

    `prepared` (its data is materialised from this spec), `missing: <path>` (the first
    needed source file that is neither under a data root nor in the cache), `generated` (a
    generator whose inputs, if any, are all at hand), `sources found`, or `damaged: <path>`
    (prepared data that fails its manifest check).
    """
    try:
        if prepared(data_dir, spec) is not None:
            return "prepared"
    except PreparedDataError as error:
        return f"damaged: {error.path}"
    missing = offline_missing(spec, locator, data_dir)
    if missing:
        return f"missing: {missing[0].path}"
    return "generated" if spec.generator is not None else "sources found"


def offline_missing(spec: BenchmarkSpec, locator: SourceLocator, data_dir: Path) -> list[SourceFile]:
    """The source files preparing the benchmark still needs that are neither under a data root nor in the cache.

    Empty once the benchmark is prepared (its sources are no longer read), so a run can be
    checked before it starts: each file listed would have to be downloaded.
    """
    if prepared(data_dir, spec) is not None:
        return []
    sources = [spec.sources[name] for name in needed_sources(spec)]
    return [source for source in sources if locator.availability(source) not in OFFLINE_ORIGINS]


def _check_split(spec: BenchmarkSpec, split: str, data: Split, located: dict[str, LocatedSource]) -> None:
    """A split must have questions, each with its own id."""
    if data.n_questions == 0:
        if spec.generator is not None:
            raise ConcurError(f"benchmark {spec.id!r}: generator {spec.generator.name!r} made no {split} questions; check its options")
        source = located[spec.carve.source if spec.carve else getattr(spec, split).source]
        raise DataFormatError(source.path, f"benchmark {spec.id!r}: the {split} split has no usable questions")
    _check_unique_qids(spec, split, data)


def _transformed(split: Split, plan: SplitPlan) -> Split:
    if plan.downsample is None:
        return split
    return downsample(split, plan.downsample.questions, plan.downsample.seed)


def _check_unique_qids(spec: BenchmarkSpec, split: str, data: Split) -> None:
    seen: set[str] = set()
    for _, question in data.questions():
        if question.qid in seen:
            raise ConcurError(f"benchmark {spec.id!r}: question id {question.qid!r} occurs twice in the {split} split")
        seen.add(question.qid)


def _write(spec: BenchmarkSpec, splits: dict[str, Split], located: dict[str, LocatedSource], staging: Path) -> dict[str, Any]:
    staging.mkdir()
    split_entries: dict[str, _WrittenSplitEntry] = {}
    records: dict[str, dict[str, int | str]] = {}
    for name, data in splits.items():
        data.split = name
        file_name = f"{name}.jsonl.gz"
        write_mrqa(data, staging / file_name)
        md5 = md5_file(staging / file_name, decompress=True)
        records[file_name] = {**_fingerprint(staging / file_name, spec.id), "md5": md5}  # a rename keeps a file's stat
        split_entries[name] = {
            "file": file_name,
            "md5": md5,
            "questions": data.n_questions,
            "contexts": data.n_passages,
            "dropped": dict(data.dropped),
        }
    manifest = {
        "benchmark": spec.id,
        "family": spec.family,
        "spec_file": str(spec.file),
        "spec_hash": spec.spec_hash,
        "sources": {name: source.manifest_entry() for name, source in located.items()},
        "generator": None if spec.generator is None else {"name": spec.generator.name, "seed": spec.generator.seed},
        "splits": split_entries,
        "data_hash": data_hash(split_entries[name]["md5"] for name in SPLITS),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "concur_version": __version__,
    }
    atomic_write_json(staging / VERIFIED, records)
    atomic_write_json(staging / MANIFEST, manifest)
    return manifest

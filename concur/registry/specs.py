"""Benchmark and approach specs: the TOML schema, parsed and validated.

A spec file declares one benchmark (`benchmarks/<id>.toml`) or one approach
(`approaches/<id>.toml`). A benchmark spec may `extends = "<id>"` another benchmark and
override parts of it (downsampled SQuAD extends SQuAD). Errors name the file and field.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concur.components import resolve
from concur.errors import SpecError
from concur.registry.hparams import hparams_problem
from concur.registry.options import component, read_options
from concur.registry.tables import DESCRIPTIVE_KEYS, Table, content_hash

BENCHMARK_FAMILIES = ("human", "downsampled", "cloze", "synthetic")
APPROACH_FAMILIES = ("pretrained", "non-pretrained")
SPACE_KINDS = ("log_uniform", "uniform", "int_uniform", "choice")
CARVE_UNITS = ("context", "article")  # what a carve keeps whole on one side: a passage, or a whole article

_COMMON_KEYS = {"id", "family", *DESCRIPTIVE_KEYS}  # fields every spec may have
# Ids name directories (runs/data/<id>) and files: a letter or digit first (no ".", "..", hidden
# or option-like names), then letters, digits and _ . + - (no separators or white space).
SPEC_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
SPEC_ID_RULE = "an id starts with a letter or digit and holds only letters, digits and _ . + -"


@dataclass(frozen=True)
class SourceFile:
    """One upstream file: where it lives locally (`path` under a data root) and online."""

    name: str
    reader: str | None  # None for a file only read as another source's companion
    path: str
    md5: str | None = None
    url: str | None = None
    archive: str | None = None
    archive_md5: str | None = None
    member: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def companions(self) -> tuple[str, ...]:
        """Names of the other sources this one's reader needs."""
        if self.reader is None:
            return ()
        roles = resolve("reader", self.reader).companions
        return tuple(value for key, value in self.options.items() if key in roles)

    @property
    def origin(self) -> str | None:
        """A human-readable statement of where the file is downloaded from."""
        if self.archive:
            return f"{self.archive} ({self.member})"
        return self.url


@dataclass(frozen=True)
class Downsample:
    questions: int
    seed: int


@dataclass(frozen=True)
class SplitPlan:
    """How one split (train or test) is made: from which source, with which transform."""

    source: str
    downsample: Downsample | None = None


@dataclass(frozen=True)
class SplitSizes:
    """How large one carved split is: recorded in the spec from the real data, checked on every prepare."""

    questions: int
    contexts: int
    articles: int | None = None  # recorded for a carve by article


@dataclass(frozen=True)
class Carve:
    """Make train and test from one source (e.g. an evaluation-only set)."""

    source: str
    by: str
    test_fraction: float
    seed: int
    sizes: dict[str, SplitSizes] = field(default_factory=dict)  # split -> recorded sizes; empty where none are recorded


@dataclass(frozen=True)
class GeneratorPlan:
    """Make both splits with a seeded generator (synthetic benchmarks) instead of reading them."""

    name: str
    seed: int
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Names of the sources (corpora, vectors, knowledge graphs) the generator reads."""
        roles = resolve("generator", self.name).inputs
        return tuple(value for key, value in self.options.items() if key in roles)


@dataclass(frozen=True)
class BenchmarkSpec:
    id: str
    name: str
    family: str
    file: Path
    sources: dict[str, SourceFile]
    train: SplitPlan
    test: SplitPlan
    carve: Carve | None = None
    generator: GeneratorPlan | None = None
    citation: str = ""
    description: str = ""
    data: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def spec_hash(self) -> str:
        """Hash of what the spec computes (descriptive fields excluded)."""
        return content_hash(self.data)


@dataclass(frozen=True)
class Resources:
    """What one job of an approach needs, for schedulers: local GPU packing, Slurm requests, time limits."""

    gpus: int = 1  # GPUs per job (0: CPU only)
    gpu_memory_gb: float = 0.0  # estimated peak per GPU; packing keeps the sum of a GPU's jobs under its memory
    small: bool = False  # may share a GPU with other small jobs (it leaves one mostly idle)
    cpus: int = 4  # CPU cores per job (tokenising, batching; CPU threads when no GPU is used)
    memory_gb: float = 16.0  # host memory per job
    time_limit_hours: float = 24.0  # a job still running after this is stopped and recorded as failed


@dataclass(frozen=True)
class ApproachSpec:
    id: str
    name: str
    family: str
    file: Path
    implementation: str
    model: dict[str, Any]
    hparams: dict[str, Any]
    space: dict[str, Any]
    resources: Resources
    citation: str = ""
    description: str = ""
    data: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def spec_hash(self) -> str:
        return content_hash(self.data)


def id_problem(value: object) -> str | None:
    """Why `value` cannot be a spec id, or None when it can."""
    if not isinstance(value, str):
        return f"must be a string, got {value!r}"
    if not SPEC_ID.fullmatch(value):
        return f"{value!r} is not a valid id: {SPEC_ID_RULE}"
    return None


def parse_benchmark(data: dict[str, Any], path: Path) -> BenchmarkSpec:
    """Validate a resolved benchmark table (after `extends` is merged)."""
    top = Table(data, path)
    top.reject_unknown(_COMMON_KEYS | {"extends", "sources", "train", "test", "carve", "generator"})
    bench_id = top.get("id", str, required=True)
    family = top.choice("family", BENCHMARK_FAMILIES)
    generator_table = top.table("generator")
    sources_table = top.table("sources", required=generator_table is None) or Table({}, path, "sources.")
    sources = {name: _source(sources_table, name) for name in sources_table.data}
    if not sources and generator_table is None:
        raise top.error("sources", "declares no source file")
    generator = _generator(generator_table, sources) if generator_table is not None else None
    for source in sources.values():
        for companion in source.companions:
            if companion not in sources:
                declared = ", ".join(sources)
                raise sources_table.error(
                    f"{source.name}.options", f"names source {companion!r}, which is not declared; declared: {declared}"
                )
    if generator is not None and "carve" in top.data:
        raise top.error("carve", "a generated benchmark makes its own train and test splits; remove [carve] or [generator]")
    carve = _carve(top.table("carve"), sources)
    train = _split_plan(top, "train", sources, carve, generated=generator is not None)
    test = _split_plan(top, "test", sources, carve, generated=generator is not None)
    return BenchmarkSpec(
        id=bench_id,
        name=top.get("name", str, bench_id),
        family=family,
        file=path,
        sources=sources,
        train=train,
        test=test,
        carve=carve,
        generator=generator,
        citation=top.get("citation", str, ""),
        description=top.get("description", str, ""),
        data=data,
    )


def _source(sources: Table, name: str) -> SourceFile:
    table = sources.table(name, required=True)
    table.reject_unknown({"reader", "path", "md5", "url", "archive", "archive_md5", "member", "options"})
    reader = component(table, "reader", "reader") if "reader" in table.data else None
    source = SourceFile(
        name=name,
        reader=reader,
        path=table.get("path", str, required=True),
        md5=table.get("md5", str),
        url=table.get("url", str),
        archive=table.get("archive", str),
        archive_md5=table.get("archive_md5", str),
        member=table.get("member", str),
        options=_reader_options(table, reader),
    )
    if source.url and source.archive:
        raise table.error("archive", "give either 'url' (a file) or 'archive' + 'member', not both")
    if source.archive and not source.member:
        raise table.error("member", "is required with 'archive': the file's path inside the archive")
    if source.md5 is not None and (len(source.md5) != 32 or any(c not in "0123456789abcdef" for c in source.md5)):
        raise table.error("md5", f"must be 32 lower-case hex digits, got {source.md5!r}")
    return source


def _reader_options(source: Table, reader: str | None) -> dict[str, Any]:
    """The source's `options`, each known to its reader and of the type the reader takes."""
    table = source.table("options")
    if table is None:
        return {}
    if reader is None:
        raise source.error("options", "are given to a reader; this source names none")
    accepted = resolve("reader", reader).options
    if accepted is None:
        raise source.error("options", f"the {reader!r} reader takes no options")
    return _given_options(accepted, table)


def _generator(table: Table, sources: dict[str, SourceFile]) -> GeneratorPlan:
    table.reject_unknown({"name", "seed", "options"})
    name = component(table, "name", "generator")
    options_table = table.table("options") or Table({}, table.path, f"{table.field_name('options')}.")
    plan = GeneratorPlan(
        name=name, seed=table.get("seed", int, required=True), options=_given_options(resolve("generator", name).options, options_table)
    )
    for source in plan.inputs:
        if source not in sources:
            raise options_table.error(None, f"names source {source!r}, which is not declared; declared: {', '.join(sources) or 'none'}")
    return plan


def _given_options(accepted: type, table: Table) -> dict[str, Any]:
    """The options `table` gives, checked against the component's options dataclass and converted to its types."""
    options = read_options(accepted, table)
    return {key: getattr(options, key) for key in table.data}


def _carve(table: Table | None, sources: dict[str, SourceFile]) -> Carve | None:
    if table is None:
        return None
    table.reject_unknown({"source", "by", "test_fraction", "seed", "sizes"})
    source = table.get("source", str, required=True)
    _require_reader(table, sources, source)
    by = table.choice("by", CARVE_UNITS)
    test_fraction = table.get("test_fraction", float, required=True)
    if not 0.0 < test_fraction < 1.0:
        raise table.error("test_fraction", f"must be between 0 and 1 (both sides need questions), got {test_fraction}")
    return Carve(
        source=source, by=by, test_fraction=test_fraction, seed=table.get("seed", int, required=True), sizes=_carve_sizes(table, by)
    )


def _carve_sizes(carve: Table, by: str) -> dict[str, SplitSizes]:
    """`[carve.sizes] train = {questions, contexts[, articles]}, test = {...}`: what the carve must make."""
    table = carve.table("sizes")
    if table is None:
        return {}
    table.reject_unknown({"train", "test"})
    keys = ("questions", "contexts", "articles") if by == "article" else ("questions", "contexts")
    sizes = {}
    for split in ("train", "test"):
        entry = table.table(split, required=True)
        if by != "article" and "articles" in entry.data:
            raise entry.error("articles", "is recorded only for a carve by article")
        entry.reject_unknown(set(keys))
        values = {key: entry.get(key, int, required=True) for key in keys}
        for key, value in values.items():
            if value < 1:
                raise entry.error(key, f"must be positive, got {value}")
        sizes[split] = SplitSizes(**values)
    return sizes


def _split_plan(top: Table, split: str, sources: dict[str, SourceFile], carve: Carve | None, *, generated: bool) -> SplitPlan:
    table = top.table(split) or Table({}, top.path, f"{split}.")
    if generated and "source" in table.data:
        raise table.error("source", "a generated benchmark's splits come from its [generator]; only 'downsample' applies here")
    table.reject_unknown({"source", "downsample"})
    source = table.get("source", str, carve.source if carve else split)
    if carve is not None and source != carve.source:
        raise table.error("source", f"a carved benchmark takes both splits from source {carve.source!r}")
    if not generated:
        _require_reader(table, sources, source)
    down = table.table("downsample")
    downsample = None
    if down is not None:
        down.reject_unknown({"questions", "seed"})
        questions = down.get("questions", int, required=True)
        if questions <= 0:
            raise down.error("questions", "must be positive")
        downsample = Downsample(questions=questions, seed=down.get("seed", int, required=True))
    return SplitPlan(source=source, downsample=downsample)


def parse_approach(data: dict[str, Any], path: Path) -> ApproachSpec:
    """Validate an approach table; its hparams are checked by its implementation."""
    top = Table(data, path)
    top.reject_unknown(_COMMON_KEYS | {"extends", "implementation", "model", "hparams", "space", "resources"})
    approach_id = top.get("id", str, required=True)
    family = top.choice("family", APPROACH_FAMILIES)
    implementation = top.get("implementation", str, required=True)
    hparams = top.get("hparams", dict, required=True)
    component(top, "implementation", "approach")
    problem = hparams_problem(implementation, hparams)
    if problem:
        key, message = problem
        raise SpecError(path, f"hparams.{key}" if key else "hparams", message)
    space = top.table("space") or Table({}, path, "space.")
    for name in space.data:
        _check_space_entry(space, name, hparams)
    return ApproachSpec(
        id=approach_id,
        name=top.get("name", str, approach_id),
        family=family,
        file=path,
        implementation=implementation,
        model=top.get("model", dict, {}),
        hparams=hparams,
        space=space.data,
        resources=_resources(top.table("resources")),
        citation=top.get("citation", str, ""),
        description=top.get("description", str, ""),
        data=data,
    )


def _resources(table: Table | None) -> Resources:
    if table is None:
        return Resources()
    defaults = Resources()
    table.reject_unknown({f.name for f in dataclasses.fields(Resources)})
    values = {f.name: table.get(f.name, type(getattr(defaults, f.name)), getattr(defaults, f.name)) for f in dataclasses.fields(Resources)}
    for name in ("gpus", "gpu_memory_gb"):
        if values[name] < 0:
            raise table.error(name, f"must be at least 0, got {values[name]}")
    for name in ("cpus", "memory_gb", "time_limit_hours"):
        if values[name] <= 0:
            raise table.error(name, f"must be positive, got {values[name]}")
    return Resources(**values)


def _check_space_entry(space: Table, name: str, hparams: dict[str, Any]) -> None:
    if name not in hparams:
        raise space.error(name, "is not one of the approach's hparams, so it cannot be searched")
    entry = space.table(name, required=True)
    kinds = [kind for kind in SPACE_KINDS if kind in entry.data]
    if len(kinds) != 1 or len(entry.data) != 1:
        raise space.error(name, f"must hold exactly one of {', '.join(SPACE_KINDS)}")
    kind = kinds[0]
    values = entry.get(kind, list, required=True)
    if kind == "choice":
        if not values:
            raise entry.error(kind, "must list at least one value")
        return
    number = int if kind == "int_uniform" else (int, float)
    if len(values) != 2 or not all(isinstance(v, number) and not isinstance(v, bool) and math.isfinite(v) for v in values):
        what = "whole numbers" if kind == "int_uniform" else "finite numbers"
        raise entry.error(kind, f"must be [low, high], two {what}, got {values!r}")
    low, high = values
    if low >= high:
        raise entry.error(kind, f"must be [low, high] with low < high, got {values!r}")
    if kind == "log_uniform" and low <= 0:
        raise entry.error(kind, f"draws on a log scale, so both bounds must be positive, got {values!r}")


def _require_reader(table: Table, sources: dict[str, SourceFile], name: str) -> None:
    """A split is read from a declared source that names its reader."""
    if name not in sources:
        raise table.error("source", f"names no source; declared: {', '.join(sources)}")
    if sources[name].reader is None:
        raise table.error("source", f"source {name!r} names no reader, so no split can be read from it")

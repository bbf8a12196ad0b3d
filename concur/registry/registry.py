"""Find spec files, resolve `extends`, and look specs up by id.

Search order (later directories override earlier ones by id, so a user can replace a
built-in spec without editing the package):

1. the built-in specs: `benchmarks/` and `approaches/` shipped inside the package
   (`concur/_specs/` in an installed wheel; the repository's top-level directories in a
   source checkout or editable install);
2. directories in the `CONCUR_REGISTRY` environment variable (separated by `os.pathsep`);
3. directories given with `--registry` on the command line.

Each registry directory holds `benchmarks/*.toml` and/or `approaches/*.toml`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from concur.errors import ConcurError, SpecError, UnknownNameError
from concur.registry.specs import (
    APPROACH_FAMILIES,
    BENCHMARK_FAMILIES,
    SPEC_ID_RULE,
    ApproachSpec,
    BenchmarkSpec,
    id_problem,
    parse_approach,
    parse_benchmark,
)
from concur.registry.tables import DESCRIPTIVE_KEYS, deep_merge
from concur.userfiles import load_toml, toml_key_line

REGISTRY_ENV = "CONCUR_REGISTRY"
KINDS = ("benchmarks", "approaches")


def builtin_registry_dir() -> Path:
    """Where the shipped specs are: package data when installed, else the source tree."""
    packaged = Path(str(resources.files("concur"))) / "_specs"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2]


def registry_dirs(extra: Sequence[Path | str] = ()) -> list[Path]:
    """The search path: built-in, then `$CONCUR_REGISTRY`, then `extra`."""
    dirs = [builtin_registry_dir()]
    dirs += [Path(part) for part in os.environ.get(REGISTRY_ENV, "").split(os.pathsep) if part]
    dirs += [Path(part) for part in extra]
    for directory in dirs[1:]:
        if not any((directory / kind).is_dir() for kind in KINDS):
            raise ConcurError(f"registry directory {directory} has neither a benchmarks/ nor an approaches/ subdirectory")
    return dirs


class Registry:
    """All benchmark and approach specs visible from a search path."""

    def __init__(self, dirs: Sequence[Path]) -> None:
        self.dirs = list(dirs)

    @cached_property
    def _benchmarks(self) -> dict[str, BenchmarkSpec]:
        raw = _collect(self.dirs, "benchmarks")
        return {bench_id: parse_benchmark(_resolve_extends(bench_id, raw, "benchmark"), raw[bench_id][1]) for bench_id in raw}

    @cached_property
    def _approaches(self) -> dict[str, ApproachSpec]:
        raw = _collect(self.dirs, "approaches")
        return {approach_id: parse_approach(_resolve_extends(approach_id, raw, "approach"), path) for approach_id, (_, path) in raw.items()}

    def benchmark(self, bench_id: str) -> BenchmarkSpec:
        if bench_id not in self._benchmarks:
            raise UnknownNameError("benchmark", bench_id, self._benchmarks)
        return self._benchmarks[bench_id]

    def approach(self, approach_id: str) -> ApproachSpec:
        if approach_id not in self._approaches:
            raise UnknownNameError("approach", approach_id, self._approaches)
        return self._approaches[approach_id]

    def benchmarks(self) -> list[BenchmarkSpec]:
        return sorted(self._benchmarks.values(), key=lambda spec: (BENCHMARK_FAMILIES.index(spec.family), natural_key(spec.id)))

    def approaches(self) -> list[ApproachSpec]:
        return sorted(self._approaches.values(), key=lambda spec: (APPROACH_FAMILIES.index(spec.family), natural_key(spec.id)))


def natural_key(name: str) -> tuple[int | str, ...]:
    """Sort key that puts babi-2 before babi-11 and squad-1k before squad-10k."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def default_registry(extra: Iterable[Path | str] = ()) -> Registry:
    """The registry of the built-in specs plus the user's directories."""
    return Registry(registry_dirs(list(extra)))


def _collect(dirs: Sequence[Path], kind: str) -> dict[str, tuple[dict[str, Any], Path]]:
    """`{id: (table, file)}` over the search path; later directories win."""
    found: dict[str, tuple[dict[str, Any], Path]] = {}
    for directory in dirs:
        for path in sorted((directory / kind).glob("*.toml")):
            data = load_toml(path)
            found[_checked_id(path, data)] = (data, path)
    return found


def _checked_id(path: Path, data: dict[str, Any]) -> str:
    """The spec's id: valid (it names directories), and its file's name."""
    spec_id = data.get("id")
    if "id" in data and (problem := id_problem(spec_id)):
        raise SpecError(path, "id", problem, line=toml_key_line(path, "id"))
    if problem := id_problem(path.stem):
        raise SpecError(path, None, f"the file name gives the id {path.stem!r}, which is not valid: rename the file ({SPEC_ID_RULE})")
    if spec_id != path.stem:
        raise SpecError(path, "id", f"must equal the file name {path.stem!r}, got {spec_id!r}", line=toml_key_line(path, "id"))
    return path.stem


def _resolve_extends(spec_id: str, raw: dict[str, tuple[dict[str, Any], Path]], kind: str, chain: tuple[str, ...] = ()) -> dict[str, Any]:
    """The spec's table with its `extends` ancestors (of the same kind) merged under it."""
    data, path = raw[spec_id]
    parent = data.get("extends")
    if parent is None:
        return data
    if not isinstance(parent, str) or parent not in raw:
        raise SpecError(path, "extends", f"names no known {kind}: {parent!r}")
    if parent in chain or parent == spec_id:
        raise SpecError(path, "extends", f"cycle: {' -> '.join((*chain, spec_id, parent))}")
    base = _resolve_extends(parent, raw, kind, (*chain, spec_id))
    inherited = {key: value for key, value in base.items() if key != "id" and key not in DESCRIPTIVE_KEYS}
    return deep_merge(inherited, data)

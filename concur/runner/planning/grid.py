"""A study's grid: approaches x benchmarks x hyperparameter settings x seeds, chosen by id, family or glob.

`bert-*`, `family:human`, `squad,qamr`: each item must match a registered spec, so a typo is
an error with the closest name before anything runs. Every setting (with a study's overrides, which apply to every
setting of their approach: setting 0 and the drawn ones alike) is checked against the
implementation's hyperparameter rules, so a grid that expands runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concur.approaches.precision import AUTO, precision_problem
from concur.errors import ConcurError, SpecError, closest
from concur.registry.hparams import hparams_problem
from concur.registry.registry import Registry
from concur.registry.selection import select
from concur.registry.specs import APPROACH_FAMILIES, BENCHMARK_FAMILIES, ApproachSpec, BenchmarkSpec
from concur.runner.planning.budget import Budget
from concur.runner.planning.hparams import HparamSetting, hparam_settings

REGISTRY_SCOPE = ""  # messages say "unknown approach 'x'", as the registry does
STUDY_FIELDS = {"approach": "approaches", "benchmark": "benches"}  # a study file's field for each kind of selection


@dataclass(frozen=True)
class GridRequest:
    approaches: str  # comma-separated ids, families (`family:NAME` or NAME) and globs
    benches: str
    hparams: int = 1  # settings per approach: 0 = its published one, then samples
    seeds: tuple[int, ...] = (0,)
    hparam_seed: int = 0  # the study's sampling seed: the same study always samples the same settings
    budget: Budget | None = None  # seeded subsets of every benchmark's splits (None: whole splits)
    precision: str = AUTO  # concur.approaches.precision: part of the job keys unless "auto"
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # approach id -> hyperparameters set in every setting
    origin: Path | None = None  # the study file the request comes from, named by errors in it


@dataclass(frozen=True)
class GridPoint:
    approach: ApproachSpec
    bench: BenchmarkSpec
    setting: HparamSetting
    seed: int

    def describe(self) -> str:
        return f"{self.approach.id} on {self.bench.id} (hparams {self.setting.id}, seed {self.seed})"


def expand_grid(registry: Registry, request: GridRequest) -> list[GridPoint]:
    """Every point of the grid, in benchmark, approach, setting, seed order."""
    if request.hparams < 1:
        raise ConcurError(f"--hparams must be at least 1 (setting 0 is the approach's own), got {request.hparams}")
    if not request.seeds:
        raise ConcurError("a study needs at least one seed")
    problem = precision_problem(request.precision)
    if problem is not None:
        raise ConcurError(f"--precision: {problem}")
    approaches = select_approaches(registry, request.approaches, origin=request.origin)
    benches = select_benchmarks(registry, request.benches, origin=request.origin)
    approach_ids, registered_approaches = [spec.id for spec in approaches], [spec.id for spec in registry.approaches()]
    _check_tables_name_chosen(request, "hparams", "approach", list(request.overrides), approach_ids, registered_approaches)
    if request.budget is not None:
        bench_ids, registered_benches = [spec.id for spec in benches], [spec.id for spec in registry.benchmarks()]
        _check_tables_name_chosen(request, "budget", "benchmark", list(request.budget.benches), bench_ids, registered_benches)
    settings = {
        spec.id: _checked_settings(spec, request.hparams, request.hparam_seed, request.overrides.get(spec.id, {}), request.origin)
        for spec in approaches
    }
    return [
        GridPoint(spec, bench, setting, seed)
        for bench in benches
        for spec in approaches
        for setting in settings[spec.id]
        for seed in request.seeds
    ]


def select_approaches(registry: Registry, request: str, *, origin: Path | None = None) -> list[ApproachSpec]:
    """The registered approaches `request` names; a study file's (`origin`) errors name its field."""
    specs = {spec.id: spec for spec in registry.approaches()}
    families = {spec_id: spec.family for spec_id, spec in specs.items()}
    return [specs[spec_id] for spec_id in _selected(list(specs), request, families, APPROACH_FAMILIES, "approach", origin)]


def select_benchmarks(registry: Registry, request: str, *, origin: Path | None = None) -> list[BenchmarkSpec]:
    """The registered benchmarks `request` names; a study file's (`origin`) errors name its field."""
    specs = {spec.id: spec for spec in registry.benchmarks()}
    families = {spec_id: spec.family for spec_id, spec in specs.items()}
    return [specs[spec_id] for spec_id in _selected(list(specs), request, families, BENCHMARK_FAMILIES, "benchmark", origin)]


def _selected(ids: list[str], request: str, families: dict[str, str], ranks: Sequence[str], kind: str, origin: Path | None) -> list[str]:
    """`select` over the registry, its errors placed in the study file's field when the request comes from one."""
    try:
        return select(ids, request, families, ranks, kind, scope=REGISTRY_SCOPE)
    except ConcurError as error:
        if origin is None:
            raise
        raise SpecError(origin, STUDY_FIELDS[kind], str(error)) from None


def _check_tables_name_chosen(
    request: GridRequest, table: str, kind: str, names: list[str], chosen: list[str], registered: list[str]
) -> None:
    """Every `[table.<id>]` of the study must name one of the grid's `kind`s: one naming any other would silently do nothing."""
    for name in names:
        if name in chosen:
            continue
        if name in registered:
            problem = f"{kind} {name!r} is not among this study's {STUDY_FIELDS[kind]} ({', '.join(chosen)})"
        else:
            hint = closest(name, chosen) or closest(name, registered)
            problem = f"unknown {kind} {name!r}" + (
                f"; did you mean {hint!r}?" if hint else f"; this study's {STUDY_FIELDS[kind]}: {', '.join(chosen)}"
            )
        raise _override_error(request.origin, f"{table}.{name}", problem)


def _override_error(origin: Path | None, field_name: str, problem: str) -> ConcurError:
    return SpecError(origin, field_name, problem) if origin else ConcurError(f"hyperparameter override {field_name}: {problem}")


def _checked_settings(
    spec: ApproachSpec, count: int, study_seed: int, overrides: Mapping[str, Any], origin: Path | None
) -> list[HparamSetting]:
    """The approach's settings with the overrides applied to each, all checked by the implementation's rules."""
    table = f"hparams.{spec.id}"
    if overrides:
        problem = hparams_problem(spec.implementation, {**spec.hparams, **overrides})
        if problem is not None:
            name, message = problem
            where = f"{table}.{name}" if name in overrides else table
            what = message if name in overrides or name is None else f"{name} {message}"
            raise _override_error(origin, where, f"{what} (approach {spec.id!r}, {spec.file})")
    settings = [HparamSetting(drawn.id, {**drawn.values, **overrides}) for drawn in hparam_settings(spec, count, study_seed)]
    for setting in settings:
        problem = hparams_problem(spec.implementation, setting.values)
        if problem is not None:
            name, message = problem
            drawn = "drawn from [space]" + (f" with the overrides of {table}" + (f" in {origin}" if origin else "") if overrides else "")
            raise ConcurError(f"approach {spec.id!r} ({spec.file}): hyperparameter setting {setting.id} {drawn}: {name} {message}")
    return settings

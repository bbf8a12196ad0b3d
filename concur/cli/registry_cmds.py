"""`concur benches` and `concur approaches`: what the registry holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from concur.cli.common import SOURCE_DIR_OPTION, Format, print_json, print_table, settings
from concur.data.sources import SourceLocator
from concur.errors import UnknownNameError
from concur.registry.specs import APPROACH_FAMILIES, BENCHMARK_FAMILIES, ApproachSpec, BenchmarkSpec
from concur.runner.planning.availability import benchmark_data


def benches(
    ctx: typer.Context,
    family: str | None = typer.Option(None, "--family", help=f"Only this family: {', '.join(BENCHMARK_FAMILIES)}."),
    output: Format = typer.Option(Format.table, "--format", help="table or json"),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """List the registered benchmarks, their families, where their data would come from, and whether it is here offline."""
    state = settings(ctx)
    if family is not None and family not in BENCHMARK_FAMILIES:
        raise UnknownNameError("benchmark family", family, BENCHMARK_FAMILIES)
    locator = state.locator(source_dir)
    data_dir = state.workspace().data_dir
    records = [_bench_record(spec, locator, data_dir) for spec in state.registry().benchmarks() if family is None or spec.family == family]
    if output is Format.json:
        print_json(records)
        return
    rows = [[r["id"], r["family"], r["data"], r["offline"], _origin(r)] for r in records]
    print_table(f"{len(records)} benchmarks", ["id", "family", "data", "offline", "source files"], rows)


def _origin(record: dict[str, Any]) -> str:
    """The source files of a benchmark, after the generator that reads them if it is generated."""
    files = ", ".join(f"{name}: {source['path']}" for name, source in record["source"].items())
    generator = record["generator"]
    if generator is None:
        return files
    return f"generator {generator['name']} (seed {generator['seed']})" + (f"; {files}" if files else "")


def _bench_record(spec: BenchmarkSpec, locator: SourceLocator, data_dir: Path) -> dict[str, Any]:
    found = benchmark_data(spec, locator, data_dir)
    return {
        "id": spec.id,
        "name": spec.name,
        "family": spec.family,
        "data": found.data,
        "offline": found.offline,
        "source": {
            name: {"reader": source.reader, "path": source.path, "md5": source.md5, "url": source.origin, "available": found.sources[name]}
            for name, source in spec.sources.items()
        },
        "generator": None if spec.generator is None else {"name": spec.generator.name, "seed": spec.generator.seed},
        "spec_file": str(spec.file),
    }


def approaches(
    ctx: typer.Context,
    family: str | None = typer.Option(None, "--family", help=f"Only this family: {', '.join(APPROACH_FAMILIES)}."),
    output: Format = typer.Option(Format.table, "--format", help="table or json"),
) -> None:
    """List the registered approaches: family, implementation and model."""
    if family is not None and family not in APPROACH_FAMILIES:
        raise UnknownNameError("approach family", family, APPROACH_FAMILIES)
    records = [_approach_record(spec) for spec in settings(ctx).registry().approaches() if family is None or spec.family == family]
    if output is Format.json:
        print_json(records)
        return
    rows = [[r["id"], r["family"], r["implementation"], r["model"]] for r in records]
    print_table(f"{len(records)} approaches", ["id", "family", "implementation", "model"], rows)


def _approach_record(spec: ApproachSpec) -> dict[str, Any]:
    model = spec.model.get("hub") or spec.model.get("package") or spec.model.get("path") or spec.model.get("word_vectors")
    return {
        "id": spec.id,
        "name": spec.name,
        "family": spec.family,
        "implementation": spec.implementation,
        "model": model,
        "spec_file": str(spec.file),
    }

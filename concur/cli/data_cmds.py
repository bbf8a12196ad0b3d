"""`concur data ...`: materialise benchmarks."""

from __future__ import annotations

from pathlib import Path

import typer

from concur.cli.common import SOURCE_DIR_OPTION, err, print_table, settings
from concur.data.prepare import prepare

app = typer.Typer(help="Prepare benchmark data (local copies or verified downloads).", no_args_is_help=True)


@app.command("prepare")
def prepare_command(
    ctx: typer.Context,
    benchmarks: list[str] = typer.Argument(..., help="Benchmark ids, e.g. babi-1 squad-20k."),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
    force: bool = typer.Option(False, "--force", help="Prepare again even if prepared data matches the spec."),
) -> None:
    """Write runs/data/<bench>/{train,test}.jsonl.gz and manifest.json for each benchmark."""
    state = settings(ctx)
    registry = state.registry()
    specs = [registry.benchmark(bench_id) for bench_id in benchmarks]  # all names checked before any work
    locator = state.locator(source_dir)
    data_dir = state.workspace().data_dir
    rows = []
    for spec in specs:
        bench, did_work = prepare(spec, locator, data_dir, force=force)
        manifest = bench.manifest
        splits = manifest["splits"]
        dropped = {reason: count for split in splits.values() for reason, count in split["dropped"].items()}
        origins = ", ".join(sorted({source["origin"] for source in manifest["sources"].values()}))
        rows.append(
            [
                spec.id,
                "prepared" if did_work else "up to date",
                f"{splits['train']['questions']:,} / {splits['train']['contexts']:,}",
                f"{splits['test']['questions']:,} / {splits['test']['contexts']:,}",
                "; ".join(f"{count:,} {reason}" for reason, count in dropped.items()) or "0",
                origins,
                str(bench.directory),
            ]
        )
        for name, source in manifest["sources"].items():
            if not source["verified"]:
                err.print(f"[yellow]warning:[/] {spec.id}: source {name!r} has no declared md5; used unverified (md5 {source['md5']})")
    print_table(None, ["benchmark", "state", "train q / ctx", "test q / ctx", "dropped", "sources", "directory"], rows)

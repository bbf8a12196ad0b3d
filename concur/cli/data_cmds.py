"""`concur data ...`: materialise benchmarks."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from concur.cli.common import SOURCE_DIR_OPTION, Format, err, out, print_json, print_table, settings
from concur.cli.kg_cmd import build_kg_command
from concur.data.examples import sample_examples
from concur.data.prepare import SPLITS, PreparedBenchmark, PreparedDataError, load_split, prepare, prepared
from concur.data.stats import split_stats
from concur.errors import ConcurError

app = typer.Typer(help="Prepare benchmark data (local copies or verified downloads).", no_args_is_help=True)
app.command("build-kg")(build_kg_command)


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
        _warn_unverified(spec.id, bench)
        rows.append(_prepared_row(spec.id, bench, did_work))
    print_table(None, ["benchmark", "state", "train q / ctx", "test q / ctx", "kept and dropped", "sources", "directory"], rows)


@app.command("verify")
def verify_command(
    ctx: typer.Context,
    benchmarks: list[str] = typer.Argument(..., help="Benchmark ids."),
    full: bool = typer.Option(False, "--full", help="Hash every file, also those whose recorded check still holds."),
) -> None:
    """Check prepared benchmarks against their manifests, as every run does before using them.

    A file unchanged since its last check is trusted by its stat; --full hashes it anyway
    (for damage that keeps a file's size and times, such as a failing disk).
    """
    state = settings(ctx)
    registry = state.registry()
    specs = [registry.benchmark(bench_id) for bench_id in benchmarks]
    data_dir = state.workspace().data_dir
    rows, failed = [], 0
    for spec in specs:
        try:
            bench = prepared(data_dir, spec, full=full)
        except PreparedDataError as exc:
            rows.append([spec.id, "damaged", str(exc)])
            failed += 1
            continue
        if bench is None:
            rows.append([spec.id, "not prepared", "not yet, or from another spec"])
        else:
            rows.append([spec.id, "verified", str(bench.directory)])
    print_table(None, ["benchmark", "state", "detail"], rows)
    if failed:
        raise ConcurError(f"{failed} of {len(specs)} benchmarks failed verification; see the table above")


@app.command("stats")
def stats_command(
    ctx: typer.Context,
    benchmarks: list[str] = typer.Argument(..., help="Benchmark ids; each is prepared first if it is not yet (see --split)."),
    splits: list[str] | None = typer.Option(
        None, "--split", help="Only this split (repeatable); '--split test' reads a test-only set without its training source."
    ),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
    output: Format = typer.Option(Format.table, "--format", help="table or json"),
) -> None:
    """Table 2 of the reference study: sizes, average lengths in tokens, answers found in the passage."""
    chosen = [_checked_split(split) for split in dict.fromkeys(splits)] if splits else list(SPLITS)
    state = settings(ctx)
    registry = state.registry()
    specs = [registry.benchmark(bench_id) for bench_id in benchmarks]
    locator = state.locator(source_dir)
    data_dir = state.workspace().data_dir
    results = {spec.id: {split: split_stats(load_split(spec, locator, data_dir, split)).as_dict() for split in chosen} for spec in specs}
    if output is Format.json:
        print_json(results)
        return
    columns = ["benchmark", "split", "questions", "passages", "question tokens", "passage tokens", "answer tokens", "answer in passage"]
    print_table(None, columns, _stats_rows(results))


def _stats_rows(results: dict[str, dict[str, dict]]) -> list[list[str]]:
    """One row per benchmark and split of `stats --format json`'s numbers, as a person reads them."""
    return [
        [
            bench_id,
            split,
            f"{row['questions']:,}",
            f"{row['passages']:,}",
            f"{row['question_tokens']:.1f}",
            f"{row['passage_tokens']:.1f}",
            f"{row['answer_tokens']:.2f}",
            f"{100 * row['answer_in_passage']:.1f}%",
        ]
        for bench_id, by_split in results.items()
        for split, row in by_split.items()
    ]


@app.command("show")
def show_command(
    ctx: typer.Context,
    benchmark: str = typer.Argument(..., help="Benchmark id; prepared first if it is not yet."),
    split: str = typer.Option("train", "--split", help="train or test"),
    count: int = typer.Option(3, "--count", "-n", min=1, help="How many questions to show."),
    seed: int = typer.Option(0, "--seed", help="Which sample: the same seed shows the same questions."),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
    output: Format = typer.Option(Format.table, "--format", help="table or json"),
) -> None:
    """Show a seeded sample of a benchmark's questions with their passages and answer spans."""
    split = _checked_split(split)
    state = settings(ctx)
    spec = state.registry().benchmark(benchmark)
    examples = sample_examples(load_split(spec, state.locator(source_dir), state.workspace().data_dir, split), count, seed)
    if output is Format.json:
        print_json([{**vars(example), "span_text": example.span_text} for example in examples])
        return
    for example in examples:
        out.print(f"[bold]{escape(example.qid)}[/]  ({spec.id} {split})")
        out.print(f"  passage:  {escape(example.passage)}")
        out.print(f"  question: {escape(example.question)}")
        out.print(f"  answers:  {escape(' | '.join(example.answers))}  span {example.span}: {escape(repr(example.span_text))}")
        out.print()


@app.command("annotate")
def annotate_command(
    ctx: typer.Context,
    benchmarks: list[str] = typer.Argument(..., help="Benchmark ids; each is prepared first if it is not yet."),
    approaches: list[str] | None = typer.Option(
        None, "--approach", "-a", help="With-features approaches to tag for (default: every registered one)."
    ),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """Tag passages and questions with spaCy once, into runs/cache/annotations/, for the with-features readers."""
    from concur.approaches.reader.pretag import feature_inputs, pretag

    state = settings(ctx)
    registry = state.registry()
    specs = [registry.benchmark(bench_id) for bench_id in benchmarks]
    chosen = [registry.approach(name) for name in approaches] if approaches else registry.approaches()
    groups = feature_inputs(chosen)
    if not groups:
        names = ", ".join(spec.id for spec in chosen)
        raise ConcurError(f"none of the approaches {names} uses linguistic features; nothing to annotate")
    locator = state.locator(source_dir)
    workspace = state.workspace()
    rows = []
    for spec in specs:
        bench, _ = prepare(spec, locator, workspace.data_dir)
        splits = [bench.load(split) for split in SPLITS]
        for inputs, approach_ids in groups.items():
            report = pretag(splits, inputs, approach_ids, workspace.cache_dir)
            rows.append([spec.id, report.pipeline, ", ".join(report.approaches), f"{report.texts:,}", f"{report.tagged:,}"])
    print_table(None, ["benchmark", "pipeline", "approaches", "texts", "tagged now"], rows)


def _warn_unverified(bench_id: str, bench: PreparedBenchmark) -> None:
    for name, source in bench.manifest["sources"].items():
        if not source["verified"]:
            err.print(f"[yellow]warning:[/] {bench_id}: source {name!r} has no declared md5; used unverified (md5 {source['md5']})")


def _prepared_row(bench_id: str, bench: PreparedBenchmark, did_work: bool) -> list[str]:
    """A prepared benchmark's row of `data prepare`: its state, sizes, what was dropped, its sources and directory."""
    manifest = bench.manifest
    splits = manifest["splits"]
    return [
        bench_id,
        "prepared" if did_work else "up to date",
        f"{splits['train']['questions']:,} / {splits['train']['contexts']:,}",
        f"{splits['test']['questions']:,} / {splits['test']['contexts']:,}",
        _dropped_summary(splits),
        ", ".join(sorted({source["origin"] for source in manifest["sources"].values()})),
        str(bench.directory),
    ]


def _dropped_summary(splits: dict) -> str:
    """Per split, what was kept and what was dropped for which reason."""
    parts = []
    for name in SPLITS:
        entry = splits[name]
        dropped = ", ".join(f"{count:,} {reason}" for reason, count in entry["dropped"].items()) or "none dropped"
        parts.append(f"{name}: {entry['questions']:,} kept; {dropped}")
    return "\n".join(parts)


def _checked_split(split: str) -> str:
    if split not in SPLITS:
        raise ConcurError(f"no split {split!r}; choose one of {', '.join(SPLITS)}")
    return split

"""`concur matrix`, `concur compare` and `concur results`: the analysis from the command line."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console

from concur.analysis.bootstrap import BootstrapSettings, Interval, MatrixWithCI
from concur.analysis.concurrence import METHOD_LABELS, ConcurrenceMatrix, Method
from concur.analysis.layouts import Layout
from concur.analysis.matrix import MatrixRequest, Order, benchmark_matrix
from concur.analysis.pair import PAIR_COLUMNS, PairRequest, pair_json, pair_notes, pair_rows, pair_title
from concur.analysis.policy import Policy
from concur.analysis.questions import questions_csv
from concur.analysis.ranks import RANK_COLUMNS, benchmark_ranks, rank_rows, ranks_json
from concur.analysis.reliability import MatrixNoise
from concur.analysis.render import (
    SMALL_N_FOOTNOTE,
    cell_texts,
    counts_csv,
    footnotes,
    matrix_csv,
    matrix_json,
    matrix_latex,
    matrix_markdown,
    pair_texts,
    small_n_note,
)
from concur.analysis.results import NAMED_SOURCES, Results, load_results
from concur.analysis.runs import runs_table
from concur.analysis.view import EMTable
from concur.cli.common import SOURCE_DIR_OPTION, Settings, err, fits, make_table, out, print_json, print_table, settings
from concur.fsutil import atomic_open
from concur.plots.heatmap import save_matrix_heatmap
from concur.plots.pair import compare_and_draw


class MatrixFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"
    latex = "latex"


RESULTS_OPTION = typer.Option(
    ["store"],
    "--results",
    "-r",
    help=f"Results to analyse: {', '.join(NAMED_SOURCES)} or a CSV or JSON file (see --layout); "
    "repeat or join with + to combine (later replaces earlier cells).",
)
LAYOUT_OPTION = typer.Option(
    None,
    "--layout",
    help="Layout of the results files: tidy (a row per run), questions (a row per run and question_id, em 1 or 0) "
    "or wide (a row per approach, a column of EM per benchmark); default: detected from the columns.",
)
POLICY_OPTION = typer.Option(Policy.best, "--policy", help="Reduce hyperparameter samples: default (SQuAD setting), best (max), mean.")
APPROACHES_OPTION = typer.Option(
    None, "--approaches", "-a", help="Approaches: ids, families (pretrained, non-pretrained), globs; comma-separated."
)
RESAMPLES_OPTION = typer.Option(2000, "--resamples", min=10, help="Bootstrap resamples of the approaches.")
SEED_OPTION = typer.Option(0, "--seed", help="Bootstrap seed (same seed, same intervals).")
CONFIDENCE_OPTION = typer.Option(0.95, "--confidence", min=0.5, max=0.999, help="Confidence level of the intervals.")


def load(state: Settings, results: list[str], source_dir: list[Path] | None, layout: Layout | None = None) -> Results:
    return load_results(
        results, store_path=state.workspace().db_path, locator=state.locator(source_dir), registry=state.registry(), layout=layout
    )


def write_output(text: str, out_file: Path | None) -> None:
    """Text to stdout, or atomically to a file (never a half-written file on failure)."""
    if out_file is None:
        print(text, end="")
        return
    with atomic_open(out_file, "wt") as handle:
        handle.write(text)
    err.print(f"wrote {out_file}")


def report_notes(table: EMTable) -> None:
    for line in table.notes:
        print_note(line)


def print_note(line: str) -> None:
    """A note about the results (a replaced or missing cell) on stderr, as every analysis command prints it."""
    err.print(f"note: {line}", markup=False, highlight=False)


def matrix(
    ctx: typer.Context,
    results: list[str] = RESULTS_OPTION,
    layout: Layout | None = LAYOUT_OPTION,
    corr: Method = typer.Option(Method.kendall, "--corr", help="Correlation: kendall (tau-b) or pearson (r)."),
    benches: str | None = typer.Option(
        None, "--benches", "-b", help="Benchmarks: ids, families (human, downsampled, cloze, synthetic), globs; comma-separated."
    ),
    approaches: str | None = APPROACHES_OPTION,
    policy: Policy = POLICY_OPTION,
    ci: bool = typer.Option(False, "--ci", help="Bootstrap confidence interval for every cell."),
    interval: Interval = typer.Option(Interval.bca, "--interval", help="Interval type with --ci: bca or percentile."),
    resamples: int = RESAMPLES_OPTION,
    seed: int = SEED_OPTION,
    confidence: float = CONFIDENCE_OPTION,
    order: Order = typer.Option(
        Order.given, "--order", help="given (as listed; families in family order) or cluster (similar benchmarks together)."
    ),
    fmt: MatrixFormat = typer.Option(MatrixFormat.table, "--format", "-f", help="table, csv, json, markdown or latex."),
    out_file: Path | None = typer.Option(None, "--out", "-o", help="Write the matrix to this file instead of stdout."),
    counts_file: Path | None = typer.Option(
        None,
        "--counts",
        help="Also write n, the number of approaches behind each cell, to this file as a CSV laid out like the matrix.",
    ),
    heatmap: Path | None = typer.Option(None, "--heatmap", help="Also draw the heatmap to PATH.pdf and PATH.png."),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """Concurrence between every pair of benchmarks: how alike they rank the approaches."""
    state = settings(ctx)
    bootstrap = BootstrapSettings(resamples, seed, confidence, interval) if ci else None
    request = MatrixRequest(corr, policy, benches, approaches, order, bootstrap)
    made = benchmark_matrix(load(state, results, source_dir, layout), request, registry=state.registry(), note=print_note)
    wide, estimate = made.wide, made.estimate
    if made.bootstrap_seconds is not None:
        err.print(f"bootstrap: {resamples} resamples of {len(wide)} approaches, {wide.shape[1]} benchmarks, {made.bootstrap_seconds:.2f} s")
    err.print(f"{METHOD_LABELS[corr]} over {len(wide)} approaches (policy {policy}, results {'+'.join(results)})", highlight=False)
    few = small_n_note(estimate)
    if few:
        print_note(few)
    if made.noise is not None and made.noise.ceilings is not None:
        shown = ", ".join(f"{bench} {value:.2f}" for bench, value in made.noise.ceilings.reliability.dropna().items())
        err.print(f"reliability (expected {METHOD_LABELS[corr]} between two test sets of each benchmark's size): {shown}", highlight=False)
    context = {"results": results, "policy": str(policy), "approaches": list(wide.index)}
    _emit(estimate, made.with_ci, made.noise, fmt, out_file, context)
    if counts_file is not None:
        write_output(counts_csv(estimate.counts), counts_file)
    if heatmap is not None:
        for path in save_matrix_heatmap(made, heatmap):
            err.print(f"wrote {path}")


def _emit(
    estimate: ConcurrenceMatrix,
    with_ci: MatrixWithCI | None,
    noise: MatrixNoise | None,
    fmt: MatrixFormat,
    out_file: Path | None,
    context: dict,
) -> None:
    if fmt is MatrixFormat.table and out_file is None:
        show_matrix(estimate, with_ci, noise, out)
        return
    if fmt is MatrixFormat.json:
        text = json.dumps(matrix_json(estimate, with_ci, context, noise), indent=2) + "\n"
    elif fmt is MatrixFormat.csv:
        text = matrix_csv(estimate.values)
    elif fmt is MatrixFormat.latex:
        text = matrix_latex(estimate, with_ci, f"{METHOD_LABELS[estimate.method]} concurrence between benchmarks.", noise)
    else:
        text = matrix_markdown(estimate, with_ci, noise)
    write_output(text, out_file)


def show_matrix(estimate: ConcurrenceMatrix, with_ci: MatrixWithCI | None, noise: MatrixNoise | None, console: Console) -> None:
    """The square matrix if it fits `console`, else one row per pair: a folded matrix cannot be read."""
    texts = cell_texts(estimate, with_ci, noise)
    square = make_table(None, ["benchmark", *texts.columns], [[bench, *row] for bench, row in texts.iterrows()])
    if fits(square, console):
        console.print(square)
        counts = set(estimate.counts.to_numpy().ravel().tolist())
        if len(counts) == 1:  # otherwise every cell shows its own n
            console.print(f"n = {counts.pop()} approaches in every cell")
    else:
        pairs = pair_texts(estimate, with_ci, noise)
        console.print(make_table(None, list(pairs.columns), pairs.to_numpy().tolist()))
        console.print(f"Too wide for {console.width} columns: one row per pair.")
        console.print("Full matrix: --format csv --out FILE", markup=False)
    for note in footnotes(estimate, noise):
        console.print(note, markup=False)
    if with_ci is not None:
        labels = [str(bench) for bench in estimate.values.index]
        kinds = {with_ci.kind(row, column) for row in labels for column in labels if row != column}
        console.print(f"intervals resample: {' / '.join(sorted(kinds))}", markup=False)


def compare(
    ctx: typer.Context,
    first: str = typer.Argument(..., help="Benchmark on the x axis."),
    second: str = typer.Argument(..., help="Benchmark on the y axis."),
    results: list[str] = RESULTS_OPTION,
    layout: Layout | None = LAYOUT_OPTION,
    approaches: str | None = APPROACHES_OPTION,
    policy: Policy = POLICY_OPTION,
    reference: str | None = typer.Option(
        None,
        "--against",
        "--reference",
        help="Also test whether FIRST and SECOND concur differently with this benchmark (a paired bootstrap test).",
    ),
    interval: Interval = typer.Option(Interval.bca, "--interval", help="bca or percentile."),
    resamples: int = RESAMPLES_OPTION,
    seed: int = SEED_OPTION,
    confidence: float = CONFIDENCE_OPTION,
    plot: Path | None = typer.Option(None, "--plot", help="Scatter plot path without suffix (default: RUNS/figures/compare-FIRST-SECOND)."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """Two benchmarks side by side: r and tau with intervals, n, and the scatter plot."""
    state = settings(ctx)
    request = PairRequest(first, second, reference, policy, approaches, BootstrapSettings(resamples, seed, confidence, interval))
    loaded = load(state, results, source_dir, layout)
    stem = plot or state.workspace().root / "figures" / f"compare-{first}-{second}"
    drawn = compare_and_draw(loaded, request, stem, registry=state.registry(), note=print_note)
    if fmt == "json":
        print_json(pair_json(drawn.pair, drawn.paths))
        return
    print_table(pair_title(drawn.pair), PAIR_COLUMNS, pair_rows(drawn.pair))
    if drawn.pair.comparison.small_n:
        out.print(SMALL_N_FOOTNOTE, markup=False)
    for line in pair_notes(drawn.pair):
        out.print(line, markup=False)
    for path in drawn.paths:
        out.print(f"wrote {path}", highlight=False)


def results_table(
    ctx: typer.Context,
    results: list[str] = RESULTS_OPTION,
    layout: Layout | None = LAYOUT_OPTION,
    out_file: Path | None = typer.Option(None, "--out", "-o", help="Write the tidy table as CSV to this file (default: stdout)."),
    questions_file: Path | None = typer.Option(
        None,
        "--questions",
        help="Also write the per-question outcomes to this CSV (approach, benchmark, hparam_id, seed, question_id, em, f1).",
    ),
    seed: int = SEED_OPTION,
    confidence: float = CONFIDENCE_OPTION,
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """The results as one tidy CSV (approach, benchmark, hparam_id, seed, em, f1, labels); runs with per-question outcomes
    also get n_questions and their EM's interval from their test questions (em_lower, em_upper)."""
    loaded = load(settings(ctx), results, source_dir, layout)
    for line in loaded.notes:
        print_note(line)
    write_output(runs_table(loaded, confidence=confidence, seed=seed).to_csv(index=False), out_file)
    if questions_file is not None:
        if loaded.questions.empty:
            print_note(f"these results have no per-question outcomes; {questions_file} holds only the header")
        write_output(questions_csv(loaded.questions), questions_file)


def ranks(
    ctx: typer.Context,
    benchmark: str = typer.Argument(..., help="Benchmark id whose approaches are ranked."),
    results: list[str] = RESULTS_OPTION,
    layout: Layout | None = LAYOUT_OPTION,
    approaches: str | None = APPROACHES_OPTION,
    policy: Policy = POLICY_OPTION,
    alpha: float = typer.Option(0.05, "--alpha", min=0.001, max=0.5, help="Family-wise error rate of the paired tests (Holm)."),
    seed: int = SEED_OPTION,
    confidence: float = CONFIDENCE_OPTION,
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """The approaches in groups the benchmark's test questions cannot tell apart, best first."""
    state = settings(ctx)
    loaded = load(state, results, source_dir, layout)
    made = benchmark_ranks(
        loaded,
        benchmark,
        policy=policy,
        approaches=approaches,
        registry=state.registry(),
        alpha=alpha,
        settings=BootstrapSettings(seed=seed, confidence=confidence),
        note=print_note,
    )
    if fmt == "json":
        print_json(ranks_json(made))
        return
    print_table(f"{benchmark}: {made.groups.n_questions} test questions", RANK_COLUMNS, rank_rows(made))
    out.print(
        f"Approaches in one group are not told apart by paired tests over the same questions (Holm, alpha {alpha:g}); "
        f"EM with {int(confidence * 100)}% intervals over the questions and seeds.",
        markup=False,
    )

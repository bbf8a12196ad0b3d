"""`concur matrix`, `concur compare` and `concur results`: the analysis from the command line."""

from __future__ import annotations

import json
import math
import time
from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console

from concur.analysis.bootstrap import BootstrapSettings, Interval, MatrixWithCI, bootstrap_matrix
from concur.analysis.concurrence import (
    METHOD_LABELS,
    METHOD_SYMBOLS,
    MIN_APPROACHES,
    ConcurrenceMatrix,
    Method,
    concurrence_matrix,
    is_small_n,
)
from concur.analysis.ordering import clustered_matrix
from concur.analysis.pair import compare_pair
from concur.analysis.policy import Policy
from concur.analysis.render import (
    SMALL_N_FOOTNOTE,
    SMALL_N_MARK,
    cell_texts,
    counts_csv,
    matrix_csv,
    matrix_json,
    matrix_latex,
    matrix_markdown,
    pair_texts,
    small_n_note,
)
from concur.analysis.results import NAMED_SOURCES, Results, load_results
from concur.analysis.view import EMTable, em_table
from concur.cli.common import SOURCE_DIR_OPTION, Settings, err, fits, make_table, out, print_json, print_table, settings
from concur.errors import ConcurError
from concur.fsutil import atomic_open
from concur.plots.heatmap import concurrence_heatmap
from concur.plots.scatter import pair_scatter
from concur.plots.style import save_figure
from concur.registry.specs import id_problem


class MatrixFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"
    latex = "latex"


class Order(StrEnum):
    given = "given"
    cluster = "cluster"


RESULTS_OPTION = typer.Option(
    ["store"],
    "--results",
    "-r",
    help=f"Results to analyse: {', '.join(NAMED_SOURCES)} or a tidy CSV or JSON file; "
    "repeat or join with + to combine (later replaces earlier cells).",
)
POLICY_OPTION = typer.Option(Policy.best, "--policy", help="Reduce hyperparameter samples: default (SQuAD setting), best (max), mean.")
APPROACHES_OPTION = typer.Option(
    None, "--approaches", "-a", help="Approaches: ids, families (pretrained, non-pretrained), globs; comma-separated."
)
RESAMPLES_OPTION = typer.Option(2000, "--resamples", min=10, help="Bootstrap resamples of the approaches.")
SEED_OPTION = typer.Option(0, "--seed", help="Bootstrap seed (same seed, same intervals).")
CONFIDENCE_OPTION = typer.Option(0.95, "--confidence", min=0.5, max=0.999, help="Confidence level of the intervals.")


def load(state: Settings, results: list[str], source_dir: list[Path] | None) -> Results:
    return load_results(results, store_path=state.workspace().db_path, locator=state.locator(source_dir), registry=state.registry())


def write_output(text: str, out_file: Path | None) -> None:
    """Text to stdout, or atomically to a file (never a half-written file on failure)."""
    if out_file is None:
        print(text, end="")
        return
    with atomic_open(out_file, "wt") as handle:
        handle.write(text)
    err.print(f"wrote {out_file}")


def report_notes(table: EMTable) -> None:
    for note in table.notes:
        err.print(f"note: {note}", markup=False, highlight=False)


def matrix(
    ctx: typer.Context,
    results: list[str] = RESULTS_OPTION,
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
    table = em_table(load(state, results, source_dir), policy=policy, benches=benches, approaches=approaches, registry=state.registry())
    report_notes(table)
    if table.wide.shape[1] < 2:
        raise ConcurError(f"a matrix needs at least two benchmarks; these results and filters leave {list(table.wide.columns)}")
    if order is Order.cluster:
        wide, estimate = clustered_matrix(table.wide, corr)
    else:
        wide, estimate = table.wide, concurrence_matrix(table.wide, corr)
    with_ci = None
    if ci:
        started = time.perf_counter()
        with_ci = bootstrap_matrix(wide, corr, BootstrapSettings(resamples, seed, confidence, interval))
        err.print(
            f"bootstrap: {resamples} resamples of {len(wide)} approaches, {wide.shape[1]} benchmarks, {time.perf_counter() - started:.2f} s"
        )
    err.print(f"{METHOD_LABELS[corr]} over {len(wide)} approaches (policy {policy}, results {'+'.join(results)})", highlight=False)
    few = small_n_note(estimate)
    if few:
        err.print(f"note: {few}", markup=False, highlight=False)
    _emit(estimate, with_ci, fmt, out_file, {"results": results, "policy": str(policy), "approaches": list(wide.index)})
    if counts_file is not None:
        write_output(counts_csv(estimate.counts), counts_file)
    if heatmap is not None:
        figure = concurrence_heatmap(
            estimate.values, counts=estimate.counts, value_label=METHOD_LABELS[corr], names=table.labels.benchmark_names(wide.columns)
        )
        for path in save_figure(figure, heatmap):
            err.print(f"wrote {path}")


def _emit(estimate: ConcurrenceMatrix, with_ci: MatrixWithCI | None, fmt: MatrixFormat, out_file: Path | None, context: dict) -> None:
    if fmt is MatrixFormat.table and out_file is None:
        show_matrix(estimate, with_ci, out)
        return
    if fmt is MatrixFormat.json:
        text = json.dumps(matrix_json(estimate, with_ci, context), indent=2) + "\n"
    elif fmt is MatrixFormat.csv:
        text = matrix_csv(estimate.values)
    elif fmt is MatrixFormat.latex:
        text = matrix_latex(estimate, with_ci, f"{METHOD_LABELS[estimate.method]} concurrence between benchmarks.")
    else:
        text = matrix_markdown(estimate, with_ci)
    write_output(text, out_file)


def show_matrix(estimate: ConcurrenceMatrix, with_ci: MatrixWithCI | None, console: Console) -> None:
    """The square matrix if it fits `console`, else one row per pair: a folded matrix cannot be read."""
    texts = cell_texts(estimate, with_ci)
    square = make_table(None, ["benchmark", *texts.columns], [[bench, *row] for bench, row in texts.iterrows()])
    if fits(square, console):
        console.print(square)
        counts = set(estimate.counts.to_numpy().ravel().tolist())
        if len(counts) == 1:  # otherwise every cell shows its own n
            console.print(f"n = {counts.pop()} approaches in every cell")
    else:
        pairs = pair_texts(estimate, with_ci)
        console.print(make_table(None, list(pairs.columns), pairs.to_numpy().tolist()))
        console.print(f"Too wide for {console.width} columns: one row per pair.")
        console.print("Full matrix: --format csv --out FILE", markup=False)
    if estimate.small_n().to_numpy().any():
        console.print(SMALL_N_FOOTNOTE, markup=False)


def compare(
    ctx: typer.Context,
    first: str = typer.Argument(..., help="Benchmark on the x axis."),
    second: str = typer.Argument(..., help="Benchmark on the y axis."),
    results: list[str] = RESULTS_OPTION,
    approaches: str | None = APPROACHES_OPTION,
    policy: Policy = POLICY_OPTION,
    reference: str | None = typer.Option(
        None, "--reference", help="Also test whether FIRST and SECOND concur differently with this benchmark."
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
    named = [first, second, *([reference] if reference else [])]
    if len(set(named)) < len(named):
        raise ConcurError(f"compare needs different benchmarks, got {', '.join(named)}")
    for name in named:  # the ids name the plot's file
        if problem := id_problem(name):
            raise ConcurError(f"compare takes benchmark ids: {problem}")
    loaded = load(state, results, source_dir)
    table = em_table(loaded, policy=policy, benches=",".join(named), approaches=approaches, registry=state.registry())
    not_ids = [name for name in named if name not in table.wide.columns]
    if not_ids:
        raise ConcurError(f"compare takes benchmark ids, not families or patterns: {', '.join(not_ids)}")
    report_notes(table)
    compared = compare_pair(table.wide, first, second, BootstrapSettings(resamples, seed, confidence, interval), reference)
    rows = []
    payload = {
        "first": first,
        "second": second,
        "policy": str(policy),
        "interval": str(interval),
        "confidence": confidence,
        "min_approaches": MIN_APPROACHES,
    }
    stats_lines = []
    for estimate in compared.estimates:
        value, lower, upper, n = estimate.value, estimate.lower, estimate.upper, estimate.n
        rows.append([METHOD_LABELS[estimate.method], _fmt(value), f"[{_fmt(lower)}, {_fmt(upper)}]", _n_text(n)])
        payload[str(estimate.method)] = {
            "value": _number(value),
            "lower": _number(lower),
            "upper": _number(upper),
            "n": n,
            "small_n": is_small_n(n),
        }
        stats_lines.append(f"{METHOD_SYMBOLS[estimate.method]} = {_fmt(value)} [{_fmt(lower)}, {_fmt(upper)}]")
    n = payload["kendall"]["n"]
    stats_lines.append(f"n = {n}" + (f" (fewer than {MIN_APPROACHES} approaches)" if is_small_n(n) else ""))
    sample_sizes = [n]
    if reference:
        for test in compared.versus_reference:
            method = test.method
            label = f"{METHOD_LABELS[method]}: ({first}, {reference}) - ({second}, {reference})"
            p_value = "n/a" if math.isnan(test.p_value) else f"{test.p_value:.3f}"
            rows.append([label, _fmt(test.difference), f"[{_fmt(test.lower)}, {_fmt(test.upper)}]", f"{_n_text(test.n)}  p = {p_value}"])
            payload[f"versus_{reference}_{method}"] = {
                "first": _number(test.first_value),
                "second": _number(test.second_value),
                "difference": _number(test.difference),
                "lower": _number(test.lower),
                "upper": _number(test.upper),
                "p_value": _number(test.p_value),
                "n": test.n,
                "small_n": is_small_n(test.n),
            }
            sample_sizes.append(test.n)
    stem = plot or state.workspace().root / "figures" / f"compare-{first}-{second}"
    figure = pair_scatter(
        table.wide,
        first,
        second,
        families=table.approach_families(),
        names={**table.labels.approach_names(table.wide.index), **table.labels.benchmark_names([first, second])},
        stats="\n".join(stats_lines),
    )
    paths = save_figure(figure, stem)
    payload["plot"] = [str(path) for path in paths]
    if fmt == "json":
        print_json(payload)
    else:
        print_table(
            f"{first} vs {second} ({int(confidence * 100)}% {interval} intervals, {resamples} resamples, seed {seed})",
            ["statistic", "value", "interval", "n"],
            rows,
        )
        if any(is_small_n(size) for size in sample_sizes):
            out.print(SMALL_N_FOOTNOTE, markup=False)
        for path in paths:
            out.print(f"wrote {path}", highlight=False)


def _fmt(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def _n_text(n: int) -> str:
    return f"{n}{SMALL_N_MARK}" if is_small_n(n) else str(n)


def _number(value: float) -> float | None:
    """JSON has no NaN: an undefined statistic is null."""
    return None if math.isnan(value) else float(value)


def results_table(
    ctx: typer.Context,
    results: list[str] = RESULTS_OPTION,
    out_file: Path | None = typer.Option(None, "--out", "-o", help="Write the tidy table as CSV to this file (default: stdout)."),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """The results as one tidy CSV (approach, benchmark, hparam_id, seed, em, f1, labels)."""
    loaded = load(settings(ctx), results, source_dir)
    for note in loaded.notes:
        err.print(f"note: {note}", markup=False, highlight=False)
    write_output(loaded.frame.to_csv(index=False), out_file)

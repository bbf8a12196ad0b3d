"""`concur matrix`, `concur compare` and `concur results`: the analysis from the command line."""

from __future__ import annotations

import json
import math
import time
from enum import StrEnum
from pathlib import Path

import typer

from concur.analysis.bootstrap import BootstrapSettings, Interval, MatrixWithCI, bootstrap_matrix, compare_with_reference
from concur.analysis.concurrence import METHOD_LABELS, METHOD_SYMBOLS, ConcurrenceMatrix, Method, concurrence_matrix
from concur.analysis.ordering import cluster_order
from concur.analysis.policy import Policy
from concur.analysis.render import cell_texts, matrix_csv, matrix_json, matrix_latex, matrix_markdown
from concur.analysis.results import NAMED_SOURCES, Results, load_results
from concur.analysis.view import EMTable, em_table
from concur.cli.common import SOURCE_DIR_OPTION, Settings, err, out, print_json, print_table, settings
from concur.errors import ConcurError
from concur.fsutil import atomic_open
from concur.plots.heatmap import concurrence_heatmap
from concur.plots.scatter import pair_scatter
from concur.plots.style import save_figure


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
    help=f"Results to analyse: {', '.join(NAMED_SOURCES)} or a tidy CSV; repeat or join with + to combine (later replaces earlier cells).",
)
POLICY_OPTION = typer.Option(Policy.best, "--policy", help="Reduce hyperparameter samples: default (SQuAD setting), best (max), mean.")
APPROACHES_OPTION = typer.Option(
    None, "--approaches", "-a", help="Approaches: ids, families (pretrained, non-pretrained), globs; comma-separated."
)
RESAMPLES_OPTION = typer.Option(2000, "--resamples", min=10, help="Bootstrap resamples of the approaches.")
SEED_OPTION = typer.Option(0, "--seed", help="Bootstrap seed (same seed, same intervals).")
CONFIDENCE_OPTION = typer.Option(0.95, "--confidence", min=0.5, max=0.999, help="Confidence level of the intervals.")


def load(state: Settings, results: list[str], source_dir: list[Path] | None) -> Results:
    return load_results(results, store_path=state.workspace().db_path, locator=state.locator(source_dir))


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
    heatmap: Path | None = typer.Option(None, "--heatmap", help="Also draw the heatmap to PATH.pdf and PATH.png."),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """Concurrence between every pair of benchmarks: how alike they rank the approaches."""
    state = settings(ctx)
    table = em_table(load(state, results, source_dir), policy=policy, benches=benches, approaches=approaches, registry=state.registry())
    report_notes(table)
    if table.wide.shape[1] < 2:
        raise ConcurError(f"a matrix needs at least two benchmarks; these results and filters leave {list(table.wide.columns)}")
    wide = table.wide
    estimate = concurrence_matrix(wide, corr)
    if order is Order.cluster:
        ranked = cluster_order(estimate.values)
        wide = wide[ranked]
        estimate = concurrence_matrix(wide, corr)
    with_ci = None
    if ci:
        started = time.perf_counter()
        with_ci = bootstrap_matrix(wide, corr, BootstrapSettings(resamples, seed, confidence, interval))
        err.print(
            f"bootstrap: {resamples} resamples of {len(wide)} approaches, {wide.shape[1]} benchmarks, {time.perf_counter() - started:.2f} s"
        )
    err.print(f"{METHOD_LABELS[corr]} over {len(wide)} approaches (policy {policy}, results {'+'.join(results)})", highlight=False)
    _emit(estimate, with_ci, fmt, out_file, {"results": results, "policy": str(policy), "approaches": list(wide.index)})
    if heatmap is not None:
        figure = concurrence_heatmap(
            estimate.values, counts=estimate.counts, value_label=METHOD_LABELS[corr], names=table.labels.benchmark_names(wide.columns)
        )
        for path in save_figure(figure, heatmap):
            err.print(f"wrote {path}")


def _emit(estimate: ConcurrenceMatrix, with_ci: MatrixWithCI | None, fmt: MatrixFormat, out_file: Path | None, context: dict) -> None:
    if fmt is MatrixFormat.table and out_file is None:
        texts = cell_texts(estimate, with_ci)
        print_table(None, ["benchmark", *texts.columns], [[bench, *row] for bench, row in texts.iterrows()])
        return
    if fmt is MatrixFormat.json:
        text = json.dumps(matrix_json(estimate, with_ci, context), indent=2) + "\n"
    elif fmt is MatrixFormat.csv:
        text = matrix_csv(estimate.values)
    elif fmt is MatrixFormat.latex:
        text = matrix_latex(cell_texts(estimate, with_ci), f"{METHOD_LABELS[estimate.method]} concurrence between benchmarks.")
    else:
        text = matrix_markdown(cell_texts(estimate, with_ci))
    write_output(text, out_file)


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
    benches = ",".join([first, second, *([reference] if reference else [])])
    table = em_table(load(state, results, source_dir), policy=policy, benches=benches, approaches=approaches, registry=state.registry())
    report_notes(table)
    boot = BootstrapSettings(resamples, seed, confidence, interval)
    rows, payload = [], {"first": first, "second": second, "policy": str(policy), "interval": str(interval), "confidence": confidence}
    stats_lines = []
    for method in Method:
        cell = bootstrap_matrix(table.wide[[first, second]], method, boot)
        value, n = cell.estimate.pair(first, second)
        lower, upper = float(cell.lower.loc[first, second]), float(cell.upper.loc[first, second])
        rows.append([METHOD_LABELS[method], _fmt(value), f"[{_fmt(lower)}, {_fmt(upper)}]", n])
        payload[str(method)] = {"value": value, "lower": lower, "upper": upper, "n": n}
        stats_lines.append(f"{METHOD_SYMBOLS[method]} = {_fmt(value)} [{_fmt(lower)}, {_fmt(upper)}]")
    stats_lines.append(f"n = {payload['kendall']['n']}")
    if reference:
        for method in Method:
            test = compare_with_reference(table.wide, reference, first, second, method, boot)
            label = f"{METHOD_LABELS[method]}: ({first}, {reference}) - ({second}, {reference})"
            rows.append([label, _fmt(test.difference), f"[{_fmt(test.lower)}, {_fmt(test.upper)}]", f"{test.n}  p = {test.p_value:.3f}"])
            payload[f"versus_{reference}_{method}"] = {
                "first": test.first_value,
                "second": test.second_value,
                "difference": test.difference,
                "lower": test.lower,
                "upper": test.upper,
                "p_value": test.p_value,
                "n": test.n,
            }
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
        for path in paths:
            out.print(f"wrote {path}", highlight=False)


def _fmt(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


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

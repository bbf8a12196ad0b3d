"""`concur report`: one self-contained HTML page about a set of results (and a study's grid)."""

from __future__ import annotations

from pathlib import Path

import typer

from concur.analysis.bootstrap import BootstrapSettings, Interval
from concur.analysis.layouts import Layout
from concur.analysis.policy import Policy
from concur.analysis.results import Results
from concur.cli.analysis_cmds import (
    APPROACHES_OPTION,
    CONFIDENCE_OPTION,
    LAYOUT_OPTION,
    POLICY_OPTION,
    RESAMPLES_OPTION,
    RESULTS_OPTION,
    SEED_OPTION,
    load,
    report_notes,
)
from concur.cli.common import DEFAULT_RECIPES, SOURCE_DIR_OPTION, Settings, err, out, settings
from concur.report.content import ReportOptions
from concur.report.page import publish_report


def report(
    ctx: typer.Context,
    results: list[str] = RESULTS_OPTION,
    layout: Layout | None = LAYOUT_OPTION,
    out_dir: Path = typer.Option(..., "--out", "-o", help="Directory to write index.html (and files/: PDFs, PNGs, CSVs) into."),
    benches: str | None = typer.Option(
        None, "--benches", "-b", help="Benchmarks: ids, families (human, downsampled, cloze, synthetic), globs; comma-separated."
    ),
    approaches: str | None = APPROACHES_OPTION,
    policy: Policy = POLICY_OPTION,
    reference: str | None = typer.Option(
        None, "--reference", help="Reference benchmark for the figure recipes (default: each recipe's own)."
    ),
    study: Path | None = typer.Option(
        None, "--study", exists=True, dir_okay=False, help="A study file (analysis/studies/*.toml): describe its grid and its jobs' states."
    ),
    recipes: list[Path] = typer.Option(
        None, "--recipes", help=f"Figure recipes: files or directories (repeatable; default: ./{DEFAULT_RECIPES} when it exists)."
    ),
    interval: Interval = typer.Option(Interval.bca, "--interval", help="Interval type of the matrices: bca or percentile."),
    resamples: int = RESAMPLES_OPTION,
    seed: int = SEED_OPTION,
    confidence: float = CONFIDENCE_OPTION,
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """Write a self-contained HTML report: what was run, the EM table, r and tau with intervals, the figures, and the published numbers."""
    state = settings(ctx)
    options = ReportOptions(
        results=(),
        policy=policy,
        benches=benches,
        approaches=approaches,
        reference=reference,
        bootstrap=BootstrapSettings(resamples, seed, confidence, interval),
    )
    make_report(state, results, out_dir, options, recipes=recipes, study=study, source_dir=source_dir, layout=layout)


def make_report(
    state: Settings,
    results: list[str],
    out_dir: Path,
    options: ReportOptions,
    *,
    recipes: list[Path] | None,
    study: Path | None,
    source_dir: list[Path] | None,
    layout: Layout | None = None,
) -> Path:
    """Load the results, write the page, and say what it holds (also the end of `concur study run --report`)."""
    loaded = load(state, results, source_dir, layout)

    def load_more(requests: list[str]) -> Results:
        return load(state, requests, source_dir, layout)

    index, made = publish_report(
        loaded,
        options,
        out_dir,
        load=load_more,
        registry=state.registry(),
        workspace=state.workspace(),
        recipes=_recipe_targets(recipes),
        study=study,
    )
    report_notes(made.table)
    for warning in made.warnings:
        err.print(f"warning: {warning}", markup=False, highlight=False)
    drawn = sum(1 for figure in made.figures if not figure.skipped)
    approaches, benches = made.table.wide.shape
    err.print(f"{approaches} approach(es) x {benches} benchmark(s); {drawn} of {len(made.figures)} recipe(s) drawn", highlight=False)
    out.print(f"wrote {index}", highlight=False)
    return index


def _recipe_targets(targets: list[Path] | None) -> list[Path]:
    """The --recipes given, else ./analysis when it exists, else none."""
    if targets:
        return targets
    return [DEFAULT_RECIPES] if DEFAULT_RECIPES.is_dir() else []

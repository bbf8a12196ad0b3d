"""Everything a report shows, computed from one results table over one selection of cells.

The EM table, both concurrence matrices with bootstrap intervals and their heatmaps, the
recipes' figures, and the agreement with the published liu2023 table are all computed on
the same selected approaches and benchmarks, so the sections can be read against each
other. Wherever a statistic rests on fewer than `MIN_APPROACHES` approaches (the analysis
layer's threshold), the report says so: a correlation over three approaches can take only
a few values and its interval spans nearly everything. Where the results carry per-question
outcomes, the report also says what the test questions allow: each EM's interval, which
approaches each benchmark can tell apart, each benchmark's reliability and each pair's ceiling,
which cells noise alone could explain, and, for the reference benchmark, which benchmarks
concur with it more than others beyond that noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from concur.analysis.bootstrap import BootstrapSettings, MatrixWithCI, bootstrap_matrix, row_tests
from concur.analysis.concurrence import METHOD_LABELS, MIN_APPROACHES, Method, concurrence_matrix, is_small_n
from concur.analysis.group_means import family_means
from concur.analysis.measurement import cell_em_intervals
from concur.analysis.noise_model import benchmark_noise
from concur.analysis.policy import Policy
from concur.analysis.ranks import RankGroups, rank_groups
from concur.analysis.reliability import (
    ALPHA_EQUAL,
    CONCLUSIVE_CEILING,
    TARGET_CEILING,
    MatrixNoise,
    Remedy,
    assess_matrix,
    remedy,
    verdict_at,
)
from concur.analysis.render import SMALL_N_MARK, small_n_note
from concur.analysis.results import Results
from concur.analysis.view import EMTable, em_table
from concur.errors import ConcurError, UnknownNameError
from concur.plots.heatmap import matrix_heatmap
from concur.plots.style import save_figure
from concur.progress import task_progress
from concur.recipes.batch import State, draw_recipe
from concur.recipes.drawing import MIN_BENCHMARKS
from concur.recipes.spec import Recipe
from concur.registry import Registry
from concur.report.provenance import PUBLISHED, Provenance, collect_provenance, selected_rows
from concur.runner.planning.study import Study
from concur.workspace import Workspace

MATRICES_DIR = "matrices"
FIGURES_DIR = "figures"
IMAGE_SUFFIX = ".png"
TABLE_SUFFIX = ".csv"
SMALL_N_COLUMN = "small_n"  # a recipe CSV's flag: the value rests on fewer than MIN_APPROACHES approaches

Loader = Callable[[list[str]], Results]  # reads a --results request as the command line does


@dataclass(frozen=True)
class ReportOptions:
    """What the user asked for: the same selection options as `concur matrix`."""

    results: tuple[str, ...]
    policy: Policy = Policy.best
    benches: str | None = None
    approaches: str | None = None
    reference: str | None = None  # the reference benchmark the recipes use instead of their own
    bootstrap: BootstrapSettings = BootstrapSettings()


@dataclass(frozen=True)
class MatrixSection:
    """One correlation over every pair of benchmarks, with intervals, and its heatmap files."""

    ci: MatrixWithCI
    heatmap: list[Path]
    noise: MatrixNoise | None = None  # ceilings and inconclusive cells

    @property
    def method(self) -> Method:
        return self.ci.estimate.method

    @property
    def label(self) -> str:
        return METHOD_LABELS[self.method]

    @property
    def image(self) -> Path:
        return next(path for path in self.heatmap if path.suffix == IMAGE_SUFFIX)


@dataclass(frozen=True)
class FigureOutput:
    """A recipe's figure (its PNG images) or tables, the files it wrote, or why it was skipped."""

    recipe: Recipe
    images: list[Path] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # by method, as the recipe shows them
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    small_n: int = 0  # values of its CSV resting on fewer than MIN_APPROACHES approaches


@dataclass(frozen=True)
class AgreementRow:
    """Your EM against the published EM on one benchmark, over the approaches both have."""

    benchmark: str
    n: int
    kendall: float
    pearson: float
    mean_difference: float
    mean_absolute_difference: float


@dataclass(frozen=True)
class Agreement:
    rows: list[AgreementRow]
    differences: pd.DataFrame  # approaches x benchmarks: your EM minus the published EM
    unavailable: str | None = None  # why nothing could be compared


@dataclass(frozen=True)
class NoiseSection:
    """What the test questions allow: EM intervals, rank groups, reliabilities and what would raise them, row tests."""

    em_lower: pd.DataFrame | None  # approaches x benchmarks; None without per-question outcomes
    em_upper: pd.DataFrame | None
    ranks: dict[str, RankGroups]  # by covered benchmark
    remedies: dict[str, Remedy]  # Kendall reliability per covered benchmark and what would bring it to the target
    row_tests: pd.DataFrame | None  # the reference's row (Kendall), with q-values; None without a reference
    reference: str | None
    uncovered: list[str]  # benchmarks without per-question outcomes: intervals over approaches only


@dataclass(frozen=True)
class Report:
    options: ReportOptions
    generated_at: str
    provenance: Provenance
    table: EMTable
    matrices: list[MatrixSection]
    matrices_unavailable: str | None
    figures: list[FigureOutput]
    agreement: Agreement
    warnings: list[str]
    noise: NoiseSection | None = None
    families: pd.DataFrame | None = None  # Kendall τ within and between benchmark families (`group_means.family_means`)


def build_report(
    results: Results,
    options: ReportOptions,
    *,
    load: Loader,
    registry: Registry,
    workspace: Workspace,
    recipes: list[Recipe],
    study: Study | None,
    files_dir: Path,
) -> Report:
    """Compute every section; figures and heatmaps are written under `files_dir`.

    `load` reads a results request the way the command line does, for the published table.
    """
    table = em_table(results, policy=options.policy, benches=options.benches, approaches=options.approaches, registry=registry)
    if table.wide.empty:
        raise ConcurError(f"these results and filters leave no EM cell to report on (results {'+'.join(results.sources)})")
    if options.reference is not None and options.reference not in table.wide.columns:
        raise UnknownNameError("reference benchmark (in the selected results)", options.reference, table.wide.columns)
    matrices, unavailable = _matrices(table, options.bootstrap, files_dir / MATRICES_DIR)
    noise = noise_section(table, matrices, options)
    figures = draw_figures(recipes, results, table, options, registry, files_dir / FIGURES_DIR)
    agreement = agreement_with_published(results, table, load, options.policy, registry)
    report = Report(
        options=options,
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        provenance=collect_provenance(results, table, workspace=workspace, registry=registry, study=study),
        table=table,
        matrices=matrices,
        matrices_unavailable=unavailable,
        figures=figures,
        agreement=agreement,
        warnings=[],
        noise=noise,
        families=_families(table, matrices),
    )
    return replace(report, warnings=small_n_warnings(report) + noise_warnings(report))


def _matrices(table: EMTable, settings: BootstrapSettings, out_dir: Path) -> tuple[list[MatrixSection], str | None]:
    wide = table.wide
    if wide.shape[1] < MIN_BENCHMARKS:
        return [], f"a concurrence matrix needs at least {MIN_BENCHMARKS} benchmarks; the selection has {', '.join(wide.columns)}"
    sections = []
    for method in (Method.kendall, Method.pearson):
        ci = bootstrap_matrix(wide, method, settings, table.measurement)
        noise = assess_matrix(wide, table.measurement, method, ci.estimate.values, ci)
        figure = matrix_heatmap(ci.estimate, table.labels.benchmark_names(wide.columns))
        sections.append(MatrixSection(ci, save_figure(figure, out_dir / str(method)), noise))
    return sections, None


def _families(table: EMTable, matrices: list[MatrixSection]) -> pd.DataFrame | None:
    """Kendall τ within and between the families of the selected benchmarks; None with fewer than two families."""
    kendall = next((section for section in matrices if section.method is Method.kendall), None)
    present = {table.labels.benchmark_family.get(str(bench)) for bench in table.wide.columns} - {None, ""}
    if kendall is None or len(present) < 2:
        return None
    return family_means(kendall.ci, table.labels.benchmark_family)


def noise_section(table: EMTable, matrices: list[MatrixSection], options: ReportOptions) -> NoiseSection:
    """EM intervals, rank groups and reliabilities of the covered benchmarks, and the reference's row tests (Kendall)."""
    measurement, wide, settings = table.measurement, table.wide, options.bootstrap
    covered = [str(bench) for bench in wide.columns if measurement.covers(str(bench))]
    lower = upper = None
    if covered:
        lower, upper = cell_em_intervals(
            measurement, wide, confidence=settings.confidence, n_resamples=settings.n_resamples, seed=settings.seed
        )
    ranks = {bench: rank_groups(measurement.benchmarks[bench]) for bench in covered if len(measurement.benchmarks[bench].approaches) >= 2}
    remedies = {bench: remedy(benchmark_noise(measurement.benchmarks[bench]), Method.kendall) for bench in covered}
    kendall = next((section for section in matrices if section.method is Method.kendall), None)
    tests = row_tests(kendall.ci, options.reference) if kendall is not None and options.reference is not None else None
    uncovered = [str(bench) for bench in wide.columns if str(bench) not in covered]
    return NoiseSection(lower, upper, ranks, remedies, tests, options.reference, uncovered)


def draw_figures(
    recipes: list[Recipe], results: Results, table: EMTable, options: ReportOptions, registry: Registry, out_dir: Path
) -> list[FigureOutput]:
    """Run every recipe on the report's selected cells; a recipe tied to other results is skipped, saying which."""
    selected = Results(selected_rows(results.frame, table), results.sources, ())
    outputs = []
    with task_progress() as progress:
        task = progress.add_task("recipes", total=len(recipes), status="")
        for recipe in recipes:
            progress.update(task, status=recipe.name)
            outputs.append(_draw(recipe, selected, options, registry, out_dir))
            progress.update(task, advance=1)
    return outputs


def _draw(recipe: Recipe, results: Results, options: ReportOptions, registry: Registry, out_dir: Path) -> FigureOutput:
    if recipe.results is not None and tuple(recipe.results) != results.sources:
        reason = f"drawn from its own results ({'+'.join(recipe.results)}), not from these; `concur figures` draws it"
        return FigureOutput(recipe, skipped=reason)
    outcome = draw_recipe(recipe, results, registry, out_dir, reference=options.reference)
    if outcome.state is not State.drawn:  # a failed recipe is listed with its reason, as a skipped one; the report goes on
        reason = outcome.reason if outcome.state is State.skipped else f"failed: {outcome.reason}"
        return FigureOutput(recipe, notes=outcome.notes, skipped=reason)
    tables = dict(outcome.output.tables) if outcome.output else {}
    images = [path for path in outcome.paths if path.suffix == IMAGE_SUFFIX]
    return FigureOutput(recipe, images, tables, list(outcome.paths), list(outcome.notes), None, _small_n(outcome.paths))


def _small_n(paths: list[Path]) -> int:
    """How many values of a recipe's CSVs its own `small_n` column flags."""
    flagged = 0
    for path in paths:
        if path.suffix == TABLE_SUFFIX:
            frame = pd.read_csv(path)
            if SMALL_N_COLUMN in frame.columns:
                flagged += int(frame[SMALL_N_COLUMN].astype(bool).sum())
    return flagged


def agreement_with_published(results: Results, table: EMTable, load: Loader, policy: Policy, registry: Registry) -> Agreement:
    """Per benchmark in both, how your EM compares with the published EM on the approaches in both.

    Cells that come from the published table itself (e.g. `--results liu2023+store`) are
    not compared with themselves.
    """
    mine = selected_rows(results.frame, table)
    mine = mine[mine["source"] != PUBLISHED]
    if mine.empty:
        why = "these results are the published table itself" if PUBLISHED in results.sources else "no cells to compare"
        return Agreement([], pd.DataFrame(dtype=float), f"nothing to compare: {why}")
    ours = em_table(Results(mine, results.sources, ()), policy=policy, benches=None, approaches=None, registry=registry).wide
    published = em_table(load([PUBLISHED]), policy=policy, benches=None, approaches=None, registry=registry).wide
    benches = [bench for bench in ours.columns if bench in published.columns]
    if not benches:
        return Agreement([], pd.DataFrame(dtype=float), f"none of these benchmarks is in the published table ({PUBLISHED})")
    rows, differences = [], {}
    for bench in benches:
        pair = pd.concat({"ours": ours[bench], "published": published[bench]}, axis=1).dropna()
        if pair.empty:
            continue  # no approach in common here: nothing to say about this benchmark
        difference = pair["ours"] - pair["published"]
        kendall, n = concurrence_matrix(pair, Method.kendall).pair("ours", "published")
        pearson, _ = concurrence_matrix(pair, Method.pearson).pair("ours", "published")
        rows.append(AgreementRow(bench, n, kendall, pearson, float(difference.mean()), float(difference.abs().mean())))
        differences[bench] = difference
    if not rows:
        return Agreement([], pd.DataFrame(dtype=float), f"no approach has results both here and in the published table ({PUBLISHED})")
    frame = pd.DataFrame(differences)
    frame = frame.reindex(index=[approach for approach in table.wide.index if approach in frame.index])  # the EM table's order
    return Agreement(rows, frame)


def small_n_warnings(report: Report) -> list[str]:
    """One line per statistic of the report that rests on fewer than `MIN_APPROACHES` approaches."""
    warnings = []
    approaches = len(report.table.wide)
    if is_small_n(approaches):
        warnings.append(
            f"The EM table has {approaches} approach{'es' if approaches != 1 else ''}, fewer than {MIN_APPROACHES}: "
            "every correlation in this report rests on too few approaches to be read with confidence."
        )
    if report.matrices:
        note = small_n_note(report.matrices[0].ci.estimate)  # n is the same for every method (pairwise-complete approaches)
        if note:
            warnings.append(f"Concurrence matrices: {note}.")
    for row in report.agreement.rows:
        if is_small_n(row.n):
            warnings.append(f"Agreement with the published table on {row.benchmark} rests on {row.n} common approaches ({SMALL_N_MARK}).")
    for figure in report.figures:
        if figure.small_n:
            warnings.append(
                f"Recipe {figure.recipe.name}: {figure.small_n} value(s) rest on fewer than {MIN_APPROACHES} approaches ({SMALL_N_MARK})."
            )
    return warnings


def noise_warnings(report: Report) -> list[str]:
    """What noise makes of the report: benchmarks too unreliable to rank, inconclusive cells, intervals over approaches only."""
    noise = report.noise
    if noise is None:
        return []
    warnings = []
    if noise.uncovered:
        shown = ", ".join(noise.uncovered)
        warnings.append(
            f"No per-question outcomes for {shown}: their EMs have no interval, and intervals involving them resample approaches "
            "only, not the test questions behind each EM (published tables and leaderboards carry no per-question data)."
        )
    for bench, fix in noise.remedies.items():
        if not fix.reliability >= CONCLUSIVE_CEILING:
            warnings.append(f"{bench}: {remedy_text(fix)}")
    for section in report.matrices:
        if section.noise is None:
            continue
        labels = list(section.ci.estimate.values.index)
        pairs = [(first, second) for index, first in enumerate(labels) for second in labels[index + 1 :]]
        flagged = [pair for pair in pairs if verdict_at(section.noise.inconclusive, *pair) is True]
        if flagged:
            warnings.append(
                f"{section.label}: {len(flagged)} of {len(pairs)} pairs are inconclusive (‡): noise alone could explain them "
                f"(their interval includes 0, or their ceiling is below {CONCLUSIVE_CEILING})."
            )
    return warnings


def remedy_text(fix: Remedy) -> str:
    """A benchmark's Kendall reliability and what would bring it to the target, as one sentence."""
    text = (
        f"reliability {fix.reliability:.2f} (the Kendall τ two independent test sets of {fix.n_questions} questions would show): "
        "its ranking of the approaches is mostly noise. "
    )
    if fix.equal_p >= ALPHA_EQUAL:
        return text + (
            f"Its approaches' EMs do not differ beyond noise (test of equal accuracy: p = {fix.equal_p:.2f}), so no number of "
            "questions can be promised: a ranking of equals stays noise however many there are; approaches further apart would tell."
        )
    if fix.questions_needed is not None:
        text += f"About {fix.questions_needed:,} test questions would bring it to {TARGET_CEILING}"
    else:
        text += f"More test questions alone would not bring it to {TARGET_CEILING} (the seeds' noise remains)"
    if fix.spread_needed is not None:
        text += f"; at {fix.n_questions} questions, approaches {fix.spread_needed:.1f}x further apart in EM would."
    else:
        text += "."
    return text

"""The README's quick-start block, generated from a real run of the quick start with the current code.

Run: `python -m bench.quickstart_readme --source-dir DATA [--runs-dir runs] [--study analysis/studies/quickstart.toml]`.

1. If any job of the study has no result in the runs dir, runs `concur study run STUDY --device cpu --workers 2
   --source-dir DATA --report RUNS/STEM-report` (what `make demo` runs after installing), timed as one command,
   and records the wall time, the machine and the commit in RUNS/STEM-wall.json. A runs dir whose jobs all ran
   outside this script has no such record: the block needs the wall time, so give a new runs dir.
2. Reads the study's results (`study:STUDY`), computes the EM table, the Kendall matrix with its two-level bootstrap
   intervals, reliabilities and ceilings, and the paper's central pattern: the mean τ over pairs of human-constructed
   benchmarks against the mean over human-bAbI pairs, with percentile intervals from the same resamples, beside the
   same two means in the paper's own results (Liu et al., `liu2023`).
3. Replaces the README's block between its markers; the block's first line carries the study file's SHA-256, which
   `tests/test_quickstart.py` checks, so a changed study file fails the tests until the block is regenerated.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from bench.study_blocks import (
    Markers,
    StudyRun,
    WallRecord,
    add_run_options,
    block_span,
    kendall_matrix,
    replace_block,
    run_study,
    with_interval,
)
from concur.analysis.concurrence import number_at
from concur.analysis.group_means import GroupContrast, group_contrast
from concur.analysis.matrix import BenchmarkMatrix
from concur.registry import Registry

MARKERS = Markers("quickstart-results")
HUMAN_FAMILY = "human"
BABI_PREFIX = "babi-"
PAPER_RESULTS = "liu2023"
SHORT_NAMES = {"squadshifts-": "", "-carved": "", "-synthetic": "", "-uniform": ""}  # column labels of the block's tables


def short(bench: str) -> str:
    for long, replacement in SHORT_NAMES.items():
        bench = bench.replace(long, replacement)
    return bench


def em_table_markdown(matrix: BenchmarkMatrix) -> str:
    wide = matrix.wide
    lines = ["| approach | " + " | ".join(short(str(bench)) for bench in wide.columns) + " |", "|---" * (len(wide.columns) + 1) + "|"]
    for approach, row in wide.iterrows():
        lines.append(f"| {approach} | " + " | ".join("-" if pd.isna(value) else f"{value:.1f}" for value in row) + " |")
    return "\n".join(lines)


def matrix_text(matrix: BenchmarkMatrix) -> str:
    """The Kendall matrix, ‡ marking the cells noise alone could explain, and the reliabilities as a last row."""
    labels = [short(str(bench)) for bench in matrix.wide.columns]
    width = max(9, *(len(label) + 1 for label in labels))
    values = matrix.estimate.values
    inconclusive = matrix.noise.inconclusive if matrix.noise is not None else None
    lines = [" " * width + "".join(f"{label:>{width}}" for label in labels)]
    for row, label in zip(values.index, labels):
        cells = []
        for column in values.columns:
            mark = "‡" if inconclusive is not None and row != column and inconclusive.at[row, column] is True else " "
            cells.append(f"{number_at(values, row, column):>{width - 1}.2f}{mark}")
        lines.append(f"{label:<{width}}" + "".join(cells))
    if matrix.noise is not None and matrix.noise.ceilings is not None:
        reliability = matrix.noise.ceilings.reliability
        lines.append(f"{'reliab.':<{width}}" + "".join(f"{reliability[str(bench)]:>{width - 1}.2f} " for bench in values.columns))
    return "\n".join(lines)


def pattern(matrix: BenchmarkMatrix, registry: Registry, tasks: list[str] | None = None) -> tuple[list[str], list[str], GroupContrast]:
    """The human-constructed and the bAbI benchmarks of the matrix (`tasks` where given), and the human-human against
    human-bAbI contrast."""
    assert matrix.with_ci is not None
    benches = [str(bench) for bench in matrix.wide.columns]
    human = [bench for bench in benches if registry.benchmark(bench).family == HUMAN_FAMILY]
    babi = [bench for bench in benches if bench.startswith(BABI_PREFIX) and (tasks is None or bench in tasks)]
    if len(human) < 2 or not babi:
        raise SystemExit(f"the pattern needs two human-constructed benchmarks and a bAbI task; the study has {', '.join(benches)}")
    return human, babi, group_contrast(matrix.with_ci, (human, human), (human, babi))


def paper_pattern(run: StudyRun, registry: Registry, tasks: list[str]) -> GroupContrast:
    """The same contrast in the paper's own EM table: its human-constructed benchmarks against the same bAbI `tasks`."""
    matrix = kendall_matrix(run, registry, PAPER_RESULTS)
    _, _, contrast = pattern(matrix, registry, tasks)
    return contrast


def block(run: StudyRun, registry: Registry, wall: WallRecord) -> str:
    """The README block: the stamp, the run's wall time and machine, the EM table, the matrix and the pattern."""
    matrix = kendall_matrix(run, registry, f"study:{run.study}")
    human, babi, ours = pattern(matrix, registry)
    paper = paper_pattern(run, registry, babi)
    ceilings = matrix.noise.ceilings if matrix.noise is not None else None
    human_ceilings = [number_at(ceilings.ceiling, a, b) for a, b in ours.higher.pairs] if ceilings is not None else []
    inconclusive = matrix.noise.inconclusive if matrix.noise is not None else None
    cells = [(a, b) for i, a in enumerate(matrix.wide.columns) for b in list(matrix.wide.columns)[i + 1 :]]
    n_inconclusive = sum(1 for a, b in cells if inconclusive is not None and inconclusive.at[a, b] is True)
    approaches = matrix.wide.shape[0]
    lines = [
        MARKERS.first_line(run.study),
        f"Measured at commit {wall.commit or 'unknown'} on a {wall.machine}, CPU only: {wall.duration()} for "
        f"data preparation, {wall.jobs} jobs and the report "
        "(regenerate with `python -m bench.quickstart_readme --source-dir DATA --runs-dir NEW_DIR`).",
        "",
        "EM of each approach on each benchmark's test subset:",
        "",
        em_table_markdown(matrix),
        "",
        f"Kendall τ between benchmarks over the {approaches} approaches (‡: inconclusive, the interval includes 0 or the "
        "noise ceiling is below 0.5; last row: each benchmark's reliability, the τ its own test questions allow):",
        "",
        "```text",
        matrix_text(matrix),
        "```",
        "",
        f"The paper's central pattern in these runs: mean τ over the {len(ours.higher.pairs)} pairs of human-constructed sets "
        f"{with_interval(ours.higher.mean, ours.higher.lower, ours.higher.upper)} against "
        f"{with_interval(ours.lower_group.mean, ours.lower_group.lower, ours.lower_group.upper)} over the "
        f"{len(ours.lower_group.pairs)} human-bAbI pairs, a difference of {with_interval(ours.difference, ours.lower, ours.upper)} "
        f"(95% intervals over test questions and approaches); in the paper's own results (Liu et al., {PAPER_RESULTS}: "
        f"{len(paper.higher.pairs)} human pairs, 20 approaches) {paper.higher.mean:.2f} against {paper.lower_group.mean:.2f}. "
        + (f"Ceilings of the human pairs: {min(human_ceilings):.2f}-{max(human_ceilings):.2f}. " if human_ceilings else "")
        + f"{n_inconclusive} of the {len(cells)} cells are inconclusive.",
        "",
        what_it_shows(ours, human, approaches, n_inconclusive, len(cells)),
        MARKERS.end,
    ]
    return "\n".join(lines)


def what_it_shows(ours: GroupContrast, human: list[str], approaches: int, open_cells: int, cells: int) -> str:
    """The paragraph on what the run shows and what it cannot, worded by what was measured."""
    within = ours.higher
    if within.lower > 0:
        alike = f"the {len(human)} human-constructed sets rank the approaches alike (the mean τ's interval is above 0)"
    else:
        alike = (
            f"the {len(human)} human-constructed sets do not rank the approaches alike beyond the noise "
            f"(the mean τ's interval reaches {within.lower:.2f})"
        )
    if ours.lower > 0:
        contrast = "and more alike than they rank them with bAbI, by more than the noise"
    else:
        contrast = (
            f"and the contrast with the {len(ours.lower_group.pairs)} human-bAbI pairs, {ours.difference:.2f}, is large but its interval "
            f"reaches {ours.lower:.2f}: with {approaches} approaches it is at the edge of the noise"
        )
    return (
        f"What it shows: {alike}, {contrast}. What it cannot: with {approaches} approaches every τ has a wide interval, "
        f"so single cells ({open_cells} of {cells} inconclusive) are weak evidence and group means carry the finding; the "
        "budgets are far below the paper's (seeded subsets of each benchmark, one seed, one setting per approach), so the "
        "EMs show each approach's early learning, not its full strength, and the bAbI columns reflect how fast each "
        "approach learns a task from 300 questions, not where it ends up."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(parser, "analysis/studies/quickstart.toml")
    parser.add_argument("--readme", type=Path, default=Path("README.md"))
    args = parser.parse_args()
    block_span(args.readme, MARKERS)  # before hours of jobs
    run, registry, _, wall = run_study(args)
    replace_block(args.readme, MARKERS, block(run, registry, wall))


if __name__ == "__main__":
    main()

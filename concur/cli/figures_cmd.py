"""`concur figures`: regenerate the paper's figures and tables from recipes in one command."""

from __future__ import annotations

from pathlib import Path

import typer

from concur.analysis.layouts import Layout
from concur.analysis.results import NAMED_SOURCES, Results
from concur.cli.analysis_cmds import LAYOUT_OPTION, load
from concur.cli.common import DEFAULT_RECIPES, SOURCE_DIR_OPTION, err, print_table, settings
from concur.progress import task_progress
from concur.recipes.batch import Outcome, State, draw_recipes
from concur.recipes.spec import recipe_paths


def figures(
    ctx: typer.Context,
    targets: list[Path] = typer.Argument(None, help="Recipe files or directories of recipes (default: ./analysis)."),
    results: list[str] = typer.Option(
        ["store"],
        "--results",
        "-r",
        help=f"Results to draw from: {', '.join(NAMED_SOURCES)} or a CSV (see --layout); repeat or join with + to combine. "
        "A recipe that names its own results (e.g. a leaderboard) uses those.",
    ),
    layout: Layout | None = LAYOUT_OPTION,
    reference: str | None = typer.Option(
        None,
        "--reference",
        help="Benchmark to compare the others with, instead of the recipes' (the paper's squad), e.g. squad-dev-carved for your own runs.",
    ),
    out_dir: Path | None = typer.Option(None, "--out-dir", "-o", help="Where figures and tables go (default: RUNS/figures)."),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """Draw every recipe's figure or table (PDF + PNG; CSV, Markdown and LaTeX for tables).

    A recipe whose data is missing is skipped with the reason and how to get the data; the
    others are still drawn. The exit status is 1 only when a recipe that could run failed.
    """
    state = settings(ctx)
    paths = [path for target in (targets or [DEFAULT_RECIPES]) for path in recipe_paths(target)]
    out_dir = out_dir or state.workspace().root / "figures"

    def load_requests(requests: tuple[str, ...]) -> Results:
        return load(state, list(requests), source_dir, layout)

    with task_progress() as progress:
        task = progress.add_task("recipes", total=len(paths), status="")

        def advance(outcome: Outcome) -> None:
            for note in outcome.notes:
                err.print(f"note ({outcome.name}): {note}", markup=False, highlight=False)
            progress.update(task, advance=1, status=outcome.name)

        outcomes = draw_recipes(paths, results, load_requests, state.registry(), out_dir, reference=reference, on_outcome=advance)
    rows = [[outcome.name, "+".join(outcome.results), outcome.state, " ".join(path.name for path in outcome.paths)] for outcome in outcomes]
    print_table(f"figures and tables in {out_dir}", ["recipe", "results", "state", "files"], rows)
    for outcome in outcomes:
        if outcome.state is not State.drawn:
            print(f"{outcome.name} {outcome.state}: {outcome.reason}")
    counts = {kind: sum(outcome.state is kind for outcome in outcomes) for kind in State}
    err.print(f"{counts[State.drawn]} drawn, {counts[State.skipped]} skipped, {counts[State.failed]} failed", highlight=False)
    if counts[State.failed]:
        raise typer.Exit(1)

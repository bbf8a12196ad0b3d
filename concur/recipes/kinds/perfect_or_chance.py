"""`kind = "perfect-or-chance"`: EM of every approach on tasks that are solved perfectly or hardly at all (bAbI)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from concur.analysis.view import EMTable
from concur.components import FigureKind
from concur.plots.babi import perfect_or_chance, perfect_or_chance_counts
from concur.plots.style import save_figure
from concur.recipes.drawing import Output, need, write_text
from concur.recipes.spec import Recipe


@dataclass(frozen=True)
class PerfectOrChanceOptions:
    perfect: float  # EM at or above which a task counts as solved
    chance: float  # EM at or below which it was not learned

    def problem(self) -> tuple[str, str] | None:
        if not 0.0 <= self.chance < self.perfect <= 100.0:
            return "chance", f"must satisfy 0 <= chance < perfect <= 100 (perfect is {self.perfect})"
        return None


def draw(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    options: PerfectOrChanceOptions = recipe.options
    benches = list(table.wide.columns)
    need(table, benches, minimum=1)
    counts = perfect_or_chance_counts(table.wide, benches, options.perfect, options.chance)
    write_text(stem.with_suffix(".csv"), counts.to_csv(index=False), output)
    figure = perfect_or_chance(
        table.wide,
        benches,
        families=table.approach_families(),
        names=table.labels.approach_names(table.wide.index),
        perfect=options.perfect,
        chance=options.chance,
        title=recipe.title,
    )
    output.paths.extend(save_figure(figure, stem))


KIND = FigureKind(options=PerfectOrChanceOptions, draw=draw)

"""Read a recipe (`analysis/<name>.toml`): one paper figure or table, as data.

Common fields: `kind`, `title`, `description`, `benches`, `approaches`, `policy`, optional
`results` (a recipe tied to one source, e.g. a leaderboard) and a `[bootstrap]` table. The
kind names a figure kind (`concur.components.FigureKind`: a built-in, an installed plugin's,
or `module:attr`), whose options dataclass declares the fields it adds; unknown fields are
errors naming the file and the closest valid field, so a typo never silently changes a figure.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from concur.analysis.bootstrap import BootstrapSettings, Interval
from concur.analysis.policy import Policy
from concur.components import resolve
from concur.errors import SpecError
from concur.registry.options import component, read_options
from concur.registry.tables import Table
from concur.userfiles import load_toml

COMMON_FIELDS = {"kind", "title", "description", "citation", "benches", "approaches", "policy", "results", "bootstrap"}


@dataclass(frozen=True)
class Recipe:
    name: str
    path: Path
    kind: str  # a figure kind's name
    title: str
    options: Any  # the kind's options dataclass, filled from the recipe's own fields
    description: str = ""
    benches: str | None = None
    approaches: str | None = None
    policy: Policy = Policy.best
    results: tuple[str, ...] | None = None
    bootstrap: BootstrapSettings = BootstrapSettings()

    @property
    def anchors(self) -> list[str]:
        """The benchmarks everything is compared with (the reference first), if the kind has them."""
        option = resolve("figure", self.kind).reference
        value = getattr(self.options, option) if option else None
        return [] if value is None else list(value) if isinstance(value, list) else [value]

    @property
    def reference(self) -> str | None:
        """The benchmark everything is compared with (a table's first row), if the kind has one."""
        return next(iter(self.anchors), None)

    def with_reference(self, reference: str) -> Recipe:
        """The same recipe compared with `reference` instead (one's own results rarely hold the paper's SQuAD)."""
        option = resolve("figure", self.kind).reference
        if option is None:
            return self
        value = [reference] if isinstance(getattr(self.options, option), list) else reference
        return replace(self, options=replace(self.options, **{option: value}))


def recipe_paths(target: Path) -> list[Path]:
    """A recipe file, or every `*.toml` of a directory in name order."""
    if target.is_dir():
        paths = sorted(target.glob("*.toml"))
        if not paths:
            raise SpecError(target, None, "holds no recipe (*.toml)")
        return paths
    if not target.is_file():
        raise SpecError(target, None, "no such recipe file or directory")
    return [target]


def load_recipe(path: Path) -> Recipe:
    top = Table(load_toml(path), path)
    kind = component(top, "kind", "figure")
    options_class = resolve("figure", kind).options
    option_fields = {item.name for item in dataclasses.fields(options_class)}
    top.reject_unknown(COMMON_FIELDS | option_fields)
    results = top.get("results", list)
    if results is not None and not all(isinstance(item, str) for item in results):
        raise top.error("results", "must be a list of result source names")
    own = Table({key: value for key, value in top.data.items() if key in option_fields}, path)
    return Recipe(
        name=path.stem,
        path=path,
        kind=kind,
        title=top.get("title", str, required=True),
        options=read_options(options_class, own),
        description=top.get("description", str, ""),
        benches=top.get("benches", str),
        approaches=top.get("approaches", str),
        policy=Policy(top.choice("policy", tuple(Policy), Policy.best.value)),
        results=tuple(results) if results is not None else None,
        bootstrap=_bootstrap(top.table("bootstrap")),
    )


def _bootstrap(table: Table | None) -> BootstrapSettings:
    defaults = BootstrapSettings()
    if table is None:
        return defaults
    table.reject_unknown({"resamples", "seed", "confidence", "interval"})
    confidence = table.get("confidence", float, defaults.confidence)
    if not 0.5 <= confidence < 1.0:
        raise table.error("confidence", f"must be in [0.5, 1), got {confidence}")
    resamples = table.get("resamples", int, defaults.n_resamples)
    if resamples < 10:
        raise table.error("resamples", f"must be at least 10, got {resamples}")
    return BootstrapSettings(
        n_resamples=resamples,
        seed=table.get("seed", int, defaults.seed),
        confidence=confidence,
        interval=Interval(table.choice("interval", tuple(Interval), defaults.interval.value)),
    )

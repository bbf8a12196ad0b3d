"""Read a recipe (`analysis/<name>.toml`): one paper figure or table, as data.

Common fields: `kind`, `title`, `description`, `benches`, `approaches`, `policy`, optional
`results` (a recipe tied to one source, e.g. a leaderboard) and a `[bootstrap]` table.
Each kind adds its own fields (see `KIND_FIELDS`); unknown fields are errors naming the
file and the closest valid field, so a typo never silently changes a figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from concur.analysis.bootstrap import BootstrapSettings, Interval
from concur.analysis.concurrence import Method
from concur.analysis.policy import Policy
from concur.analysis.robustness import SCALINGS
from concur.errors import SpecError
from concur.registry.tables import Table
from concur.userfiles import load_toml

COMMON_FIELDS = {"kind", "title", "description", "citation", "benches", "approaches", "policy", "results", "bootstrap"}
KIND_FIELDS: dict[str, set[str]] = {
    "concurrence-table": {"rows", "methods"},
    "scatter-grid": {"reference", "columns"},
    "heatmap": {"method", "order"},
    "downsampling": {"sizes"},
    "perfect-or-chance": {"perfect", "chance"},
    "approach-count": {"reference", "method", "counts", "draws", "seed"},
    "robustness": {"x", "scalings", "metric"},
}
ORDERS = ("family", "cluster")
METRICS = ("em", "f1")
# The option naming the benchmark a kind compares everything with; `concur figures --reference` replaces it.
REFERENCE_OPTION = {"concurrence-table": "rows", "scatter-grid": "reference", "approach-count": "reference"}


@dataclass(frozen=True)
class Recipe:
    name: str
    path: Path
    kind: str
    title: str
    description: str = ""
    benches: str | None = None
    approaches: str | None = None
    policy: Policy = Policy.best
    results: tuple[str, ...] | None = None
    bootstrap: BootstrapSettings = BootstrapSettings()
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def reference(self) -> str | None:
        """The benchmark everything is compared with (a table's first row), if the kind has one."""
        option = REFERENCE_OPTION.get(self.kind)
        value = self.options.get(option) if option else None
        return value[0] if isinstance(value, list) else value

    def with_reference(self, reference: str) -> Recipe:
        """The same recipe compared with `reference` instead (one's own results rarely hold the paper's SQuAD)."""
        option = REFERENCE_OPTION.get(self.kind)
        if option is None:
            return self
        value = [reference] if option == "rows" else reference
        return replace(self, options={**self.options, option: value})


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
    kind = top.choice("kind", tuple(KIND_FIELDS))
    top.reject_unknown(COMMON_FIELDS | KIND_FIELDS[kind])
    results = top.get("results", list)
    if results is not None and not all(isinstance(item, str) for item in results):
        raise top.error("results", "must be a list of result source names")
    return Recipe(
        name=path.stem,
        path=path,
        kind=kind,
        title=top.get("title", str, required=True),
        description=top.get("description", str, ""),
        benches=top.get("benches", str),
        approaches=top.get("approaches", str),
        policy=Policy(top.choice("policy", tuple(Policy), Policy.best.value)),
        results=tuple(results) if results is not None else None,
        bootstrap=_bootstrap(top.table("bootstrap")),
        options=_options(top, kind),
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


def _options(top: Table, kind: str) -> dict[str, Any]:
    if kind == "concurrence-table":
        methods = top.get("methods", list, [str(method) for method in Method])
        for method in methods:
            if method not in tuple(Method):
                raise top.error("methods", f"{method!r} is not one of {', '.join(Method)}")
        rows = top.get("rows", list, required=True)
        if not rows or not all(isinstance(row, str) and row for row in rows):
            raise top.error("rows", "must be a non-empty list of benchmark ids (the first is the reference)")
        return {"rows": rows, "methods": [Method(method) for method in methods]}
    if kind == "scatter-grid":
        return {"reference": top.get("reference", str, required=True), "columns": _positive(top, "columns", 3)}
    if kind == "heatmap":
        return {"method": Method(top.choice("method", tuple(Method), Method.kendall.value)), "order": top.choice("order", ORDERS, "family")}
    if kind == "downsampling":
        sizes = top.table("sizes", required=True)
        return {"sizes": {bench: _positive(sizes, bench, None) for bench in sizes.data}}
    if kind == "perfect-or-chance":
        perfect, chance = top.get("perfect", float, required=True), top.get("chance", float, required=True)
        if not 0.0 <= chance < perfect <= 100.0:
            raise top.error("chance", f"must satisfy 0 <= chance < perfect <= 100, got chance {chance}, perfect {perfect}")
        return {"perfect": perfect, "chance": chance}
    if kind == "approach-count":
        counts = top.get("counts", list, required=True)
        if not counts or not all(isinstance(count, int) and count >= 3 for count in counts):
            raise top.error("counts", "must be a list of subset sizes, each at least 3")
        return {
            "reference": top.get("reference", str, required=True),
            "method": Method(top.choice("method", tuple(Method), Method.kendall.value)),
            "counts": counts,
            "draws": _positive(top, "draws", None),
            "seed": top.get("seed", int, 0),
        }
    scalings = top.get("scalings", list, list(SCALINGS))
    for scaling in scalings:
        if scaling not in SCALINGS:
            raise top.error("scalings", f"{scaling!r} is not one of {', '.join(SCALINGS)}")
    return {"x": top.get("x", str, required=True), "scalings": scalings, "metric": top.choice("metric", METRICS, "em")}


def _positive(table: Table, key: str, default: int | None) -> int:
    value = table.get(key, int, default, required=default is None)
    if value < 1:
        raise table.error(key, f"must be a positive integer, got {value}")
    return value

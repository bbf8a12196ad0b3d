"""The components specs and recipes name: approach implementations, source readers, benchmark generators, figure kinds.

A spec names a component by a short name (`implementation = "hf-span"`, `reader = "squad"`,
`[generator] name = "fuzzy"`), a recipe its figure kind (`kind = "heatmap"`), or either gives a
`module:attr` path. Short names are the built-ins listed in `components.toml` next to this file,
plus those other installed packages add through entry points (groups `concur.approaches`,
`concur.readers`, `concur.generators`, `concur.figures`), so a new approach or figure needs no
change to concur. Every name resolves to a definition object (`ApproachKind`, `ReaderKind`,
`GeneratorKind`, `FigureKind`) that declares what a file may pass it, so a file is checked when
it is loaded; nothing is imported before a name is resolved, and an approach's model code
(torch) only when a job builds it.
"""

from __future__ import annotations

import functools
import importlib
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from concur.errors import ConcurError, UnknownNameError

BUILTINS = Path(__file__).with_name("components.toml")
ENTRY_POINT_GROUPS = {
    "approach": "concur.approaches",
    "reader": "concur.readers",
    "generator": "concur.generators",
    "figure": "concur.figures",
}


@dataclass(frozen=True)
class ApproachKind:
    """An implementation an approach spec names: its hyperparameters (checked on load) and its class (built per job).

    `hparams` is a dataclass every field of which the spec states; its optional `problem()`
    returns `(field, why)` for a value the implementation cannot take. `approach` is the
    `module:attr` of the class, constructed as `cls(spec, hparams)`; it is imported only when
    a job runs, so listing or validating specs never loads torch. `preload` names the heavy
    modules its jobs import only once running; a grid's warm zygote imports them, with the
    class's module, once for all its workers (`concur.runner.execution.zygote`).
    """

    hparams: type
    approach: str
    batch_field: str = "batch_size"  # the hyperparameter holding examples per optimiser step
    preload: tuple[str, ...] = ()

    def approach_class(self) -> type:
        approach: type = load_target(self.approach, "approach class")
        return approach

    def modules(self) -> tuple[str, ...]:
        """What a job of this implementation imports: its class's module, then `preload`."""
        return (self.approach.partition(":")[0], *self.preload)

    def batch_size(self, hparams: Mapping[str, Any]) -> int:
        """Examples per optimiser step of a job: what a per-device cap divides into accumulation steps."""
        return int(hparams[self.batch_field])


@dataclass(frozen=True)
class ReaderKind:
    """A reader of one upstream format: `read(path, split_name, **options)` -> Split.

    `options` is a dataclass of what a spec may set (`[sources.<name>.options]`), checked when
    the spec is loaded (None: the reader takes none); `read` takes its fields as keyword
    arguments, with the same defaults. An option listed in `companions` names another source of
    the spec and reaches `read` as that source's located path.
    """

    read: Callable[..., Any]
    options: type | None = None
    companions: tuple[str, ...] = ()


@dataclass(frozen=True)
class GeneratorKind:
    """A seeded generator of a synthetic benchmark: `generate(seed=..., **options)` -> (train, test).

    `options` is a dataclass of what a spec may set (`[generator.options]`), checked when the
    spec is loaded; `generate` takes its fields as keyword arguments, with the same defaults. An
    option listed in `inputs` names a source of the spec (a corpus, vectors, a knowledge graph)
    and reaches `generate` as that source's located path.
    """

    generate: Callable[..., Any]
    options: type
    inputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class FigureKind:
    """A kind of figure or table a recipe names (`analysis/*.toml`): the fields its recipes add, and how it is drawn.

    `options` is a dataclass of the fields a recipe of this kind sets beside the common ones
    (`concur.recipes.spec`), checked when the recipe is loaded. `draw(recipe, table, stem, output)`
    draws from the EM table into files named after `stem` and records them in `output`
    (`concur.recipes.drawing`). `reference` names the option holding the benchmark everything is
    compared with, which `concur figures --reference` replaces; a list option's reference is its first item.
    """

    options: type
    draw: Callable[..., None]
    reference: str | None = None


DEFINITIONS: dict[str, type] = {"approach": ApproachKind, "reader": ReaderKind, "generator": GeneratorKind, "figure": FigureKind}


def resolve(kind: str, name: str) -> Any:
    """The definition a spec's `name` of this `kind` means: a built-in, an entry point's, or `module:attr`."""
    if ":" in name:
        target = name
    else:
        known = names(kind)
        if name not in known:
            raise UnknownNameError(_label(kind), name, known)
        target = known[name]
    definition = load_target(target, f"{_label(kind)} {name!r}")
    expected = DEFINITIONS[kind]
    if not isinstance(definition, expected):
        found = type(definition).__name__
        raise ConcurError(f"{_label(kind)} {name!r}: {target} is a {found}, not a concur.components.{expected.__name__}")
    return definition


def names(kind: str) -> dict[str, str]:
    """Every short name of `kind` with its `module:attr` target: the built-ins, then installed plugins'."""
    builtin = _builtins()[kind]
    found = dict(builtin)
    for point in _plugins(kind):
        if point.name in builtin and point.value != builtin[point.name]:
            raise ConcurError(
                f"{_label(kind)} {point.name!r} is both built in ({builtin[point.name]}) and added by an installed package "
                f"({point.value}, entry point group {ENTRY_POINT_GROUPS[kind]!r}); rename the plugin's"
            )
        found.setdefault(point.name, point.value)
    return found


def load_target(target: str, what: str) -> Any:
    """Import `module:attr`; a missing module or attribute is one line naming `what` asked for it."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ConcurError(f"{what}: {target!r} is not a name or 'module:attr'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConcurError(f"{what}: cannot import {module_name!r} ({exc})") from None
    try:
        return functools.reduce(getattr, attribute.split("."), module)
    except AttributeError:
        raise ConcurError(f"{what}: module {module_name!r} has no {attribute!r}") from None


@functools.cache
def _builtins() -> dict[str, dict[str, str]]:
    with BUILTINS.open("rb") as handle:
        table = tomllib.load(handle)
    return {kind: dict(table.get(kind, {})) for kind in ENTRY_POINT_GROUPS}


@functools.cache
def _plugins(kind: str) -> tuple[Any, ...]:
    return tuple(entry_points(group=ENTRY_POINT_GROUPS[kind]))


def _label(kind: str) -> str:
    return {"approach": "implementation", "figure": "figure kind"}.get(kind, kind)

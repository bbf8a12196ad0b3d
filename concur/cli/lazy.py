"""Commands loaded on use, so that `concur --help` and a light command never import what a heavy one needs.

Typer builds a command from its function's signature, and the option types of the analysis
commands (the analysis layer's enums) live in modules that import pandas and scipy. So the
root group holds a stand-in per command: it knows the command's name and its help (the
function's docstring, read from the source without importing it) and builds the real
command only when it is run or its own help is asked for.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    # The click typer runs on: typer vendors a copy of its own, whose classes are not the `click` package's.
    from typer._click import Command, Context


class LazyCommand(TyperCommand):
    """A stand-in for the command of `target` ("package.module:function")."""

    def __init__(self, name: str, target: str) -> None:
        self.target = target
        self._docstring: str | None = None
        super().__init__(name)

    @property
    def help(self) -> str | None:  # what `concur --help` lists, read only when it is shown
        if self._docstring is None:
            self._docstring = _docstring(self.target)
        return self._docstring

    @help.setter
    def help(self, value: str | None) -> None:
        self._docstring = value

    def make_context(self, info_name: str | None, args: list[str], parent: Context | None = None, **extra: Any) -> Context:
        """Build the real command and parse with it: the context (and what runs) is the real command's."""
        return self.load().make_context(info_name, args, parent=parent, **extra)

    def load(self) -> Command:
        single = typer.Typer(add_completion=False)
        single.command(self.name)(_function(self.target))
        return typer.main.get_command(single)


class LazyGroup(TyperGroup):
    """The root group: the commands of `lazy` (name -> target, in the order listed) before the typer-built groups."""

    lazy: ClassVar[Mapping[str, str]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = {**{name: LazyCommand(name, target) for name, target in self.lazy.items()}, **self.commands}


def _function(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _docstring(target: str) -> str | None:
    """The function's docstring as typer shows it, from the module's source (imported only when there is none)."""
    module, _, name = target.partition(":")
    spec = importlib.util.find_spec(module)
    # A module's loader (a SourceFileLoader) has get_source; typeshed's Loader does not declare it.
    source = spec.loader.get_source(module) if spec is not None and spec.loader is not None else None  # type: ignore[attr-defined]
    if source is None:
        return inspect.getdoc(_function(target))
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_docstring(node)
    raise LookupError(f"{target}: no such function")

"""Build a compact knowledge graph (concur.data.kg) from a Wikidata dump or from CoDEx + FB15k-237."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from concur.data.kg import KGBuilder, KnowledgeGraph, materialise, write_kg
from concur.data.kg_codex import CodexFiles, read_codex
from concur.data.kg_dump import read_dump


def build_kg(output: Path, *, dump: Path | None = None, codex: CodexFiles | None = None, language: str = "en") -> dict[str, Any]:
    """Write the compact KG of a dump (streamed) or of the CoDEx files, atomically; returns its header (with counts).

    The spools live next to `output`, where there is room for a file of its size.
    """
    read: Callable[[KGBuilder], object]
    if dump is not None and codex is None:
        source, read = f"wikidata dump: {dump.name} ({language})", partial(read_dump, dump, language=language)
    elif codex is not None and dump is None:
        source, read = codex.describe(), partial(read_codex, codex)
    else:
        raise ValueError("give exactly one of a dump or the CoDEx files")
    output.parent.mkdir(parents=True, exist_ok=True)
    with KGBuilder(source, spool_dir=output.parent) as builder:
        read(builder)
        return write_kg(builder.records(), output)


def codex_graph(files: CodexFiles) -> KnowledgeGraph:
    """The CoDEx graph in memory, filtered exactly as `build_kg` would write it."""
    with KGBuilder(files.describe()) as builder:
        read_codex(files, builder)
        return materialise(builder.records(), files.describe())

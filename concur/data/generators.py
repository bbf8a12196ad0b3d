"""Running the generator a synthetic benchmark's spec names.

A synthetic benchmark has no upstream file to convert: a seeded program writes its train and
test splits. Generators are components (`concur.components`); a spec passes one its seed, its
typed options (`[generator.options]`, checked when the spec is loaded) and input files
(corpora, treebanks, vectors, knowledge graphs), which are ordinary sources of the spec,
located and verified like any other and named by the options listed in the generator's `inputs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from concur.components import GeneratorKind, resolve
from concur.data.model import Split


def run_generator(name: str, seed: int, options: Mapping[str, Any], inputs: Mapping[str, Path]) -> tuple[Split, Split]:
    """Generate both splits, with each input option replaced by its source's located path."""
    definition: GeneratorKind = resolve("generator", name)
    arguments = {key: inputs[value] if key in definition.inputs else value for key, value in options.items()}
    return definition.generate(seed=seed, **arguments)

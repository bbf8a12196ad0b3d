"""Tag benchmarks ahead of a study, once for every with-features reader, into the annotation cache.

The with-features readers annotate every passage and question with spaCy before training.
Doing it once per benchmark (`concur data annotate`) spares each job of a study the work,
and lets jobs run where spaCy or its pipeline is not installed (e.g. GPU nodes of a cluster).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from concur.approaches.reader.encode import analyse
from concur.approaches.reader.linguistic import load_tagger
from concur.data.model import Split
from concur.registry.specs import ApproachSpec


@dataclass(frozen=True)
class FeatureInputs:
    """What decides the annotated texts: the pipeline, and how many question tokens are kept."""

    spacy_pipeline: str
    max_question_tokens: int


@dataclass(frozen=True)
class PretagReport:
    pipeline: str  # the tagger's name and version
    approaches: tuple[str, ...]
    texts: int  # passages and questions annotated
    tagged: int  # of which spaCy tagged now (the rest were already cached)


def feature_inputs(specs: Iterable[ApproachSpec]) -> dict[FeatureInputs, list[str]]:
    """The with-features approaches among `specs`, grouped by the texts they annotate."""
    groups: dict[FeatureInputs, list[str]] = defaultdict(list)
    for spec in specs:
        if spec.model.get("linguistic_features") is True:
            groups[FeatureInputs(spec.model["spacy_pipeline"], spec.hparams["max_question_tokens"])].append(spec.id)
    return dict(groups)


def pretag(splits: Iterable[Split], inputs: FeatureInputs, approaches: list[str], cache_dir: Path) -> PretagReport:
    """Annotate every passage and question of `splits` as the approaches' training and prediction will."""
    tagger = load_tagger(inputs.spacy_pipeline, approaches[0], cache_dir)
    texts = 0
    for split in splits:
        analysed = analyse(split, tagger, inputs.max_question_tokens)
        texts += len(analysed.contexts) + len(analysed.questions)
    return PretagReport(tagger.name, tuple(approaches), texts, tagger.tagged)

"""Part-of-speech, named-entity and lemma annotations from a spaCy pipeline, for text we have already tokenised.

DrQA fed CoreNLP's POS, NER and lemma annotations to its reader as token features; the
DocumentReader, MnemonicReader and FusionNet approaches take the same features from spaCy.
Our tokenizer owns the tokens and their character offsets, so spaCy never tokenises: each
sequence becomes a `Doc` built from our words, and the pipeline's components annotate exactly
those tokens, one annotation per token. spaCy is imported only when a tagger is loaded, so the
approaches that need no features run without it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from concur.errors import ConcurError, ModelUnavailableError
from concur.progress import task_progress

# Components that add nothing to tags, entities or lemmas: not loading them saves time and memory.
_UNNEEDED = ["parser", "senter", "textcat", "textcat_multilabel", "spancat", "entity_linker"]


@dataclass(frozen=True)
class Annotation:
    """The features of one token sequence, one entry per token."""

    pos: tuple[str, ...]  # fine-grained tag (Penn Treebank for English pipelines), else the coarse UD tag
    ner: tuple[str, ...]  # entity type, "" outside entities
    lemma: tuple[str, ...]  # lower-cased lemma, or the lower-cased word where the pipeline gives none


class Tagger:
    """A spaCy pipeline that annotates token sequences without re-tokenising them."""

    def __init__(self, pipeline: str) -> None:
        """Load `pipeline`: an installed package name (`en_core_web_sm`) or a directory saved with `nlp.to_disk`."""
        import spacy

        self._nlp: Any = spacy.load(pipeline, exclude=_UNNEEDED)

    @property
    def name(self) -> str:
        """The pipeline's package name and version (`en_core_web_sm 3.8.0`), recorded with results since features depend on it."""
        meta = self._nlp.meta
        return f"{meta['lang']}_{meta['name']} {meta['version']}"

    def annotate(self, sequences: Sequence[tuple[Sequence[str], Sequence[bool]]], batch_size: int = 256) -> list[Annotation]:
        """Annotate each `(words, spaces)` sequence, `spaces[i]` saying whether whitespace follows word i.

        The spaces rebuild the original text, which context-sensitive components (NER) see.
        """
        from spacy.tokens import Doc

        docs = (Doc(self._nlp.vocab, words=list(words), spaces=list(spaces)) for words, spaces in sequences)
        annotations = []
        with task_progress() as progress:
            task = progress.add_task(f"annotate ({self.name})", total=len(sequences), status="", visible=len(sequences) > batch_size)
            for (words, _), doc in zip(sequences, self._nlp.pipe(docs, batch_size=batch_size)):
                if len(doc) != len(words):
                    raise ConcurError(
                        f"spaCy pipeline {self.name!r} changed the tokenisation ({len(words)} tokens became {len(doc)}); "
                        f"remove its token-merging components ({', '.join(self._nlp.pipe_names)})"
                    )
                annotations.append(
                    Annotation(
                        pos=tuple(token.tag_ or token.pos_ for token in doc),
                        ner=tuple(token.ent_type_ for token in doc),
                        lemma=tuple((token.lemma_ or token.text).lower() for token in doc),
                    )
                )
                progress.advance(task)
        return annotations


def load_tagger(pipeline: str, approach_id: str) -> Tagger:
    """The tagger of approach `approach_id`; raises ModelUnavailableError saying how to get spaCy or the pipeline."""
    without = "or run the approach's '-nofeat' variant, which uses no linguistic features"
    try:
        import spacy  # noqa: F401  (only checked here; Tagger imports it for use)
    except ImportError as error:
        raise ModelUnavailableError(
            f"approach {approach_id!r} takes POS, NER and lemma features from spaCy, which is not installed; "
            f"install it with `pip install 'concur[features]'`, {without}"
        ) from error
    try:
        return Tagger(pipeline)
    except (OSError, ValueError) as error:
        reason = str(error).strip().split("\n")[0] or type(error).__name__
        if "/" in pipeline or os.sep in pipeline or Path(pipeline).exists():
            fix = (
                "give a directory saved with `nlp.to_disk` in the approach spec's [model] spacy_pipeline, or an installed "
                "pipeline package there (`python -m spacy download en_core_web_sm`)"
            )
        else:
            fix = (
                f"install it with `python -m spacy download {pipeline}`, or point the approach spec's [model] spacy_pipeline "
                "at a directory saved with `nlp.to_disk`"
            )
        problem = f"approach {approach_id!r}: the spaCy pipeline {pipeline!r} cannot be loaded ({reason})"
        raise ModelUnavailableError(f"{problem}; {fix}, {without}") from error

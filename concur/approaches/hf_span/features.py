"""Turn passages and questions into model windows, as BERT's SQuAD recipe does.

A passage longer than the model's input is read through overlapping windows: each holds the
special tokens, the question (at most `max_query_length` tokens) and a piece of the context;
a window's start moves forward by `doc_stride` context tokens. Training labels are the token
positions of the question's answer span when the whole span lies inside the window, else the
CLS position. For prediction, each window records the characters every context token covers
and whether the window gives that token its most context (BERT's `_check_is_max_context`),
so each token's answer start is judged once, by its best-placed window.

Every passage and every question is tokenised once, in batches; windows are numpy slices.
The special-token layout is learned from the tokenizer itself, so BERT, RoBERTa, ALBERT and
ELECTRA pairs are all assembled as their own tokenizer would assemble them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from concur.approaches.hf_span.hparams import HFSpanHParams
from concur.data.model import Passage, Question, Span, Split
from concur.errors import ConcurError

NO_SPAN = "no answer span"
NO_TOKEN = "answer span covers no token"
_PROBE = ("question", "context")  # any pair of non-empty texts reveals the layout
# Compact storage (a large benchmark has hundreds of thousands of windows); batches widen to int64.
IDS = np.int32
TYPES = np.int8
OFFSETS = np.int32


@dataclass(frozen=True)
class PairLayout:
    """Where a tokenizer puts special tokens and token types around a (question, context) pair."""

    before: np.ndarray  # special token ids before the question
    between: np.ndarray  # ... between question and context
    after: np.ndarray  # ... after the context
    before_types: np.ndarray
    between_types: np.ndarray
    after_types: np.ndarray
    question_type: int
    context_type: int
    uses_token_types: bool  # whether the model takes `token_type_ids` at all
    cls_position: tuple[str, int] | None  # ("before" | "after", index there) of the CLS token, if any

    @property
    def n_special(self) -> int:
        return len(self.before) + len(self.between) + len(self.after)

    def context_start(self, n_question: int) -> int:
        """Position of the first context token in a window."""
        return len(self.before) + n_question + len(self.between)

    def assemble(self, question: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """`(input_ids, token_type_ids or None)` of one window."""
        ids = np.concatenate([self.before, question, self.between, context, self.after])
        if not self.uses_token_types:
            return ids, None
        types = np.concatenate(
            [
                self.before_types,
                np.full(len(question), self.question_type, dtype=TYPES),
                self.between_types,
                np.full(len(context), self.context_type, dtype=TYPES),
                self.after_types,
            ]
        )
        return ids, types

    def cls_index(self, n_question: int, n_context: int) -> int:
        """Where labels of an answer outside the window point: the CLS token (the first token without one)."""
        if self.cls_position is None:
            return 0
        part, index = self.cls_position
        return index if part == "before" else self.context_start(n_question) + n_context + index


def learn_layout(tokenizer: Any) -> PairLayout:
    """Encode a probe pair once and read where the specials, question and context go."""
    probe = tokenizer(*_PROBE, return_token_type_ids=True)
    ids = np.asarray(probe["input_ids"], dtype=IDS)
    types = np.asarray(probe["token_type_ids"], dtype=TYPES)
    sequence = [-1 if s is None else s for s in probe.sequence_ids(0)]
    runs = _runs(sequence)
    if [value for value, _, _ in runs if value != -1] != [0, 1]:
        raise ConcurError(
            f"tokenizer {type(tokenizer).__name__} lays out a pair as {sequence} (sequence ids, -1 = special); "
            "span extraction needs the question then the context, each in one piece"
        )
    q_start, q_end = next((start, end) for value, start, end in runs if value == 0)
    c_start, c_end = next((start, end) for value, start, end in runs if value == 1)
    return PairLayout(
        before=ids[:q_start],
        between=ids[q_end:c_start],
        after=ids[c_end:],
        before_types=types[:q_start],
        between_types=types[q_end:c_start],
        after_types=types[c_end:],
        question_type=int(types[q_start]),
        context_type=int(types[c_start]),
        uses_token_types="token_type_ids" in tokenizer.model_input_names,
        cls_position=_cls_position(ids, q_start, c_end, tokenizer.cls_token_id),
    )


def _cls_position(ids: np.ndarray, q_start: int, c_end: int, cls_id: int | None) -> tuple[str, int] | None:
    if cls_id is None:
        return None
    if cls_id in ids[:q_start]:
        return "before", int(np.flatnonzero(ids[:q_start] == cls_id)[0])
    if cls_id in ids[c_end:]:
        return "after", int(np.flatnonzero(ids[c_end:] == cls_id)[0])
    return None


def _runs(values: list[int]) -> list[tuple[int, int, int]]:
    """`(value, start, end)` of each run of equal values."""
    runs: list[tuple[int, int, int]] = []
    for position, value in enumerate(values):
        if runs and runs[-1][0] == value:
            runs[-1] = (value, runs[-1][1], position + 1)
        else:
            runs.append((value, position, position + 1))
    return runs


def window_spans(n_tokens: int, window_tokens: int, doc_stride: int) -> list[tuple[int, int]]:
    """`(first context token, length)` of each window over `n_tokens` context tokens (BERT's loop)."""
    if window_tokens < 1 or doc_stride < 1:
        raise ValueError(f"window_tokens and doc_stride must be positive, got {window_tokens} and {doc_stride}")
    spans: list[tuple[int, int]] = []
    start = 0
    while start < n_tokens:
        length = min(window_tokens, n_tokens - start)
        spans.append((start, length))
        if start + length == n_tokens:
            break
        start += min(length, doc_stride)
    return spans


def max_context_owner(spans: list[tuple[int, int]], n_tokens: int) -> np.ndarray:
    """For each context token, the window giving it the most context: max of min(left, right) + 0.01 * length.

    Ties go to the earlier window, as in BERT.
    """
    scores = np.full((len(spans), n_tokens), -np.inf)
    for window, (start, length) in enumerate(spans):
        position = np.arange(length)
        scores[window, start : start + length] = np.minimum(position, length - 1 - position) + 0.01 * length
    return scores.argmax(axis=0)


def token_span(offsets: np.ndarray, span: Span) -> tuple[int, int] | None:
    """Tokens covering an inclusive character span: first token ending after its start, last starting by its end."""
    first_char, last_char = span
    start = int(np.searchsorted(offsets[:, 1], first_char, side="right"))
    end = int(np.searchsorted(offsets[:, 0], last_char, side="right")) - 1
    if start >= len(offsets) or end < start:
        return None
    return start, end


@dataclass
class Windows:
    """Model inputs, one per (question, window of its passage)."""

    input_ids: list[np.ndarray] = field(default_factory=list)
    token_type_ids: list[np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.input_ids)

    def lengths(self) -> np.ndarray:
        return np.fromiter((len(ids) for ids in self.input_ids), dtype=np.int64, count=len(self.input_ids))

    def add(self, ids: np.ndarray, types: np.ndarray | None) -> None:
        self.input_ids.append(ids)
        if types is not None:
            if self.token_type_ids is None:
                self.token_type_ids = []
            self.token_type_ids.append(types)


@dataclass
class TrainFeatures:
    windows: Windows
    start_positions: np.ndarray  # token position of the answer start in each window (CLS when outside)
    end_positions: np.ndarray
    n_questions: int  # questions with a trainable span
    skipped: Counter[str]  # questions without one, by reason


@dataclass
class PredictFeatures:
    windows: Windows
    question_index: np.ndarray  # per window: index into `qids`
    char_offsets: list[np.ndarray]  # per window, (length, 2) character [start, end) of context tokens, -1 elsewhere
    max_context: list[np.ndarray]  # per window, True where the window is the token's max-context window
    qids: list[str]  # every question of the split, in order
    contexts: list[str]  # the passage of each question


@dataclass
class _Tokenized:
    passages: list[tuple[np.ndarray, np.ndarray]]  # per passage: token ids, (n, 2) character offsets
    questions: list[list[np.ndarray]]  # per passage, per question: token ids (truncated)


class _Windower:
    """Cuts a question's passage into windows with the tokenizer's layout and the hparams' geometry."""

    def __init__(self, tokenizer: Any, hparams: HFSpanHParams) -> None:
        self.layout = learn_layout(tokenizer)
        self.hparams = hparams
        room = hparams.max_seq_length - hparams.max_query_length - self.layout.n_special
        if room < 1:
            raise ConcurError(
                f"hparams max_seq_length = {hparams.max_seq_length} leaves no context tokens after max_query_length = "
                f"{hparams.max_query_length} question tokens and {self.layout.n_special} special tokens"
            )

    def spans(self, n_question: int, n_context: int) -> list[tuple[int, int]]:
        room = self.hparams.max_seq_length - n_question - self.layout.n_special
        return window_spans(n_context, room, self.hparams.doc_stride)


def _tokenize(split: Split, tokenizer: Any, hparams: HFSpanHParams) -> _Tokenized:
    """Every passage (with character offsets) and every question (truncated), each in one batch."""
    contexts = _encode(tokenizer, [passage.context for passage in split.passages], return_offsets_mapping=True)
    questions = _encode(
        tokenizer, [question.question for _, question in split.questions()], truncation=True, max_length=hparams.max_query_length
    )
    passages = [
        (np.asarray(ids, dtype=IDS), np.asarray(offsets, dtype=OFFSETS).reshape(-1, 2))
        for ids, offsets in zip(contexts["input_ids"], contexts["offset_mapping"])
    ]
    per_passage: list[list[np.ndarray]] = []
    position = 0
    for passage in split.passages:
        per_passage.append([np.asarray(ids, dtype=IDS) for ids in questions["input_ids"][position : position + len(passage.qas)]])
        position += len(passage.qas)
    return _Tokenized(passages, per_passage)


def _encode(tokenizer: Any, texts: list[str], **options: Any) -> dict[str, list[Any]]:
    """Token ids (and what `options` ask for) of texts without special tokens; transformers rejects an empty batch."""
    if not texts:
        return {"input_ids": [], "offset_mapping": []}
    return tokenizer(texts, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False, **options)


def _tokenized_questions(
    split: Split, tokenizer: Any, hparams: HFSpanHParams
) -> Iterator[tuple[Passage, Question, np.ndarray, np.ndarray, np.ndarray]]:
    """Each question with its token ids, and its passage's token ids and character offsets."""
    tokenized = _tokenize(split, tokenizer, hparams)
    for passage, (context_ids, offsets), question_ids in zip(split.passages, tokenized.passages, tokenized.questions):
        for question, q_ids in zip(passage.qas, question_ids):
            yield passage, question, q_ids, context_ids, offsets


def build_train_features(split: Split, tokenizer: Any, hparams: HFSpanHParams) -> TrainFeatures:
    """Training windows with start/end labels of each question's `first_span` (questions without one are counted)."""
    windower = _Windower(tokenizer, hparams)
    layout = windower.layout
    windows = Windows()
    starts: list[int] = []
    ends: list[int] = []
    skipped: Counter[str] = Counter()
    n_questions = 0
    for _, question, q_ids, context_ids, offsets in _tokenized_questions(split, tokenizer, hparams):
        span = question.first_span
        answer = token_span(offsets, span) if span is not None else None
        if answer is None:
            skipped[NO_SPAN if span is None else NO_TOKEN] += 1
            continue
        n_questions += 1
        shift = layout.context_start(len(q_ids))
        for start, length in windower.spans(len(q_ids), len(context_ids)):
            ids, types = layout.assemble(q_ids, context_ids[start : start + length])
            windows.add(ids, types)
            if start <= answer[0] and answer[1] < start + length:
                starts.append(answer[0] - start + shift)
                ends.append(answer[1] - start + shift)
            else:
                cls = layout.cls_index(len(q_ids), length)
                starts.append(cls)
                ends.append(cls)
    return TrainFeatures(
        windows=windows,
        start_positions=np.asarray(starts, dtype=np.int64),
        end_positions=np.asarray(ends, dtype=np.int64),
        n_questions=n_questions,
        skipped=skipped,
    )


def build_predict_features(split: Split, tokenizer: Any, hparams: HFSpanHParams) -> PredictFeatures:
    """Windows of every question with the character offsets and max-context flags decoding needs."""
    windower = _Windower(tokenizer, hparams)
    layout = windower.layout
    windows = Windows()
    question_index: list[int] = []
    char_offsets: list[np.ndarray] = []
    max_context: list[np.ndarray] = []
    qids: list[str] = []
    contexts: list[str] = []
    for passage, question, q_ids, context_ids, offsets in _tokenized_questions(split, tokenizer, hparams):
        spans = windower.spans(len(q_ids), len(context_ids))
        owner = max_context_owner(spans, len(context_ids)) if spans else np.empty(0, dtype=np.int64)
        shift = layout.context_start(len(q_ids))
        for window, (start, length) in enumerate(spans):
            ids, types = layout.assemble(q_ids, context_ids[start : start + length])
            windows.add(ids, types)
            question_index.append(len(qids))
            window_offsets = np.full((len(ids), 2), -1, dtype=OFFSETS)
            window_offsets[shift : shift + length] = offsets[start : start + length]
            char_offsets.append(window_offsets)
            flags = np.zeros(len(ids), dtype=bool)
            flags[shift : shift + length] = owner[start : start + length] == window
            max_context.append(flags)
        qids.append(question.qid)
        contexts.append(passage.context)
    return PredictFeatures(
        windows=windows,
        question_index=np.asarray(question_index, dtype=np.int64),
        char_offsets=char_offsets,
        max_context=max_context,
        qids=qids,
        contexts=contexts,
    )

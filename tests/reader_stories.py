"""Hand-made bAbI-style questions for the reader model tests: eight one-question passages, and one thread."""

from __future__ import annotations

import pytest
import torch

from concur.data.model import DetectedAnswer, Passage, Question, Split

STORIES = [
    ("Mary went to the kitchen.", "Where is Mary?", "kitchen"),
    ("John moved to the garden. Mary went to the office.", "Where is John?", "garden"),
    (
        "Sandra went to the hallway. Daniel went to the bathroom. Sandra went back to the bedroom.",
        "Where is Sandra now?",
        "bedroom",
    ),
    ("Daniel went to the office.", "Where is Daniel?", "office"),
    ("John went to the bedroom. John moved to the kitchen.", "Where is John?", "kitchen"),
    ("Mary travelled to the garden. Sandra went to the office.", "Where is Sandra?", "office"),
    ("Daniel journeyed to the hallway. Mary moved to the bathroom.", "Where is Daniel?", "hallway"),
    ("Sandra went to the garden.", "Where is Sandra?", "garden"),
]


@pytest.fixture
def one_thread():
    """Tiny models run fastest on one thread (and the machine is shared)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny_split() -> Split:
    passages = []
    for number, (context, question, answer) in enumerate(STORIES):
        first = context.rindex(answer)
        span = (first, first + len(answer) - 1)
        passages.append(Passage(context, [Question(f"q{number}", question, [answer], [DetectedAnswer(answer, (span,))])]))
    return Split(dataset="tiny", split="train", passages=passages)


def fit_losses(
    model: torch.nn.Module, batch, optimizer: torch.optim.Optimizer, max_answer_length: int, steps: int = 40, bf16: bool = False
) -> list[float]:
    """Train `model` on one fixed batch for `steps` optimiser steps; the loss of each step (a model that learns drives it down).

    `bf16` runs each forward pass under CPU bf16 autocast, one context per step as the training loop
    does (autocast keeps its bf16 copies of the weights for as long as its context lasts).
    """
    from concur.approaches.reader.layers import span_loss

    losses = []
    for _ in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = span_loss(model(batch), batch.c_mask, batch.starts, batch.ends, max_answer_length)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


# Passages of one to three sentences whose answer is a place (BiDAF++ and QANet tests).
LAST_SENTENCE_STORIES = [
    ("Mary moved to the bathroom. John went to the hallway.", "Where is Mary?", "bathroom"),
    (
        "Daniel went back to the garden. Sandra travelled to the office. Mary journeyed to the kitchen.",
        "Where in the house is Sandra?",
        "office",
    ),
    ("John moved to the bedroom.", "Where is John?", "bedroom"),
    ("Sandra went to the kitchen. Daniel moved to the hallway. John went back to the garden.", "Where is John?", "garden"),
    ("Mary travelled to the office. Daniel journeyed to the bathroom.", "Where is Daniel?", "bathroom"),
    ("John went to the kitchen. Sandra moved to the bedroom.", "Where is John?", "kitchen"),
    ("Daniel moved to the office. Mary went to the garden. Sandra went to the hallway.", "Where is Mary?", "garden"),
    ("Sandra journeyed to the bathroom.", "Where is Sandra?", "bathroom"),
]


def last_sentence_split() -> Split:
    """LAST_SENTENCE_STORIES as a split, each answer at its first occurrence."""
    passages = []
    for i, (context, question, answer) in enumerate(LAST_SENTENCE_STORIES):
        start = context.index(answer)
        detected = DetectedAnswer(answer, ((start, start + len(answer) - 1),))
        passages.append(Passage(context, [Question(f"q{i}", question, [answer], [detected])]))
    return Split("tiny", "train", passages)


def story_data(max_word_chars: int, max_answer_length: int) -> tuple:
    """`(encoded split, ReaderInputs)` of LAST_SENTENCE_STORIES, with seeded random 10-d word vectors and no tagger."""
    from concur.approaches.reader.batch import n_features
    from concur.approaches.reader.encode import analyse, build_vocabularies, encode
    from concur.approaches.reader.inputs import ReaderInputs

    torch.set_num_threads(1)
    analysed = analyse(last_sentence_split(), None, 0)
    vocabularies = build_vocabularies(analysed)
    encoded = encode(analysed, vocabularies, max_word_chars, max_answer_length)
    generator = torch.Generator().manual_seed(0)
    inputs = ReaderInputs(
        vectors=torch.randn(len(vocabularies.words), 10, generator=generator),
        n_tuned=2,
        n_chars=len(vocabularies.chars),
        n_pos=len(vocabularies.pos),
        n_ner=len(vocabularies.ner),
        n_features=n_features(False),
        linguistic=False,
    )
    return encoded, inputs


def tiny_story_model(model_class: type, hp, linguistic: bool = False) -> tuple:
    """`(model, encoded split)`: a `model_class` reader with hyperparameters `hp` over STORIES, with seeded random 6-d
    word vectors (and tag embeddings when `linguistic`)."""
    from concur.approaches.reader.batch import n_features
    from concur.approaches.reader.encode import analyse, build_vocabularies, encode
    from concur.approaches.reader.inputs import ReaderInputs

    torch.manual_seed(0)
    analysed = analyse(tiny_split(), None, 0)
    vocabularies = build_vocabularies(analysed)
    data = encode(analysed, vocabularies, hp.max_word_chars, hp.max_answer_length)
    vectors = torch.randn(len(vocabularies.words), 6)
    inputs = ReaderInputs(vectors, 2, len(vocabularies.chars), 5, 4, n_features(linguistic), linguistic)
    return model_class(hp, inputs), data


def assert_scores_have_the_batchs_shape(model: torch.nn.Module, encoded) -> None:
    """Start and end scores for every passage position of a three-question batch (no tags), finite, and no span scores."""
    from concur.approaches.reader.batch import collate

    batch = collate(encoded, [0, 1, 2], False)
    logits = model(batch)
    assert logits.start.shape == logits.end.shape == batch.c_mask.shape
    assert logits.spans is None and torch.isfinite(logits.start).all() and torch.isfinite(logits.end).all()


def assert_padding_does_not_change_the_scores(model: torch.nn.Module, encoded, short: int, long: int, rtol: float, atol: float) -> None:
    """Question `short`'s scores alone equal its scores batched after question `long`, whose passage and question
    both pad it."""
    from concur.approaches.reader.batch import collate

    model.eval()
    alone = model(collate(encoded, [short], False))
    padded_batch = collate(encoded, [long, short], False)
    n = int(padded_batch.c_mask[1].sum())
    assert n < padded_batch.c_mask.shape[1] and padded_batch.q_mask[1].sum() < padded_batch.q_mask.shape[1]
    padded = model(padded_batch)
    torch.testing.assert_close(padded.start[1, :n], alone.start[0, :n], rtol=rtol, atol=atol)
    torch.testing.assert_close(padded.end[1, :n], alone.end[0, :n], rtol=rtol, atol=atol)

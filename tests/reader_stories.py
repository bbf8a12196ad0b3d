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

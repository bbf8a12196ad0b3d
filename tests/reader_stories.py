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

"""bAbI to extractive QA: passages, spans in supporting facts, plurals, bad lines."""

import pytest

from concur.data.babi import NOT_IN_SUPPORT, plural_forms, read_babi
from concur.errors import DataFormatError
from tests.conftest import shared_file

TASK15 = """1 Mice are afraid of wolves.
2 Gertrude is a mouse.
3 Cats are afraid of sheep.
4 Winona is a mouse.
5 Sheep are afraid of wolves.
6 Wolves are afraid of cats.
7 Emily is a mouse.
8 Jessica is a wolf.
9 What is gertrude afraid of?\twolf\t2 1
10 What is jessica afraid of?\tcat\t8 6
11 What is emily afraid of?\twolf\t7 1
1 Sheep are afraid of cats.
2 Tom is a sheep.
3 What is tom afraid of?\tcat\t2 1
4 What is tom?\ttiger\t2
"""


def test_task15_plural_spans_and_passages(tmp_path):
    path = tmp_path / "qa15_basic-deduction_train.txt"
    path.write_text(TASK15)
    split = read_babi(path, "train")
    assert split.n_questions == 4
    assert split.dropped == {NOT_IN_SUPPORT: 1}  # "tiger" occurs nowhere
    gertrude, jessica, emily, tom = (passage for passage in split.passages)
    # the label "wolf" is absent from facts 2 and 1, its plural "wolves" is in fact 1
    question = gertrude.qas[0]
    assert question.qid == "qa15_basic-deduction_train:0:9"
    assert question.answers == ["wolves", "wolf"]
    first, last = question.first_span
    assert (first, last) == (19, 24)
    assert gertrude.context[first : last + 1] == "wolves"
    assert gertrude.context.startswith("Mice are afraid of wolves. Gertrude is a mouse.")
    assert gertrude.context.endswith("Jessica is a wolf.")  # the story up to the question only
    # "cat" -> "cats" in fact 6 ("Wolves are afraid of cats."), not "Cats" of fact 3
    first, last = jessica.qas[0].first_span
    assert jessica.context[first : last + 1] == "cats"
    assert first == jessica.context.index("Wolves are afraid of cats.") + len("Wolves are afraid of ")
    # the passage of a later question of the same story is the same story so far
    assert emily.context == gertrude.context
    # a new story starts when numbering restarts
    assert tom.context == "Sheep are afraid of cats. Tom is a sheep."
    assert tom.article == "qa15_basic-deduction_train:1"
    assert tom.qas[0].answers == ["cats", "cat"]


def test_answer_in_first_supporting_fact_that_contains_it(tmp_path):
    path = tmp_path / "qa2_two-supporting-facts_test.txt"
    path.write_text(
        "1 Mary went to the kitchen.\n2 Mary got the football there.\n3 Mary went to the garden.\n4 Where is the football?\tgarden\t2 3\n"
    )
    split = read_babi(path, "test")
    passage = split.passages[0]
    first, last = passage.qas[0].first_span
    assert passage.context[first : last + 1] == "garden"
    assert passage.qas[0].answers == ["garden"]


def test_plural_forms():
    assert plural_forms("cat")[0] == "cats"
    assert plural_forms("wolf")[0] == "wolves"
    assert plural_forms("mouse") == ["mice"]
    assert plural_forms("sheep") == ["sheep"]


def test_bad_babi_line(tmp_path):
    path = tmp_path / "qa1_x_train.txt"
    path.write_text("1 Mary went home.\nMary is here\n")
    with pytest.raises(DataFormatError, match="qa1_x_train.txt, line 2"):
        read_babi(path)


def test_real_task15_conversion_keeps_every_question():
    split = read_babi(shared_file("babi/tasks_1-20_v1-2/en/qa15_basic-deduction_train.txt.gz"), "train")
    assert split.n_questions == 1_000 and not split.dropped
    plural = [q for _, q in split.questions() if q.answers[0] != q.answers[-1]]
    assert len(plural) == 758
    for passage, question in split.questions():
        first, last = question.first_span
        assert passage.context[first : last + 1] == question.answers[0]

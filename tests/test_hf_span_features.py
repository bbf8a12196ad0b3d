"""Windows, labels and max-context flags of the hf-span approach, checked against hand-computed positions.

The passage "0 1 2 ... 39" is 40 tokens of the real bert-base-uncased vocabulary (one token
per number), so every window boundary can be worked out by hand.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import transformers

from concur.approaches.hf_span.features import (
    NO_SPAN,
    build_predict_features,
    build_train_features,
    learn_layout,
    max_context_owner,
    token_span,
    window_spans,
)
from concur.approaches.hf_span.hparams import HFSpanHParams
from concur.data.model import DetectedAnswer, Passage, Question, Split
from concur.errors import ConcurError
from tests.conftest import TINY_HPARAMS

NUMBERS = " ".join(str(i) for i in range(40))
HPARAMS = HFSpanHParams(
    **{
        **TINY_HPARAMS,
        "train_batch_size": 8,
        "max_seq_length": 20,
        "doc_stride": 6,
        "max_query_length": 8,
        "max_answer_length": 30,
        "n_best_size": 20,
        "eval_batch_size": 8,
    }
)
# "where ?" is 2 tokens; [CLS] q [SEP] c [SEP] adds 3, so a window holds 20 - 2 - 3 = 15 context tokens
# and starts 6 context tokens after the previous one.
EXPECTED_WINDOWS = [(0, 14), (6, 20), (12, 26), (18, 32), (24, 38), (30, 39)]
CONTEXT_START = 4  # [CLS] where ? [SEP]


def char_span(text: str, words: str) -> tuple[int, int]:
    first = text.index(f" {words} ") + 1
    return first, first + len(words) - 1


def numbers_split(answer: str | None, question: str = "where?") -> Split:
    detected = [DetectedAnswer(answer, (char_span(NUMBERS, answer),))] if answer else []
    qa = Question("q1", question, [answer or ""], detected)
    return Split("numbers", "train", [Passage(NUMBERS, [qa])])


def window_numbers(tokenizer, ids: np.ndarray) -> list[int]:
    """The context numbers a window holds, read back from its token ids."""
    return [int(token) for token in tokenizer.convert_ids_to_tokens(ids[CONTEXT_START:-1].tolist())]


def test_layout_of_a_bert_pair_is_learned_from_the_tokenizer(tokenizer):
    layout = learn_layout(tokenizer)
    ids, types = layout.assemble(np.array([11, 12]), np.array([21, 22, 23]))
    assert ids.tolist() == [tokenizer.cls_token_id, 11, 12, tokenizer.sep_token_id, 21, 22, 23, tokenizer.sep_token_id]
    assert types.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert layout.n_special == 3
    assert layout.context_start(2) == CONTEXT_START
    assert layout.cls_index(2, 3) == 0


def test_window_spans_follow_berts_doc_stride_loop():
    assert window_spans(40, 15, 6) == [(0, 15), (6, 15), (12, 15), (18, 15), (24, 15), (30, 10)]
    assert window_spans(15, 15, 6) == [(0, 15)]
    assert window_spans(16, 15, 20) == [(0, 15), (15, 1)]  # a stride longer than a window never skips tokens
    assert window_spans(0, 15, 6) == []


def test_max_context_goes_to_the_window_with_most_context_on_both_sides():
    owner = max_context_owner(window_spans(40, 15, 6), 40)
    # token 17: window 1 (6-20) leaves min(11, 3) = 3 tokens, window 2 (12-26) min(5, 9) = 5
    assert owner[17] == 2
    assert owner[0] == 0 and owner[39] == 5
    # token 9: window 0 (0-14) min(9, 5) = 5, window 1 (6-20) min(3, 11) = 3
    assert owner[9] == 0
    # token 10 ties windows 0 and 1 at min(10, 4) = 4 = min(4, 10): the earlier window wins, as in BERT
    assert owner[10] == 0


def test_training_windows_and_labels_computed_by_hand(tokenizer):
    features = build_train_features(numbers_split("17 18"), tokenizer, HPARAMS)
    windows = features.windows
    assert len(windows) == len(EXPECTED_WINDOWS)
    for ids, (first, last) in zip(windows.input_ids, EXPECTED_WINDOWS):
        assert window_numbers(tokenizer, ids) == list(range(first, last + 1))
        assert len(ids) == CONTEXT_START + last - first + 2
    # the answer lies whole in windows 1 (6-20) and 2 (12-26); the others point at [CLS]
    assert features.start_positions.tolist() == [0, CONTEXT_START + 11, CONTEXT_START + 5, 0, 0, 0]
    assert features.end_positions.tolist() == [0, CONTEXT_START + 12, CONTEXT_START + 6, 0, 0, 0]
    for index in (1, 2):
        start, end = features.start_positions[index], features.end_positions[index]
        assert tokenizer.decode(windows.input_ids[index][start : end + 1]) == "17 18"
    assert windows.token_type_ids[0].tolist() == [0] * CONTEXT_START + [1] * 16
    assert features.n_questions == 1 and not features.skipped


def test_answer_cut_by_a_window_boundary_is_labelled_cls(tokenizer):
    features = build_train_features(numbers_split("14 15"), tokenizer, HPARAMS)
    # window 0 ends at 14, so only windows 1 and 2 hold both tokens
    assert features.start_positions.tolist() == [0, CONTEXT_START + 8, CONTEXT_START + 2, 0, 0, 0]


def test_questions_are_truncated_to_max_query_length(tokenizer):
    features = build_train_features(
        numbers_split("17 18", "where is the answer in this passage?"), tokenizer, replace(HPARAMS, max_query_length=2)
    )
    first = features.windows.input_ids[0]
    assert tokenizer.convert_ids_to_tokens(first[:CONTEXT_START].tolist()) == ["[CLS]", "where", "is", "[SEP]"]
    assert len(features.windows) == len(EXPECTED_WINDOWS)


def test_questions_without_a_span_are_counted_not_trained(tokenizer):
    split = numbers_split("17 18")
    split.passages[0].qas.append(Question("q2", "where?", ["nowhere"], []))
    features = build_train_features(split, tokenizer, HPARAMS)
    assert features.n_questions == 1
    assert features.skipped == {NO_SPAN: 1}
    assert len(features.windows) == len(EXPECTED_WINDOWS)


def test_token_span_covers_partial_tokens():
    offsets = np.array([[0, 3], [4, 9], [10, 12]])  # "the river is"
    assert token_span(offsets, (4, 8)) == (1, 1)
    assert token_span(offsets, (6, 11)) == (1, 2)  # starts inside "river", ends inside "is"
    assert token_span(offsets, (3, 3)) is None  # only the space between two tokens


def test_prediction_windows_map_tokens_back_to_characters(tokenizer):
    features = build_predict_features(numbers_split("17 18"), tokenizer, HPARAMS)
    assert features.qids == ["q1"] and features.contexts == [NUMBERS]
    assert features.question_index.tolist() == [0] * len(EXPECTED_WINDOWS)
    owner = max_context_owner(window_spans(40, 15, 6), 40)
    for window, (offsets, flags, (first, last)) in enumerate(zip(features.char_offsets, features.max_context, EXPECTED_WINDOWS)):
        context = offsets[CONTEXT_START:-1]
        assert [NUMBERS[start:end] for start, end in context] == [str(i) for i in range(first, last + 1)]
        assert (offsets[:CONTEXT_START] == -1).all() and (offsets[-1] == -1).all()
        assert flags[CONTEXT_START:-1].tolist() == (owner[first : last + 1] == window).tolist()
        assert not flags[:CONTEXT_START].any()
    # every context token is the max-context token of exactly one window
    assert sum(int(flags.sum()) for flags in features.max_context) == 40


def test_max_seq_length_without_room_for_context_is_an_error(tokenizer):
    with pytest.raises(ConcurError, match="max_seq_length = 10 leaves no context tokens"):
        build_train_features(numbers_split("17 18"), tokenizer, replace(HPARAMS, max_seq_length=10))


def word_level_tokenizer(post_processor, model_input_names: list[str], cls_token: str, sep_token: str):
    """A small word-level fast tokenizer with another model family's special-token layout."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<cls>", "<sep>"]
    vocab = {token: index for index, token in enumerate([*specials, "where", "?", *(str(i) for i in range(40))])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = post_processor
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<unk>",
        pad_token="<pad>",
        cls_token=cls_token,
        sep_token=sep_token,
        model_input_names=model_input_names,
    )


def test_a_roberta_layout_is_learned_without_token_types():
    from tokenizers import processors

    post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    roberta = word_level_tokenizer(post_processor, ["input_ids", "attention_mask"], cls_token="<s>", sep_token="</s>")
    layout = learn_layout(roberta)
    assert (layout.before.tolist(), layout.between.tolist(), layout.after.tolist()) == ([0], [2, 2], [2])
    assert not layout.uses_token_types
    features = build_train_features(numbers_split("17 18"), roberta, HPARAMS)
    # <s> where ? </s></s> ... </s> leaves 20 - 2 - 4 = 14 context tokens: windows 0-13, 6-19, 12-25, 18-31, 24-37, 30-39
    assert len(features.windows) == 6 and features.windows.token_type_ids is None
    assert features.start_positions.tolist() == [0, 5 + 11, 5 + 5, 0, 0, 0]
    assert features.windows.input_ids[1][:6].tolist() == [0, 6, 7, 2, 2, roberta.convert_tokens_to_ids("6")]
    start, end = features.start_positions[1], features.end_positions[1]
    assert roberta.decode(features.windows.input_ids[1][start : end + 1]) == "17 18"


def test_a_layout_with_cls_at_the_end_labels_that_position():
    from tokenizers import processors

    template = processors.TemplateProcessing(
        single="$A <sep> <cls>", pair="$A:0 <sep>:0 $B:1 <sep>:1 <cls>:2", special_tokens=[("<sep>", 5), ("<cls>", 4)]
    )
    xlnet_like = word_level_tokenizer(template, ["input_ids", "token_type_ids", "attention_mask"], cls_token="<cls>", sep_token="<sep>")
    layout = learn_layout(xlnet_like)
    assert layout.cls_position == ("after", 1)
    assert layout.after_types.tolist() == [1, 2]
    features = build_train_features(numbers_split("2 3"), xlnet_like, HPARAMS)
    # 20 - 2 - 3 = 15 context tokens: the answer (tokens 2-3) is outside window 1 (6-20), whose <cls> is its last token
    assert features.start_positions[1] == len(features.windows.input_ids[1]) - 1
    assert features.windows.input_ids[1][-1] == 4


def test_an_empty_passage_gives_its_question_no_window(tokenizer):
    split = Split("empty", "test", [Passage("", [Question("q", "where?", ["nowhere"])])])
    features = build_predict_features(split, tokenizer, HPARAMS)
    assert len(features.windows) == 0
    assert features.qids == ["q"]
    assert build_predict_features(Split("none", "test", []), tokenizer, HPARAMS).qids == []

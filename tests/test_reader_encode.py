"""Vocabularies, encoding a split into arrays, and collating padded batches with their features, against hand-counted values."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from concur.approaches.reader.batch import BatchContents, collate, n_features
from concur.approaches.reader.encode import analyse, build_vocabularies, encode, limit_passages
from concur.approaches.reader.vocab import PAD, UNK, label_vocabulary, word_vocabulary
from concur.data.model import DetectedAnswer, Passage, Question, Split

# --- vocabularies -------------------------------------------------------------------------------


def test_word_vocabulary_puts_question_words_first_by_frequency():
    questions = Counter({"where": 3, "is": 3, "the": 2, "Mary": 1, "John": 1})
    everything = questions + Counter({"the": 5, "kitchen": 2, "went": 2, "Mary": 1, "a": 1, "to": 4})
    vocabulary = word_vocabulary(questions, everything)
    # question words by their question frequency (ties alphabetical, upper case first), then the rest by overall frequency
    assert vocabulary.items == ["<pad>", "<unk>", "is", "where", "the", "John", "Mary", "to", "kitchen", "went", "a"]
    assert vocabulary.index["the"] == 4 and len(vocabulary) == 11
    ids = vocabulary.ids(["the", "zebra", "<pad>", "a", "The"])
    assert ids.dtype == np.int64 and ids.tolist() == [4, UNK, PAD, 10, UNK]
    assert vocabulary.ids([]).tolist() == []


def test_label_vocabulary_and_extend():
    vocabulary = label_vocabulary(Counter("abracadabra"))  # a 5, b 2, r 2, c 1, d 1
    assert vocabulary.items == ["<pad>", "<unk>", "a", "b", "r", "c", "d"]
    assert vocabulary.extend(["x", "a", "y", "x", "<unk>"]) == ["x", "y"]
    assert vocabulary.items[-2:] == ["x", "y"] and vocabulary.ids(["y", "x", "z"]).tolist() == [8, 7, UNK]
    assert vocabulary.extend([]) == []
    assert label_vocabulary(Counter()).items == ["<pad>", "<unk>"]


# --- a hand-made split --------------------------------------------------------------------------

#  M a r y _ w e n t _ t  o  _  t  h  e  _  k  i  t  c  h  e  n  .  _  J  o  h  n  _  w  e  n  t  ...  g  a  r  d  e  n  .
#  0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34      43 44 45 46 47 48 49
KITCHEN = "Mary went to the kitchen. John went to the garden."
#  < P > _ T h e _ o l d  _  r  e  d  _  b  a  r  n  _  s  t  o  o  d ...  </P> at 42..45
BARN = "<P> The old red barn stood near the dog . </P>"


def answer(text: str, first: int, last: int) -> DetectedAnswer:
    return DetectedAnswer(text, ((first, last),))


def make_split(kitchen_span: tuple[int, int] = (17, 23)) -> Split:
    assert KITCHEN[17:24] == "kitchen" and BARN[4:20] == "The old red barn"
    return Split(
        dataset="hand",
        split="train",
        passages=[
            Passage(
                KITCHEN,
                [
                    Question("q1", "Where is Mary?", ["kitchen"], [answer("kitchen", *kitchen_span)]),
                    Question("q2", "Where is John?", ["garden"], []),  # no detected span
                ],
            ),
            Passage(BARN, [Question("q3", "What stood near the dog?", ["The old red barn"], [answer("The old red barn", 4, 19)])]),
        ],
    )


# question words: ? 3, Where 2, is 2, then once each John Mary What dog near stood the;
# the rest: . 3, to 2, went 2, then once each BPB EEPE The barn garden kitchen old red
WORDS = ["<pad>", "<unk>", "?", "Where", "is", "John", "Mary", "What", "dog", "near", "stood", "the"]
WORDS += [".", "to", "went", "BPB", "EEPE", "The", "barn", "garden", "kitchen", "old", "red"]


def test_analyse_tokenises_each_passage_once_and_every_question():
    analysed = analyse(make_split(), None, 0)
    assert len(analysed.contexts) == 2 and len(analysed.questions) == 3
    assert analysed.context_of.tolist() == [0, 0, 1] and analysed.context_of.dtype == np.int64
    assert analysed.qids == ["q1", "q2", "q3"]
    assert analysed.char_spans == [(17, 23), None, (4, 19)]
    kitchen, barn = analysed.contexts
    assert kitchen.text == KITCHEN and kitchen.annotation is None
    assert kitchen.forms == ["Mary", "went", "to", "the", "kitchen", ".", "John", "went", "to", "the", "garden", "."]
    assert list(barn.tokens.words) == ["<P>", "The", "old", "red", "barn", "stood", "near", "the", "dog", ".", "</P>"]
    assert barn.forms == ["BPB", "The", "old", "red", "barn", "stood", "near", "the", "dog", ".", "EEPE"]
    assert analysed.questions[2].forms == ["What", "stood", "near", "the", "dog", "?"]


def test_analyse_cuts_questions_to_max_question_tokens():
    analysed = analyse(make_split(), None, 2)
    assert [question.forms for question in analysed.questions] == [["Where", "is"]] * 2 + [["What", "stood"]]
    assert analysed.questions[2].tokens.offsets.tolist() == [[0, 4], [5, 10]]
    assert len(analysed.contexts[1].forms) == 11  # passages are not cut


def test_build_vocabularies():
    vocabularies = build_vocabularies(analyse(make_split(), None, 0))
    assert vocabularies.words.items == WORDS
    # characters of the normalised forms, weighted by word count: "e" is the most frequent (16 times)
    chars = set("".join(WORDS[2:]))
    assert set(vocabularies.chars.items[2:]) == chars and "<" not in chars
    assert vocabularies.chars.items[2] == "e"
    assert vocabularies.pos.items == vocabularies.ner.items == ["<pad>", "<unk>"]  # no tagger


@pytest.mark.parametrize(
    ("max_answer_length", "starts", "ends", "skipped"),
    [
        (3, [4, -1, -1], [4, -1, -1], {"no answer span in the passage": 1, "answer longer than max_answer_length tokens": 1}),
        (4, [4, -1, 1], [4, -1, 4], {"no answer span in the passage": 1}),
    ],
)
def test_encode_finds_the_answer_tokens_or_says_why_not(max_answer_length, starts, ends, skipped):
    analysed = analyse(make_split(), None, 0)
    encoded = encode(analysed, build_vocabularies(analysed), 6, max_answer_length)
    assert encoded.starts.tolist() == starts and encoded.ends.tolist() == ends
    assert encoded.skipped == Counter(skipped)
    assert encoded.trainable().tolist() == [i for i, start in enumerate(starts) if start >= 0]
    assert encoded.qids == ["q1", "q2", "q3"] and encoded.context_of.tolist() == [0, 0, 1]


def test_an_answer_span_on_whitespace_covers_no_token():
    analysed = analyse(make_split(kitchen_span=(16, 16)), None, 0)  # the space before "kitchen"
    encoded = encode(analysed, build_vocabularies(analysed), 6, 4)
    assert encoded.starts.tolist() == [-1, -1, 1]
    assert encoded.skipped == Counter({"answer span covers no token": 1, "no answer span in the passage": 1})


def test_encode_arrays():
    analysed = analyse(make_split(), None, 0)
    vocabularies = build_vocabularies(analysed)
    encoded = encode(analysed, vocabularies, 4, 4)
    kitchen, barn = encoded.contexts
    index = {word: i for i, word in enumerate(WORDS)}
    assert kitchen.words.tolist() == [index[w] for w in KITCHEN.replace(".", " .").split()]
    assert kitchen.words.tolist() == [6, 14, 13, 11, 20, 12, 5, 14, 13, 11, 19, 12]
    assert barn.words.tolist() == [15, 17, 21, 22, 18, 10, 9, 11, 8, 12, 16]
    assert encoded.questions[0].words.tolist() == [3, 4, 6, 2]
    char = vocabularies.chars.index
    assert kitchen.chars.shape == (12, 4) and kitchen.chars.dtype == np.int64
    assert kitchen.chars[2].tolist() == [char["t"], char["o"], 0, 0]
    assert kitchen.chars[4].tolist() == [char[c] for c in "kitc"]  # cut to max_word_chars
    assert barn.chars[0].tolist() == [char["B"], char["P"], char["B"], 0]  # the normalised tag
    assert kitchen.pos.tolist() == [0] * 12 and barn.ner.tolist() == [0] * 11
    # term frequency of the lower-cased word: went, to, the, "." twice in 12 tokens; "The" and "the" twice in 11
    assert kitchen.tf.dtype == np.float32
    np.testing.assert_allclose(kitchen.tf, np.array([1, 2, 2, 2, 1, 2, 1, 2, 2, 2, 1, 2]) / 12)
    np.testing.assert_allclose(barn.tf, np.array([1, 2, 1, 1, 1, 1, 1, 2, 1, 1, 1]) / 11)
    np.testing.assert_allclose(encoded.questions[1].tf, np.full(4, 1 / 4))


def test_unknown_words_of_another_split_encode_as_unk():
    train = analyse(make_split(), None, 0)
    vocabularies = build_vocabularies(train)
    other = Split("hand", "test", [Passage("Sandra went to the hallway.", [Question("t1", "Where is Sandra?", ["hallway"], [])])])
    encoded = encode(analyse(other, None, 0), vocabularies, 6, 4)
    assert encoded.contexts[0].words.tolist() == [UNK, 14, 13, 11, UNK, 12]
    assert encoded.questions[0].words.tolist() == [3, 4, UNK, 2]
    assert encoded.skipped == Counter({"no answer span in the passage": 1})


def test_limit_passages_drops_answers_that_end_beyond_the_cut():
    analysed = analyse(make_split(), None, 0)
    vocabularies = build_vocabularies(analysed)
    encoded = encode(analysed, vocabularies, 6, 4)
    limit_passages(encoded, 0)  # no cut
    assert encoded.starts.tolist() == [4, -1, 1] and "answer beyond max_passage_tokens" not in encoded.skipped
    limit_passages(encoded, 5)  # both answers end on token 4
    assert encoded.starts.tolist() == [4, -1, 1] and encoded.skipped["answer beyond max_passage_tokens"] == 0
    limit_passages(encoded, 4)
    assert encoded.starts.tolist() == [-1, -1, -1] and encoded.ends.tolist() == [-1, -1, -1]
    assert encoded.skipped == Counter({"no answer span in the passage": 1, "answer beyond max_passage_tokens": 2})
    assert encoded.trainable().tolist() == []


# --- batches ------------------------------------------------------------------------------------


def encoded_split(max_answer_length: int = 4):
    analysed = analyse(make_split(), None, 0)
    return encode(analysed, build_vocabularies(analysed), 6, max_answer_length)


def test_collate_pads_and_masks():
    encoded = encoded_split()
    batch = collate(encoded, [2, 0], linguistic=False)
    assert batch.c_words.shape == (2, 12) and batch.q_words.shape == (2, 6)
    assert batch.c_words[0].tolist() == [15, 17, 21, 22, 18, 10, 9, 11, 8, 12, 16, 0]
    assert batch.c_words[1].tolist() == [6, 14, 13, 11, 20, 12, 5, 14, 13, 11, 19, 12]
    assert batch.q_words.tolist() == [[7, 10, 9, 11, 8, 2], [3, 4, 6, 2, 0, 0]]
    assert batch.c_mask.dtype == torch.bool
    assert batch.c_mask.sum(dim=1).tolist() == [11, 12] and batch.q_mask.sum(dim=1).tolist() == [6, 4]
    assert batch.c_mask.tolist() == (torch.arange(12) < torch.tensor([[11], [12]])).tolist()
    assert batch.c_chars.shape == (2, 12, 6) and batch.q_chars.shape == (2, 6, 6)
    assert batch.c_chars[0, 11].abs().sum() == 0 and batch.q_chars[1, 4:].abs().sum() == 0
    torch.testing.assert_close(batch.c_chars[1], torch.from_numpy(encoded.contexts[0].chars))
    assert batch.c_features.shape == (2, 12, 3) and batch.c_features.dtype == torch.float32
    assert batch.c_features[0, 11].abs().sum() == 0 and batch.q_features[1, 4:].abs().sum() == 0
    assert batch.c_pos.shape == batch.c_ner.shape == (2, 12) and batch.q_pos.shape == (2, 6)
    assert batch.starts.tolist() == [1, 4] and batch.ends.tolist() == [4, 4]
    assert batch.c_words.dtype == batch.starts.dtype == torch.int64
    # the same question alone: the same values without the padding
    alone = collate(encoded, [2], linguistic=False)
    assert alone.c_words.shape == (1, 11)
    torch.testing.assert_close(alone.c_features[0], batch.c_features[0, :11])
    torch.testing.assert_close(alone.q_features[0], batch.q_features[0])


def test_collate_features_of_the_barn_question():
    batch = collate(encoded_split(), [2], linguistic=False)
    # BPB The old red barn stood near the dog . EEPE  vs  What stood near the dog ?
    exact = [0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0]
    lower = [0, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0]  # "The" matches "the" lower-cased
    tf = [1, 2, 1, 1, 1, 1, 1, 2, 1, 1, 1]
    torch.testing.assert_close(batch.c_features[0], torch.tensor([exact, lower, [t / 11 for t in tf]]).T)
    torch.testing.assert_close(batch.q_features[0, :, :2], torch.tensor([[0, 1, 1, 1, 1, 0]] * 2, dtype=torch.float32).T)


def test_collate_cuts_passages_and_matches_against_the_cut():
    encoded = encoded_split()
    batch = collate(encoded, [2, 0], linguistic=False, max_passage_tokens=5)
    assert batch.c_words.shape == (2, 5) and batch.c_mask.all()
    assert batch.c_words.tolist() == [[15, 17, 21, 22, 18], [6, 14, 13, 11, 20]]
    # the cut barn passage "BPB The old red barn" no longer holds stood, near, the or dog
    assert batch.q_features[0, :, 0].tolist() == [0] * 6
    assert batch.q_features[0, :, 1].tolist() == [0, 0, 0, 1, 0, 0]  # "the" matches "The" lower-cased
    # term frequencies stay those of the whole passage
    assert batch.c_features[0, :, 2].tolist() == pytest.approx([1 / 11, 2 / 11, 1 / 11, 1 / 11, 1 / 11])


def test_collate_matches_each_passage_against_its_own_question_only():
    encoded = encoded_split()
    batch = collate(encoded, [0, 2], linguistic=False)
    # row 1's passage "BPB The old red barn stood near the dog . EEPE" shares no word with row 0's question, but
    # "stood", "near", "the" and "dog" are in its own question; row 0's passage has "the" in no question of the batch
    assert batch.c_features[1, :11, 0].tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0]
    for row in (0, 1):
        alone = collate(encoded, [[0, 2][row]], linguistic=False)
        n = alone.c_words.shape[1]
        torch.testing.assert_close(batch.c_features[row, :n], alone.c_features[0])
        torch.testing.assert_close(batch.q_features[row, : alone.q_words.shape[1]], alone.q_features[0])


def test_match_ids_are_dense_over_the_split_and_equal_where_the_strings_are():
    encoded = encoded_split()
    texts = [*encoded.contexts, *encoded.questions]
    ids = np.concatenate([text.match_ids for text in texts])
    forms = [form for text in [*encoded.analysed.contexts, *encoded.analysed.questions] for form in text.forms]
    keys = [(form, form.lower(), form.lower()) for form in forms]  # word, lower case, lemma (lower case without a tagger)
    assert ids.shape == (len(forms), 3)
    assert sorted(set(ids.ravel().tolist())) == list(range(len({key for row in keys for key in row})))
    for column in range(3):
        for i, j in ((0, 1), (1, 5), (3, len(forms) - 1)):
            assert (ids[i, column] == ids[j, column]) == (keys[i][column] == keys[j][column])
    the, The = forms.index("the"), forms.index("The")
    assert ids[The, 0] != ids[the, 0] and ids[The, 1] == ids[the, 1] == ids[the, 0]  # one id per distinct string


def test_collate_builds_only_the_contents_a_reader_reads():
    encoded = encoded_split()
    full = collate(encoded, [2, 0], linguistic=False)
    for chars, features in ((False, False), (True, False), (False, True)):
        batch = collate(encoded, [2, 0], linguistic=False, contents=BatchContents(chars=chars, features=features)).to("cpu")
        assert (batch.c_chars is None, batch.q_chars is None) == (not chars, not chars)
        assert (batch.c_features is None, batch.q_features is None) == (not features, not features)
        for name in ("c_words", "q_words", "c_mask", "q_mask", "c_pos", "q_ner", "starts", "ends"):
            assert torch.equal(getattr(batch, name), getattr(full, name)), name
        if chars:
            assert torch.equal(batch.c_chars, full.c_chars)
        if features:
            assert torch.equal(batch.q_features, full.q_features)


def example(context: str, question: str, first: int, last: int):
    split = Split("hand", "train", [Passage(context, [Question("q", question, [context[first : last + 1]], [answer("", first, last)])])])
    analysed = analyse(split, None, 0)
    return encode(analysed, build_vocabularies(analysed), 8, 4)


@pytest.mark.parametrize("linguistic", [False, True])
def test_exact_match_and_term_frequency_features(linguistic):
    encoded = example("the cat saw the dog", "What did the Cat see?", 16, 18)
    assert encoded.starts.tolist() == [4]
    batch = collate(encoded, [0], linguistic=linguistic)
    assert batch.c_features.shape == (1, 5, n_features(linguistic)) and n_features(linguistic) == (4 if linguistic else 3)
    # columns: exact match, lower-case match[, lemma match (the lower case without a tagger)], term frequency
    context = [[1, 1, 2 / 5], [0, 1, 1 / 5], [0, 0, 1 / 5], [1, 1, 2 / 5], [0, 0, 1 / 5]]
    question = [[0, 0, 1 / 6], [0, 0, 1 / 6], [1, 1, 1 / 6], [0, 1, 1 / 6], [0, 0, 1 / 6], [0, 0, 1 / 6]]
    if linguistic:
        context = [[e, low, low, tf] for e, low, tf in context]
        question = [[e, low, low, tf] for e, low, tf in question]
    torch.testing.assert_close(batch.c_features[0], torch.tensor(context))
    torch.testing.assert_close(batch.q_features[0], torch.tensor(question))


def test_features_with_a_tagger_match_lemmas(tmp_path):
    pytest.importorskip("spacy", reason="spaCy is not installed (pip install 'concur[features]'); the lemma-feature test needs it")
    from concur.approaches.reader.linguistic import load_tagger
    from tests.spacy_pipeline import build_babi_pipeline

    tagger = load_tagger(str(build_babi_pipeline(tmp_path / "babi_rules")), "test")
    context, question = "Mary moved to the office.", "Did Mary move to the office?"
    split = Split("hand", "train", [Passage(context, [Question("q", question, ["office"], [answer("office", 18, 23)])])])
    analysed = analyse(split, tagger, 0)
    vocabularies = build_vocabularies(analysed)
    encoded = encode(analysed, vocabularies, 8, 4)
    batch = collate(encoded, [0], linguistic=True)
    # Mary moved to the office .  vs  Did Mary move to the office ?: "moved" and "move" share the lemma "move"
    expected = [[1, 1, 1], [0, 0, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]]
    torch.testing.assert_close(batch.c_features[0, :, :3], torch.tensor(expected, dtype=torch.float32))
    torch.testing.assert_close(batch.c_features[0, :, 3], torch.full((6,), 1 / 6))
    pos, ner = vocabularies.pos.index, vocabularies.ner.index
    assert batch.c_pos[0].tolist() == [pos[tag] for tag in ("NNP", "VBD", "IN", "DT", "NN", ".")]
    assert batch.c_ner[0].tolist() == [ner[tag] for tag in ("PERSON", "", "", "", "LOC", "")]
    assert batch.q_words.shape == (1, 7) and batch.q_features[0, 2, 2].item() == 1  # "move" matches by lemma

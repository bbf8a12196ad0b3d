"""The pieces behind FuzzySyntheticQA: corpora, the n-gram model, the PCFG and word neighbours."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from concur.data.corpora import lm_samples, wikitext_articles, wikitext_paragraphs
from concur.data.neighbours import OFFLINE_NAME, WordSpace, load_word_space
from concur.data.ngram import BOS, EOS, NgramModel
from concur.data.pcfg import ROOT, Grammar, Tree, read_treebank
from concur.errors import ConcurError, DataFormatError
from tests.conftest import shared_file

WIKITEXT_TEST = "wikitext/wikitext-2/test.txt.gz"

# Three trees: one spread over lines, one with a trace and co-indexed function tags, one without
# the PTB's outer bracket. Hand counts after normalisation (traces and function tags removed):
# ROOT -> S: 3; S -> NP VP .: 2, S -> NP VP: 1; NP -> DT NN: 2, NP -> NN: 1; VP -> VBD: 3;
# DT -> the: 1, DT -> a: 1; NN -> cat: 2, NN -> dog: 1; VBD -> sat: 2, VBD -> ran: 1; . -> .: 2.
TREEBANK = """\
( (S
    (NP-SBJ (DT the) (NN cat))
    (VP (VBD sat))
    (. .)) )
( (S (NP-SBJ-1 (DT a) (NN dog)) (VP (VBD ran) (NP (-NONE- *T*-1))) (. .)) )
(S (NP (NN cat)) (VP (VBD sat)))
"""
WORDS = {"the", "a", "cat", "dog", "sat", "ran", "."}

VECTORS = """\
5 2
north 1 0
south -1 0
east 0 1
west 0 -1
northeast 0.7 0.7
"""


def test_wikitext_reader_keeps_paragraphs_and_groups_articles(tmp_path):
    path = tmp_path / "wiki.txt"
    path.write_text(" \n = First = \n \n Alpha beta . \n \n = = Part = = \n \n Gamma <unk> delta . \n = Second = \n Epsilon . \n")
    assert list(wikitext_paragraphs(path)) == [
        ("First", ["Alpha", "beta", "."]),
        ("First", ["Gamma", "<unk>", "delta", "."]),
        ("Second", ["Epsilon", "."]),
    ]
    articles = wikitext_articles(path)
    assert [(article.name, article.text, article.length) for article in articles] == [
        ("1: First", "Alpha beta . Gamma <unk> delta .", 7),
        ("2: Second", "Epsilon .", 2),
    ]


def test_untitled_text_gives_one_document_per_paragraph(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_text("one two\nthree\n\nfour five six\n")
    assert [(document.name, document.length) for document in wikitext_articles(path)] == [
        ("paragraph 1", 2),
        ("paragraph 2", 1),
        ("paragraph 3", 3),
    ]


def test_real_wikitext2_test_counts():
    """Hand-checked with awk: 62 articles, 2,185 paragraphs, 235,854 paragraph tokens."""
    path = shared_file(WIKITEXT_TEST)
    articles = wikitext_articles(path)
    assert len(articles) == 62
    assert (articles[0].name, articles[-1].name) == ("1: Robert <unk>", "62: The <unk> ( film )")
    assert sum(article.length for article in articles) == 235_854
    assert sum(1 for _ in wikitext_paragraphs(path)) == 2185


def test_lm_samples_read_text_and_name_malformed_lines(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text('{"id": 7, "text": "a b  c\\nd", "length": 4, "ended": true}\n\n{"text": "e"}\n')
    assert [(document.name, document.length) for document in lm_samples(path)] == [("sample 7", 4), ("sample 3", 1)]
    path.write_text('{"id": 0, "text": "fine"}\n{"id": 1, "text": \n')
    with pytest.raises(DataFormatError, match=r"samples.jsonl, line 2 column 19: invalid JSON") as error:
        lm_samples(path)
    assert error.value.line == 2
    path.write_text(json.dumps({"id": 0, "body": "no text"}) + "\n")
    with pytest.raises(DataFormatError, match=r'line 1: a sample must be a JSON object with a string "text"'):
        lm_samples(path)


def test_trigram_probabilities_are_maximum_likelihood_counts():
    model = NgramModel.fit([["a", "b", "a"], ["a", "b", "b"], []], order=3)
    # Padded: <s> <s> a b a </s> and <s> <s> a b b </s>; no trigram crosses the two.
    assert model.probability([], "a") == 1.0
    assert model.probability([BOS, "a"], "b") == 1.0
    assert model.probability(["a", "b"], "a") == 0.5
    assert model.probability(["x", "a", "b"], "b") == 0.5  # only the last two tokens are the context
    assert model.probability(["a", "b"], "b") == 0.5
    assert model.probability(["b", "a"], EOS) == 1.0
    assert model.probability(["a", "b"], "zebra") == 0.0
    with pytest.raises(ConcurError, match="never seen"):
        model.probability(["a", "a"], "b")


def test_bigram_probabilities_are_maximum_likelihood_counts():
    model = NgramModel.fit([["a", "b", "a"], ["a", "b", "b"]], order=2)
    # Bigrams: (<s> a) 2, (a b) 2, (b a) 1, (a </s>) 1, (b b) 1, (b </s>) 1.
    assert model.probability(["a"], "b") == pytest.approx(2 / 3)
    assert model.probability(["a"], EOS) == pytest.approx(1 / 3)
    assert model.probability(["b"], "a") == pytest.approx(1 / 3)
    assert model.probability(["b"], "b") == pytest.approx(1 / 3)
    assert model.probability(["b"], EOS) == pytest.approx(1 / 3)


def test_trigram_samples_are_whole_training_paragraphs_in_a_row():
    model = NgramModel.fit([["a", "b", "a"], ["a", "b", "b"]], order=3)
    tokens = model.sample(random.Random(0), 300)
    assert len(tokens) == 300
    paragraphs = {" ".join(tokens[start : start + 3]) for start in range(0, 300, 3)}
    assert paragraphs == {"a b a", "a b b"}
    assert model.sample(random.Random(0), 300) == tokens


def test_ngram_model_needs_text():
    with pytest.raises(ConcurError, match="at least one non-empty"):
        NgramModel.fit([[], []])


def test_treebank_rule_probabilities(tmp_path):
    path = tmp_path / "tiny.mrg"
    path.write_text(TREEBANK)
    trees = read_treebank(path)
    assert len(trees) == 3 and all(tree.label == ROOT for tree in trees)
    assert trees[1] == Tree(
        ROOT,
        (
            Tree(
                "S",
                (
                    Tree("NP", (Tree("DT", ("a",)), Tree("NN", ("dog",)))),
                    Tree("VP", (Tree("VBD", ("ran",)),)),
                    Tree(".", (".",)),
                ),
            ),
        ),
    )
    grammar = Grammar.fit(trees)
    expected = {
        (ROOT, ("S",)): 1.0,
        ("S", ("NP", "VP", ".")): 2 / 3,
        ("S", ("NP", "VP")): 1 / 3,
        ("NP", ("DT", "NN")): 2 / 3,
        ("NP", ("NN",)): 1 / 3,
        ("VP", ("VBD",)): 1.0,
        ("DT", ("the",)): 0.5,
        ("DT", ("a",)): 0.5,
        ("NN", ("cat",)): 2 / 3,
        ("NN", ("dog",)): 1 / 3,
        ("VBD", ("sat",)): 2 / 3,
        ("VBD", ("ran",)): 1 / 3,
        (".", (".",)): 1.0,
    }
    for (lhs, rhs), probability in expected.items():
        assert grammar.probability(lhs, rhs) == pytest.approx(probability), (lhs, rhs)
    assert sum(grammar.counts.values()) == 3 + 3 + 3 + 3 + 2 + 3 + 3 + 2  # nodes: ROOT S NP VP DT NN VBD .
    assert grammar.probability("NP", ("DT", "NN"), lexical=True) == 0.0
    assert grammar.probability("VP", ("VBD", "NP")) == 0.0


def test_pcfg_samples_come_from_the_grammar(tmp_path):
    path = tmp_path / "tiny.mrg"
    path.write_text(TREEBANK)
    grammar = Grammar.fit(read_treebank(path))
    words = grammar.sample(random.Random(1), 200, max_depth=10)
    assert len(words) == 200 and set(words) <= WORDS
    sentences = " ".join(words).replace(" .", " .|").split("|")
    # Every complete sentence the grammar can make: (the|a) (cat|dog) (sat|ran) . or (cat|dog) (sat|ran) [.]
    for sentence in sentences[:-1]:
        parts = sentence.split()
        assert parts[-1] == "." and all(part in WORDS for part in parts)
    assert grammar.sample(random.Random(1), 200, max_depth=10) == words


def test_pcfg_depth_limit_rejects_and_then_gives_up(tmp_path):
    path = tmp_path / "tiny.mrg"
    path.write_text(TREEBANK)
    grammar = Grammar.fit(read_treebank(path))
    # ROOT (0) -> S (1) -> NP (2): every sentence is deeper than 1.
    with pytest.raises(ConcurError, match="deeper than max_depth = 1"):
        grammar.sample(random.Random(0), 10, max_depth=1)
    assert len(grammar.sample(random.Random(0), 10, max_depth=3)) == 10  # preterminals sit at depth 3


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("( (S (NP (DT the) (NN cat))\n   (VP (VBD sat))\n", 1, "never closed"),
        ("(S (NP (NN cat)) (VP (VBD sat)))\n(NN dog))\n", 2, "closes no open bracket"),
        ("(S (NP (NN cat))\n (VP sat (VBD sat)))\n", 2, "mixes words and subtrees"),
        ("(S (NP (NN cat)) (VP))\n", 1, r"node \(VP\) has no children"),
        ("stray (S (NN cat))\n", 1, "outside any bracket"),
        ("\n( (-NONE- *T*) )\n", 2, "no words once empty elements are removed"),
    ],
)
def test_malformed_treebank_names_file_and_line(tmp_path, text, line, problem):
    path = tmp_path / "bad.mrg"
    path.write_text(text)
    with pytest.raises(DataFormatError, match=problem) as error:
        read_treebank(path)
    assert error.value.line == line and error.value.path == path and f"bad.mrg, line {line}:" in str(error.value)


def test_empty_treebank_is_an_error(tmp_path):
    path = tmp_path / "empty.mrg"
    path.write_text("\n")
    with pytest.raises(DataFormatError, match="holds no trees"):
        read_treebank(path)


def test_neighbours_are_exact_nearest_by_cosine_ties_by_row(tmp_path):
    path = tmp_path / "tiny.vec"
    path.write_text(VECTORS)
    space = load_word_space(path)
    assert space.name == "file:tiny.vec" and space.words == ["north", "south", "east", "west", "northeast"]
    assert (space.row("north"), space.row("North"), space.row("NORTHWEST")) == (0, 0, None)
    table = space.neighbours([4, 0, 0], 3)
    assert table == {0: ["northeast", "east", "west"], 4: ["north", "east", "south"]}
    assert space.neighbours([0], 100)[0] == ["northeast", "east", "west", "south"]  # at most every other word
    limited = load_word_space(path, max_vectors=2)
    assert limited.words == ["north", "south"] and limited.neighbours([0], 5) == {0: ["south"]}


def test_word_space_rejects_fasttext_binaries(tmp_path):
    path = tmp_path / "cc.en.300.bin"
    path.write_bytes(b"\x00\x01")
    with pytest.raises(ConcurError, match="give the .vec text file"):
        load_word_space(path)


def test_offline_word_space_is_minilm_whole_words():
    space = load_word_space(None)
    assert space.name == OFFLINE_NAME
    assert len(space.words) == 23_695  # bert-base-uncased: 30,522 pieces less `##` pieces and [..] specials
    assert not any(word.startswith("##") or (word.startswith("[") and word.endswith("]") and len(word) > 2) for word in space.words)
    king = space.row("King")
    assert space.words[king] == "king"
    nearest = space.neighbours([king], 100)[king]
    assert len(nearest) == 100 and "king" not in nearest and {"queen", "monarch", "prince"} <= set(nearest[:10])


def test_word_space_from_vectors_normalises():
    space = WordSpace.from_vectors("test", ["a", "b"], np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert space.unit[0].tolist() == pytest.approx([0.6, 0.8]) and space.unit[1].tolist() == [0.0, 0.0]


def test_concatenated_treebank_files_read_as_one(tmp_path):
    path = tmp_path / "wsj.mrg"
    path.write_text(TREEBANK * 2)
    assert len(read_treebank(path)) == 6

"""The readers' tokenizer: tokens, character offsets, tag normalisation and answer alignment, against hand-counted values."""

from __future__ import annotations

import numpy as np
import pytest

from concur.data.tokenize import Tokens, token_span, tokenize, vocabulary_form

# character positions, counted by hand:
#  I _ d o n ' t _ o w e  _  $  1  ,  0  0  0  _  (  o  r  _  3  .  5  %  )  .
#  0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28
PUNCTUATED = "I don't owe $1,000 (or 3.5%)."
PUNCTUATED_TOKENS = [
    ("I", 0, 1),
    ("don't", 2, 7),
    ("owe", 8, 11),
    ("$", 12, 13),
    ("1,000", 13, 18),
    ("(", 19, 20),
    ("or", 20, 22),
    ("3.5", 23, 26),
    ("%", 26, 27),
    (")", 27, 28),
    (".", 28, 29),
]

#  Z o ë ' s _ w e l l -  k  n  o  w  n  _  c  a  f  é  —  n  a  ï  v  e  ,  _  東 京 !
#  0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
UNICODE = "Zo\u00eb's well-known caf\u00e9\u2014na\u00efve, \u6771\u4eac!"
UNICODE_TOKENS = [
    ("Zo\u00eb's", 0, 5),
    ("well-known", 6, 16),
    ("caf\u00e9", 17, 21),
    ("\u2014", 21, 22),
    ("na\u00efve", 22, 27),
    (",", 27, 28),
    ("\u6771\u4eac", 29, 31),
    ("!", 31, 32),
]

#  < P > _ T a b l e s  _  <  T  d  >  P  a  r  i  s  <  /  T  d  >  _  <  /  P  >
#  0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29
HTML = "<P> Tables <Td>Paris</Td> </P>"
HTML_TOKENS = [("<P>", 0, 3), ("Tables", 4, 10), ("<Td>", 11, 15), ("Paris", 15, 20), ("</Td>", 20, 25), ("</P>", 26, 30)]


def as_triples(tokens: Tokens) -> list[tuple[str, int, int]]:
    return [(word, int(start), int(end)) for word, (start, end) in zip(tokens.words, tokens.offsets)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [(PUNCTUATED, PUNCTUATED_TOKENS), (UNICODE, UNICODE_TOKENS), (HTML, HTML_TOKENS)],
    ids=["punctuation-numbers-apostrophe", "unicode-hyphen", "html-tags"],
)
def test_tokens_and_offsets(text, expected):
    tokens = tokenize(text)
    assert as_triples(tokens) == expected
    assert len(tokens) == len(expected)
    assert tokens.offsets.dtype == np.int64 and tokens.offsets.shape == (len(expected), 2)
    assert all(text[start:end] == word for word, start, end in as_triples(tokens))


def test_unicode_fixture_is_precomposed():
    # the offsets above count "ë", "é", "ï" as one character each
    assert len(UNICODE) == 32


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("it\u2019s", ["it\u2019s"]),  # typographic apostrophe kept inside the word
        ("the U.S. army", ["the", "U.S", ".", "army"]),  # inner periods kept; a final period is its own token
        ("state-of-the-art 2-3", ["state-of-the-art", "2-3"]),
        ("a - b", ["a", "-", "b"]),  # a free-standing hyphen is punctuation
        ("-5 and 5-", ["-", "5", "and", "5", "-"]),
        ("x_y", ["x_y"]),  # \w includes the underscore
        ("a < b > c", ["a", "<", "b", ">", "c"]),  # not tags: a tag name follows "<" directly
        ("<br/>", ["<", "br", "/", ">"]),  # self-closing tags are not MRQA's
        ("<H1>x</H1>", ["<H1>", "x", "</H1>"]),
        ("", []),
        (" \n\t ", []),
    ],
)
def test_token_boundaries(text, words):
    tokens = tokenize(text)
    assert list(tokens.words) == words
    assert tokens.offsets.shape == (len(words), 2)
    assert all(text[start:end] == word for word, (start, end) in zip(tokens.words, tokens.offsets))


def test_offsets_point_into_the_text_for_every_token_of_a_mixed_text():
    text = f"{PUNCTUATED}\n\n{UNICODE}  {HTML}\tdon't   stop"
    tokens = tokenize(text)
    assert len(tokens) == len(PUNCTUATED_TOKENS) + len(UNICODE_TOKENS) + len(HTML_TOKENS) + 2
    assert all(text[start:end] == word for word, (start, end) in zip(tokens.words, tokens.offsets))
    assert np.all(tokens.offsets[1:, 0] >= tokens.offsets[:-1, 1])  # in order, never overlapping


def test_spaces_say_whether_whitespace_follows_each_token():
    spaces = tokenize(PUNCTUATED).spaces(PUNCTUATED)
    #        I     don't owe   $      1,000 (      or    3.5    %      )      .
    assert spaces == [True, True, True, False, True, False, True, False, False, False, False]
    text = "a\tb\nc  "
    assert tokenize(text).spaces(text) == [True, True, True]
    assert tokenize("").spaces("") == []


@pytest.mark.parametrize(
    ("word", "form"),
    [
        ("<P>", "BPB"),
        ("</P>", "EEPE"),
        ("<Td>", "BTDB"),
        ("</Td>", "EETDE"),
        ("<Table>", "BTABLEB"),
        ("<H1>", "BH1B"),
        ("Paris", "Paris"),
        ("<", "<"),
        ("don't", "don't"),
    ],
)
def test_vocabulary_form(word, form):
    assert vocabulary_form(word) == form


def test_tokens_of_tagged_text_normalise_to_the_papers_forms():
    assert [vocabulary_form(word) for word in tokenize(HTML).words] == ["BPB", "Tables", "BTDB", "Paris", "EETDE", "EEPE"]


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        (13, 17, (4, 4)),  # exactly "1,000"
        (14, 15, (4, 4)),  # ",0", inside "1,000"
        (3, 4, (1, 1)),  # "on", inside "don't"
        (8, 17, (2, 4)),  # "owe $1,000": three tokens
        (5, 9, (1, 2)),  # "'t ow": from inside "don't" to inside "owe"
        (7, 11, (2, 2)),  # " owe ": surrounding spaces cover no token
        (0, 28, (0, 10)),  # the whole text
        (28, 28, (10, 10)),  # the last character
        (1, 1, None),  # a space
        (18, 18, None),  # the space before "("
    ],
)
def test_token_span(first, last, expected):
    assert token_span(tokenize(PUNCTUATED).offsets, first, last) == expected


def test_token_span_of_no_tokens_is_none():
    assert token_span(tokenize("").offsets, 0, 0) is None
    assert token_span(tokenize("   ").offsets, 0, 2) is None


def test_token_span_returns_python_ints():
    start, end = token_span(tokenize(PUNCTUATED).offsets, 8, 17)
    assert type(start) is int and type(end) is int

"""FuzzySyntheticQA: question corruption, the five passage generators, sizes, spans, seeds, specs."""

from __future__ import annotations

import dataclasses
import inspect
import json
import random
from collections import Counter

import numpy as np
import pytest

from concur.components import resolve
from concur.data.corpora import wikitext_paragraphs
from concur.data.fuzzy import Corruption, FuzzyOptions, answerable, corrupt, generate_fuzzy
from concur.data.generators import run_generator
from concur.data.model import Split
from concur.data.mrqa import write_mrqa
from concur.data.neighbours import WordSpace, load_word_space
from concur.data.prepare import prepare
from concur.data.sources import SourceLocator
from concur.errors import ConcurError, DataFormatError
from concur.registry import default_registry
from tests.conftest import SHARED_DATA, shared_file, user_benchmark
from tests.test_fuzzy_models import TREEBANK, VECTORS, WIKITEXT_TEST

FUZZY_BENCHMARKS = ("fuzzy-uniform", "fuzzy-3gram", "fuzzy-pcfg", "fuzzy-gpt2", "fuzzy-wikipedia")
NO_NOISE = Corruption(replace_probability=0.0, permutation_window=0, dropout_rate=0.0)


@pytest.fixture
def compass(tmp_path) -> WordSpace:
    path = tmp_path / "tiny.vec"
    path.write_text(VECTORS)
    return load_word_space(path)


@pytest.fixture
def common_vectors(tmp_path):
    """A small .vec file over frequent English words, so generation tests replace some tokens quickly."""
    words = "the , . of and in to a was The on as for with by is that from his at were an 's it he".split()
    rng = np.random.default_rng(0)
    path = tmp_path / "common.vec"
    path.write_text(f"{len(words)} 4\n" + "".join(f"{word} {' '.join(f'{value:.4f}' for value in rng.normal(size=4))}\n" for word in words))
    return path


def check_split(split: Split, dataset: str, name: str, passages: int, per_passage: int, length: int, mask: str = "XXXXX") -> None:
    """The contract every generated split keeps: sizes, token counts, exact spans, one mask per question."""
    assert (split.dataset, split.split, split.n_passages, split.n_questions) == (dataset, name, passages, passages * per_passage)
    for number, passage in enumerate(split.passages):
        tokens = passage.context.split(" ")
        assert len(tokens) == length and all(tokens)
        assert [question.qid for question in passage.qas] == [f"{dataset}-{name}-{number:06d}-{index}" for index in range(per_passage)]
        spans = set()
        for question in passage.qas:
            (detected,) = question.detected_answers
            ((first, last),) = detected.char_spans
            assert passage.context[first : last + 1] == detected.text == question.answers[0]
            assert answerable(detected.text) and (first == 0 or passage.context[first - 1] == " ")
            assert last + 1 == len(passage.context) or passage.context[last + 1] == " "
            spans.add(first)
            words = question.question.split(" ")
            assert words.count(mask) == 1 and 1 <= len(words) <= 10
        assert len(spans) == per_passage  # distinct answer positions


def test_no_noise_gives_the_masked_context(compass):
    rng = random.Random(0)
    assert corrupt(["north", "by", "east"], 1, NO_NOISE, compass, rng) == ["north", "XXXXX", "east"]


def test_dropout_one_keeps_only_the_mask(compass):
    corruption = Corruption(replace_probability=0.0, permutation_window=3, dropout_rate=1.0, mask="[M]")
    for seed in range(20):
        assert corrupt(["a", "b", "XXXXX", "c", "d"], 2, corruption, compass, random.Random(seed)) == ["[M]"]


def test_replace_probability_one_replaces_every_known_token_by_a_near_neighbour(compass):
    corruption = Corruption(replace_probability=1.0, neighbours=2, permutation_window=0, dropout_rate=0.0)
    context = ["north", "South", "east", "up", "northeast"]
    for seed in range(20):
        slots = corrupt(context, 2, corruption, compass, random.Random(seed))
        assert slots[2] == "XXXXX" and slots[3] == "up"  # the mask, and a word the space does not have
        replaced = [slots[index] for index in (0, 1, 4)]
        assert all(isinstance(slot, tuple) and slot[1] in (0, 1) for slot in replaced)
        assert [slot[0] for slot in replaced] == [compass.row(word) for word in ("north", "South", "northeast")]
    table = compass.neighbours([0, 1, 4], 2)
    assert table == {0: ["northeast", "east"], 1: ["east", "west"], 4: ["north", "east"]}


def test_local_permutation_stays_within_the_window(compass):
    context = [f"w{index}" for index in range(10)]
    moved = 0
    for seed in range(300):
        for window in (0, 1, 3):
            corruption = Corruption(replace_probability=0.0, permutation_window=window, dropout_rate=0.0)
            slots = corrupt(context, 4, corruption, compass, random.Random(seed))
            positions = [int(str(slot)[1:]) if slot != "XXXXX" else 4 for slot in slots]
            assert sorted(positions) == list(range(10))
            assert all(abs(position - index) <= window for index, position in enumerate(positions))
            moved += window == 3 and positions != list(range(10))
    assert moved > 250  # window 3 nearly always moves something; window 0 never does (checked above)


def test_dropout_rate_is_the_fraction_of_tokens_dropped(compass):
    corruption = Corruption(replace_probability=0.0, permutation_window=0, dropout_rate=0.2)
    rng = random.Random(0)
    kept = sum(len(corrupt([f"w{index}" for index in range(10)], 0, corruption, compass, rng)) - 1 for _ in range(3000))
    assert 1 - kept / (3000 * 9) == pytest.approx(0.2, abs=0.01)


def test_answerable_tokens():
    assert [answerable(token) for token in ("cat", "1990", "@-@", ",", "<unk>", "'s", "—")] == [
        True,
        True,
        False,
        False,
        False,
        True,
        False,
    ]


def _inputs(tmp_path, generator: str) -> dict:
    if generator == "pcfg":
        path = tmp_path / "tiny.mrg"
        path.write_text(TREEBANK)
        return {"treebank": path}
    if generator == "gpt2":
        rng = random.Random(5)
        path = tmp_path / "samples.jsonl"
        lines = []
        for number in range(80):
            words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "the", "of", ".", ","]) for _ in range(rng.randrange(100, 400)))
            lines.append(json.dumps({"id": number, "ended": True, "length": 0, "text": words.replace(" . ", ".\n")}))
        path.write_text("\n".join(lines) + "\n")
        return {"samples": path}
    return {"corpus": shared_file(WIKITEXT_TEST)}


@pytest.mark.parametrize("generator", ["uniform", "3gram", "pcfg", "gpt2", "wikipedia"])
def test_each_generator_keeps_the_contract(tmp_path, common_vectors, generator):
    train, test = generate_fuzzy(
        seed=1,
        passage_generator=generator,
        vectors=common_vectors,
        train_passages=24,
        test_passages=12,
        passage_tokens=60,
        questions_per_passage=4,
        **_inputs(tmp_path, generator),
    )
    check_split(train, f"fuzzy-{generator}", "train", 24, 4, 60)
    check_split(test, f"fuzzy-{generator}", "test", 12, 4, 60)
    assert len({question.qid for _, question in [*train.questions(), *test.questions()]}) == 144
    if generator in ("gpt2", "wikipedia"):
        train_documents = {passage.article for passage in train.passages}
        assert train_documents and not train_documents & {passage.article for passage in test.passages}
    else:
        assert {passage.article for passage in train.passages} == {None}


def test_pcfg_passages_are_the_treebanks_words(tmp_path, common_vectors):
    train, _ = generate_fuzzy(
        seed=0, passage_generator="pcfg", vectors=common_vectors, train_passages=5, test_passages=5, **_inputs(tmp_path, "pcfg")
    )
    assert {token for passage in train.passages for token in passage.context.split()} <= {"the", "a", "cat", "dog", "sat", "ran", "."}


def test_uniform_vocabulary_is_the_corpus_types(common_vectors):
    corpus = shared_file(WIKITEXT_TEST)
    train, _ = generate_fuzzy(
        seed=0, passage_generator="uniform", corpus=corpus, vectors=common_vectors, train_passages=200, test_passages=1
    )
    tokens = [token for passage in train.passages for token in passage.context.split()]
    types = {token for _, paragraph in wikitext_paragraphs(corpus) for token in paragraph}
    assert set(tokens) <= types - {"<unk>"} and len(set(tokens)) > 10_000  # 30,000 draws from 14,028 types


@pytest.mark.slow
def test_full_size_offline_benchmark():
    """The paper's sizes with the offline defaults (real WikiText-2 text, MiniLM neighbours)."""
    train, test = generate_fuzzy(seed=0, passage_generator="wikipedia", corpus=shared_file(WIKITEXT_TEST))
    check_split(train, "fuzzy-wikipedia", "train", 2000, 5, 150)
    check_split(test, "fuzzy-wikipedia", "test", 2000, 5, 150)
    assert len({question.qid for _, question in [*train.questions(), *test.questions()]}) == 20_000
    questions = [question.question.split() for _, question in train.questions()]
    assert 7.0 < np.mean([len(words) for words in questions]) < 8.5  # 10 tokens, 9 of them kept with probability 0.8
    assert train.dropped + test.dropped == Counter({"document shorter than a passage": 1})  # a 15-token article


def test_same_seed_same_bytes_and_another_seed_differs(tmp_path):
    """The offline default throughout: uniform over MiniLM's words, MiniLM neighbours."""

    def files(seed: int, tag: str) -> list[bytes]:
        train, test = generate_fuzzy(seed=seed, passage_generator="uniform", train_passages=60, test_passages=40)
        contents = []
        for split in (train, test):
            path = tmp_path / f"{tag}-{split.split}.jsonl.gz"
            write_mrqa(split, path)
            contents.append(path.read_bytes())
        return contents

    first, again, other = files(3, "first"), files(3, "again"), files(4, "other")
    assert first == again
    assert first[0] != other[0] and first[1] != other[1]
    assert first[0] != first[1]


def test_option_errors_name_the_option(tmp_path):
    with pytest.raises(ConcurError, match="passage_generator 'markov' is not one of uniform, 3gram, pcfg, gpt2, wikipedia"):
        generate_fuzzy(seed=0, passage_generator="markov")
    with pytest.raises(ConcurError, match="'3gram' needs the input option 'corpus'"):
        generate_fuzzy(seed=0, passage_generator="3gram")
    with pytest.raises(ConcurError, match=r"dropout_rate must be in \[0, 1\], got 1.5"):
        generate_fuzzy(seed=0, passage_generator="uniform", dropout_rate=1.5)
    with pytest.raises(ConcurError, match="train_passages must be at least 1"):
        generate_fuzzy(seed=0, passage_generator="uniform", train_passages=0)
    with pytest.raises(ConcurError, match="mask must be one token"):
        generate_fuzzy(seed=0, passage_generator="uniform", mask="X X")


def test_malformed_inputs_name_file_and_line(tmp_path):
    treebank = tmp_path / "bad.mrg"
    treebank.write_text("(S (NP (NN cat)) (VP (VBD sat)))\n(S (NP (NN dog))\n")
    with pytest.raises(DataFormatError, match="bad.mrg, line 2: a '\\(' opened here is never closed"):
        generate_fuzzy(seed=0, passage_generator="pcfg", treebank=treebank)
    samples = tmp_path / "bad.jsonl"
    samples.write_text('{"text": "a b c"}\n{"text": 3}\n')
    with pytest.raises(DataFormatError, match="bad.jsonl, line 2: a sample must be"):
        generate_fuzzy(seed=0, passage_generator="gpt2", samples=samples)


def test_short_documents_are_an_error_when_nothing_is_long_enough(tmp_path):
    samples = tmp_path / "short.jsonl"
    samples.write_text("".join(json.dumps({"text": "only a few words"}) + "\n" for _ in range(4)))
    with pytest.raises(ConcurError, match="no document of this split has 150 tokens or more"):
        generate_fuzzy(seed=0, passage_generator="gpt2", samples=samples)


def test_registered_options_are_the_functions_parameters_with_their_defaults():
    definition = resolve("generator", "fuzzy")
    parameters = inspect.signature(generate_fuzzy).parameters
    assert definition.options is FuzzyOptions
    required = object()  # no default: the dataclass says MISSING, the signature `empty`
    options = {item.name: required if item.default is dataclasses.MISSING else item.default for item in dataclasses.fields(FuzzyOptions)}
    defaults = {name: required if parameter.default is parameter.empty else parameter.default for name, parameter in parameters.items()}
    assert options == {name: default for name, default in defaults.items() if name != "seed"}
    assert set(definition.inputs) == {"corpus", "samples", "treebank", "vectors"}


@pytest.mark.parametrize("bench", FUZZY_BENCHMARKS)
def test_specs_state_the_defaults(bench):
    """Every spec spells out its numbers, and they are the function's defaults (the paper's values)."""
    spec = default_registry().benchmark(bench)
    assert (spec.family, spec.generator.name, spec.generator.seed) == ("synthetic", "fuzzy", 0)
    options = spec.generator.options
    assert options["passage_generator"] == bench.removeprefix("fuzzy-")
    defaults = {name: parameter.default for name, parameter in inspect.signature(generate_fuzzy).parameters.items()}
    for name in ("passage_tokens", "train_passages", "test_passages", "questions_per_passage", "context_tokens", "mask"):
        assert options[name] == defaults[name], name
    for name in ("replace_probability", "neighbours", "permutation_window", "dropout_rate", "max_vectors"):
        assert options[name] == defaults[name], name
    assert (options["passage_tokens"], options["questions_per_passage"], options["neighbours"]) == (150, 5, 100)
    assert (options["permutation_window"], options["dropout_rate"], options["context_tokens"]) == (3, 0.2, 10)
    inputs = [options[name] for name in resolve("generator", "fuzzy").inputs if name in options]
    assert inputs and all(source in spec.sources for source in inputs)


def test_run_generator_passes_located_inputs(tmp_path):
    path = tmp_path / "tiny.mrg"
    path.write_text(TREEBANK)
    options = {"passage_generator": "pcfg", "treebank": "ptb", "train_passages": 3, "test_passages": 2, "replace_probability": 0.0}
    train, test = run_generator("fuzzy", 0, options, {"ptb": path})
    assert (train.n_questions, test.n_questions) == (15, 10)


def test_prepare_materialises_a_fuzzy_benchmark_from_shared_data(tmp_path):
    shared_file(WIKITEXT_TEST)
    spec = user_benchmark(
        tmp_path,
        "fuzzy-wikipedia-small",
        """
        id = "fuzzy-wikipedia-small"
        extends = "fuzzy-wikipedia"
        [generator.options]
        train_passages = 30
        test_passages = 20
        """,
    )
    bench, did_work = prepare(spec, SourceLocator((SHARED_DATA,), tmp_path / "cache"), tmp_path / "data")
    assert did_work
    assert {split: entry["questions"] for split, entry in bench.manifest["splits"].items()} == {"train": 150, "test": 100}
    source = bench.manifest["sources"]["wikitext2-test"]
    assert (source["origin"], source["verified"]) == ("local", True)
    check_split(bench.load("test"), "fuzzy-wikipedia", "test", 20, 5, 150)

"""Generated benchmarks: the `[generator]` spec table, its errors, and `prepare` running a generator."""

import random
from dataclasses import dataclass

import pytest

from concur.components import GeneratorKind
from concur.data.model import DetectedAnswer, Passage, Question, Split
from concur.data.prepare import prepare
from concur.data.sources import SourceLocator
from concur.errors import SpecError
from tests.conftest import user_benchmark


@dataclass(frozen=True)
class WordsOptions:
    words: str  # the source holding the vocabulary
    per_split: int = 4


def _words_generator(*, seed: int, words, per_split: int = WordsOptions.per_split) -> tuple[Split, Split]:
    """Passages of two words drawn from the `words` input file; the question asks for the second."""
    vocabulary = words.read_text().split()
    splits = []
    for offset, name in enumerate(("train", "test")):
        rng = random.Random(seed * 2 + offset)
        passages = []
        for index in range(per_split):
            first, second = rng.choice(vocabulary), rng.choice(vocabulary)
            context = f"{first} {second}"
            span = (len(first) + 1, len(context) - 1)
            qid = f"{name}-{index}"
            passages.append(Passage(context, [Question(qid, f"after {first}?", [second], [DetectedAnswer(second, (span,))])]))
        splits.append(Split("words", name, passages))
    return splits[0], splits[1]


# A generator no registry lists: the spec names it by `module:attr`, as a user's own would.
WORDS = GeneratorKind(_words_generator, options=WordsOptions, inputs=("words",))
NOT_A_GENERATOR = 42


SPEC = """
id = "{name}"
family = "synthetic"
[generator]
name = "tests.test_generators:WORDS"
seed = 3
[generator.options]
words = "vocabulary"
per_split = 6
[sources.vocabulary]
path = "words.txt"
[train.downsample]
questions = 4
seed = 0
"""


def test_prepare_runs_the_generator_with_its_located_input(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "words.txt").write_text("alpha beta gamma delta\n")
    spec = user_benchmark(tmp_path, "gen", SPEC.format(name="gen"))
    assert spec.generator.inputs == ("vocabulary",) and spec.generator.options == {"words": "vocabulary", "per_split": 6}
    bench, did_work = prepare(spec, SourceLocator((root,), tmp_path / "cache"), tmp_path / "data")
    assert did_work
    manifest = bench.manifest
    assert manifest["generator"] == {"name": "tests.test_generators:WORDS", "seed": 3}
    assert manifest["sources"]["vocabulary"]["origin"] == "local"
    # 6 generated questions per split; train downsampled to 4
    assert (manifest["splits"]["train"]["questions"], manifest["splits"]["test"]["questions"]) == (4, 6)
    for passage, question in bench.load("test").questions():
        first, last = question.first_span
        assert passage.context[first : last + 1] == question.answers[0] and question.answers[0] in {"alpha", "beta", "gamma", "delta"}
    assert prepare(spec, SourceLocator((root,), tmp_path / "cache"), tmp_path / "data")[1] is False  # rerun does no work


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        (("per_split = 6", "per_splits = 6"), "generator.options.per_splits", "did you mean 'per_split'"),
        (("per_split = 6", 'per_split = "six"'), "generator.options.per_split", "must be"),
        (('words = "vocabulary"', 'words = "vocab"'), "generator.options", "'vocab', which is not declared"),
        ((":WORDS", ":WORD"), "generator.name", "module 'tests.test_generators' has no 'WORD'"),
        ((":WORDS", ":NOT_A_GENERATOR"), "generator.name", "is a int, not a concur.components.GeneratorKind"),
        (("tests.test_generators:WORDS", "tests.no_such_module:WORDS"), "generator.name", "cannot import 'tests.no_such_module'"),
        (('name = "tests.test_generators:WORDS"', 'name = "fuzzzy"'), "generator.name", "did you mean 'fuzzy'"),
        (("seed = 3\n", ""), "generator.seed", "is required"),
        (("[train.downsample]", '[train]\nsource = "vocabulary"\n[train.downsample]'), "train.source", "splits come from its [generator]"),
        (
            ("[train.downsample]", '[carve]\nsource = "vocabulary"\nby = "context"\ntest_fraction = 0.5\nseed = 0\n[train.downsample]'),
            "carve",
            "remove [carve] or [generator]",
        ),
    ],
)
def test_generator_spec_errors(tmp_path, change, field, problem):
    with pytest.raises(SpecError) as info:
        user_benchmark(tmp_path, "bad", SPEC.format(name="bad").replace(*change))
    assert info.value.field == field and problem in str(info.value)

"""WikidataSyntheticQA: PageRank, exact split sizes, spans, determinism, aliases, inverses and hypernyms."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest

from concur.components import resolve
from concur.data.generators import run_generator
from concur.data.kg import KnowledgeGraph, Property
from concur.data.kg_build import build_kg
from concur.data.model import Split
from concur.data.mrqa import write_mrqa
from concur.data.wikidata_synthetic import (
    WikidataOptions,
    WikidataSynthetic,
    WikidataSyntheticConfig,
    generate,
    load_graph,
    pagerank,
    questions_per_passage,
)
from concur.errors import ConcurError
from concur.registry import default_registry
from tests.conftest import shared_file
from tests.test_kg import write_dump

D = 0.85
SMALL = {"train_questions": 30, "train_passages": 12, "test_questions": 10, "test_passages": 2, "triples_per_passage": 4}
HYPERNYM_LABELS = ("human", "country", "city")


def hand_graph() -> KnowledgeGraph:
    """Five triples with aliases, one invertible property (P27 <-> P1), and a hypernym for every entity."""
    return KnowledgeGraph(
        entities={
            "Q1": ("Ada Lovelace", "Augusta Ada King", "Ada"),
            "Q2": ("United Kingdom", "UK"),
            "Q3": ("William King",),
            "Q4": ("London", "Londinium"),
            "Q5": ("human", "person"),
            "Q6": ("country",),
            "Q7": ("city",),
        },
        properties={
            "P27": Property(("country of citizenship", "citizenship"), "P1"),
            "P1": Property(("has citizen",), "P27"),
            "P26": Property(("spouse", "married to")),
            "P131": Property(("located in",)),
        },
        triples=[("Q1", "P27", "Q2"), ("Q3", "P27", "Q2"), ("Q1", "P26", "Q3"), ("Q4", "P131", "Q2"), ("Q3", "P26", "Q1")],
        hypernyms={"Q1": ("Q5",), "Q2": ("Q6",), "Q3": ("Q5",), "Q4": ("Q7",)},
        source="hand",
    )


def make(graph: KnowledgeGraph, seed: int = 0, **options) -> tuple[Split, Split]:
    return WikidataSynthetic(graph, WikidataSyntheticConfig(**(SMALL | options))).splits(seed)


def check_split(split: Split, questions: int, passages: int, most: int) -> None:
    """Exact sizes, 1..most questions a passage, unique qids, every span holding its answer."""
    assert (split.n_questions, split.n_passages) == (questions, passages)
    assert all(1 <= len(passage.qas) <= most for passage in split.passages)
    qids = [question.qid for _, question in split.questions()]
    assert len(set(qids)) == len(qids)
    for passage, question in split.questions():
        assert question.answers == [detected.text for detected in question.detected_answers]
        for detected in question.detected_answers:
            for first, last in detected.char_spans:
                assert passage.context[first : last + 1] == detected.text


def mrqa_bytes(splits: tuple[Split, Split], directory: Path) -> list[bytes]:
    directory.mkdir(parents=True, exist_ok=True)
    for split in splits:
        write_mrqa(split, directory / f"{split.split}.jsonl.gz")
    return [(directory / f"{name}.jsonl.gz").read_bytes() for name in ("train", "test")]


# PageRank


def test_pagerank_of_a_star_with_a_dangling_centre():
    """A -> B <- C, B dangling: r_A = r_C = 1 / (3 + 2d), r_B = 1 - 2 r_A (solved by hand)."""
    rank = pagerank(np.array([0, 2]), np.array([1, 1]), 3, D, 1e-12, 1000)
    assert rank == pytest.approx([1 / (3 + 2 * D), 1 - 2 / (3 + 2 * D), 1 / (3 + 2 * D)], abs=1e-10)


def test_pagerank_counts_parallel_edges():
    """A -> B twice, A -> C, B -> A, C -> A: r_A = (1 + 2d) / (3 (1 + d)), r_B, r_C from r_A."""
    rank = pagerank(np.array([0, 0, 0, 1, 2]), np.array([1, 1, 2, 0, 0]), 3, D, 1e-12, 1000)
    r_a = (1 + 2 * D) / (3 * (1 + D))
    assert rank == pytest.approx([r_a, (1 - D) / 3 + 2 * D / 3 * r_a, (1 - D) / 3 + D / 3 * r_a], abs=1e-10)
    assert rank.sum() == pytest.approx(1.0)


def test_pagerank_reports_non_convergence():
    with pytest.raises(ConcurError, match="did not converge"):
        pagerank(np.array([0, 0, 0, 1, 2]), np.array([1, 1, 2, 0, 0]), 3, D, 1e-12, 2)


def test_seed_pool_is_the_top_of_the_pagerank():
    generator = WikidataSynthetic(hand_graph(), WikidataSyntheticConfig(seed_pool=2))
    assert [generator.nodes[node] for node in generator.pool] == ["Q2", "Q1"]  # every path leads to the United Kingdom


# sizes


@pytest.mark.parametrize(("questions", "passages"), [(10_000, 8_376), (9_835, 1_967), (7, 7)])
def test_questions_per_passage_hits_both_totals(questions, passages):
    counts = questions_per_passage(questions, passages, 5, random.Random(3))
    assert (sum(counts), len(counts)) == (questions, passages)
    assert min(counts) >= 1 and max(counts) <= 5
    assert counts == questions_per_passage(questions, passages, 5, random.Random(3))


def test_infeasible_sizes_are_refused():
    with pytest.raises(ConcurError, match="train needs"):
        WikidataSyntheticConfig(train_questions=100, train_passages=10)
    with pytest.raises(ConcurError, match="hypernym_probability"):
        WikidataSyntheticConfig(hypernym_probability=1.5)


# generation on a hand-made graph


def test_hand_graph_splits_are_exact_and_spans_hold():
    train, test = make(hand_graph())
    check_split(train, 30, 12, 5)
    check_split(test, 10, 2, 5)
    assert [len(passage.qas) for passage in test.passages] == [5, 5]
    generator = WikidataSynthetic(hand_graph(), WikidataSyntheticConfig())
    around = {generator.nodes[node]: len(generator.neighbourhood_triples(node)) for node in range(len(generator.nodes))}
    assert around == {"Q1": 5, "Q2": 5, "Q3": 5, "Q4": 3}  # London: its triple and the United Kingdom's
    for passage in train.passages:
        assert passage.context.endswith(" .") and passage.context.count(" . ") + 1 == min(4, around[passage.article])
        assert passage.article in ("Q1", "Q2", "Q3", "Q4")


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    graph = hand_graph()
    first = mrqa_bytes(make(graph, seed=5), tmp_path / "a")
    assert first == mrqa_bytes(make(graph, seed=5), tmp_path / "b")
    other = mrqa_bytes(make(graph, seed=6), tmp_path / "c")
    assert other[0] != first[0] and other[1] != first[1]


def realisations(graph: KnowledgeGraph) -> set[str]:
    """Every triple written with primary labels only."""
    return {
        " ".join(graph.properties[x].labels[0] if x in graph.properties else graph.entities[x][0] for x in triple)
        for triple in graph.triples
    }


def test_without_aliases_only_primary_labels_appear():
    graph = hand_graph()
    train, test = make(graph, aliases=False, inverse_probability=0.0, hypernym_probability=0.0)
    written = realisations(graph)
    for split in (train, test):
        for passage in split.passages:
            assert set(passage.context.removesuffix(" .").split(" . ")) <= written
            for question in passage.qas:
                assert all(question.question.replace("XXXXX", answer, 1) in written for answer in question.answers)
    with_aliases = make(graph, inverse_probability=0.0, hypernym_probability=0.0)[0]
    assert any(not set(passage.context.removesuffix(" .").split(" . ")) <= written for passage in with_aliases.passages)


def test_inverse_turns_the_triple_around():
    graph = hand_graph()
    train, _ = make(graph, aliases=False, inverse_probability=1.0, hypernym_probability=0.0)
    citizens = {("Ada Lovelace", "United Kingdom"), ("William King", "United Kingdom")}
    inverted = 0
    for _, question in train.questions():
        assert "country of citizenship" not in question.question  # shown only as the masked answer
        if " has citizen " in question.question:
            inverted += 1
            country, citizen = question.question.replace("XXXXX", question.answers[0]).split(" has citizen ")
            assert (citizen, country) in citizens
    assert inverted > 0


def test_hypernym_replaces_the_unmasked_entity():
    train, _ = make(hand_graph(), aliases=False, inverse_probability=0.0, hypernym_probability=1.0)
    for _, question in train.questions():
        words = question.question
        if words.startswith("XXXXX"):  # the subject is the answer: the object is shown as its class
            assert words.endswith(HYPERNYM_LABELS), words
        elif words.endswith("XXXXX"):
            assert words.startswith(HYPERNYM_LABELS), words
        else:  # the predicate is the answer: one entity at random is shown as its class
            assert words.startswith(HYPERNYM_LABELS) or words.endswith(HYPERNYM_LABELS), words


def test_every_fitting_passage_triple_gives_an_accepted_answer():
    """'XXXXX country of citizenship country' fits every citizen of the United Kingdom in the passage."""
    options = {"aliases": False, "inverse_probability": 0.0, "hypernym_probability": 1.0}
    train, _ = make(hand_graph(), **options)
    asked = 0
    for passage, question in train.questions():
        if question.question == "XXXXX country of citizenship country":
            asked += 1
            citizens = [
                name for name in ("Ada Lovelace", "William King") if f"{name} country of citizenship United Kingdom" in passage.context
            ]
            assert sorted(question.answers) == citizens
            assert question.first_span == question.detected_answers[0].char_spans[0]
    assert asked and any(len(question.answers) == 2 for _, question in train.questions())
    single, _ = make(hand_graph(), all_answers=False, **options)
    assert all(len(question.answers) == 1 and len(question.detected_answers[0].char_spans) == 1 for _, question in single.questions())


def test_inverse_from_a_dump_fixture(tmp_path):
    """P1696 in a Wikidata dump becomes an inverse the questions use."""
    kg = tmp_path / "kg.jsonl.gz"
    build_kg(kg, dump=write_dump(tmp_path / "dump.json.bz2"))
    options = SMALL | {"aliases": False, "inverse_probability": 1.0, "hypernym_probability": 0.0}
    train, test = generate(seed=1, kg=kg, **options)
    check_split(train, 30, 12, 5)
    questions = [question.question for _, question in train.questions()]
    assert any(" student " in text for text in questions)  # educated at (P69) -> student (P802), by P1696
    assert any(" father " in text for text in questions)  # child (P40) -> father (P22), by an inverse constraint
    assert any(" relative of " in text for text in questions)  # relative (P1038) -> Q8's label, by P7087


def test_inputs_are_either_a_kg_or_codex(tmp_path):
    with pytest.raises(ConcurError, match="not both"):
        generate(seed=0, kg=tmp_path / "kg.jsonl.gz", triples=tmp_path / "t.txt")
    with pytest.raises(ConcurError, match="missing relations, labels"):
        generate(seed=0, triples=tmp_path / "t.txt")


def test_registered_with_every_option():
    definition = resolve("generator", "wikidata")
    assert definition.generate is generate
    assert set(definition.inputs) == {
        "kg",
        "triples",
        "valid_triples",
        "test_triples",
        "relations",
        "labels",
        "entity_types",
        "type_labels",
    }
    options = {field.name for field in dataclasses.fields(WikidataOptions)}
    assert definition.options is WikidataOptions and options == set(definition.inputs) | {
        field.name for field in dataclasses.fields(WikidataSyntheticConfig)
    }
    spec = default_registry().benchmark("wikidata-synthetic")
    assert spec.generator.name == "wikidata"
    assert set(spec.generator.options) == options - {"kg"}  # the spec states every parameter


# the real shared data, full size


@pytest.fixture(scope="module")
def real_inputs() -> tuple[int, dict, dict[str, Path]]:
    """The spec's seed, options and input paths, located under ../shared/data."""
    spec = default_registry().benchmark("wikidata-synthetic")
    paths = {name: shared_file(spec.sources[name].path + ".gz") for name in spec.generator.inputs}
    return spec.generator.seed, spec.generator.options, paths


@pytest.fixture(scope="module")
def real_splits(real_inputs) -> tuple[Split, Split]:
    seed, options, paths = real_inputs
    return run_generator("wikidata", seed, options, paths)


@pytest.fixture(scope="module")
def real_graph(real_inputs) -> KnowledgeGraph:
    _, options, paths = real_inputs
    return load_graph({name: paths[value] for name, value in options.items() if name in resolve("generator", "wikidata").inputs})


@pytest.mark.slow
def test_real_data_full_size(real_inputs, real_splits, real_graph):
    train, test = real_splits
    check_split(train, 10_000, 8_376, 5)
    check_split(test, 9_835, 1_967, 5)
    assert all(len(passage.qas) == 5 for passage in test.passages)
    assert not {q.qid for _, q in train.questions()} & {q.qid for _, q in test.questions()}
    generator = WikidataSynthetic(real_graph, WikidataSyntheticConfig())
    node = {qid: index for index, qid in enumerate(generator.nodes)}
    for passage in train.passages[:500]:  # 50 triples, or all around a seed with fewer
        assert passage.context.count(" . ") + 1 == min(50, len(generator.neighbourhood_triples(node[passage.article])))


@pytest.mark.slow
def test_real_data_is_reproducible(real_inputs, real_splits, real_graph, tmp_path):
    seed, options, paths = real_inputs
    first = mrqa_bytes(real_splits, tmp_path / "a")
    assert mrqa_bytes(run_generator("wikidata", seed, options, paths), tmp_path / "b") == first  # from the files again
    inputs = resolve("generator", "wikidata").inputs
    config = WikidataSyntheticConfig(**{name: value for name, value in options.items() if name not in inputs})
    other = mrqa_bytes(WikidataSynthetic(real_graph, config).splits(seed + 1), tmp_path / "c")
    assert other[0] != first[0] and other[1] != first[1]


@pytest.mark.slow
def test_real_data_without_aliases(real_inputs, real_graph):
    seed, options, paths = real_inputs
    small = options | {"aliases": False, "train_questions": 600, "train_passages": 300, "test_questions": 100, "test_passages": 20}
    train, _ = run_generator("wikidata", seed, small, paths)
    written = realisations(real_graph)
    for passage in train.passages:
        assert set(passage.context.removesuffix(" .").split(" . ")) <= written

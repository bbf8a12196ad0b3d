"""WikidataSyntheticQA: extractive questions over passages of realised knowledge-graph triples.

After Liu, Lee, Jia & Liang (2023). A passage is about a seed entity, drawn uniformly from
the `seed_pool` entities of highest PageRank over the item graph (one edge per triple,
subject to object). Of the triples that touch the seed or one of its neighbours,
`triples_per_passage` are sampled (all of them when there are fewer), in random order; each
is realised as "subject predicate object" with every element written as a random label or
alias, followed by the `delimiter` token, so the passage reads like short sentences.

A question picks a passage triple and one of its elements (subject, predicate or object)
as the answer, whose passage realisation is the answer span. The question is that triple
with the answer replaced by the `mask` token and the other elements freshly realised; with
`inverse_probability` a masked entity's triple is turned around (object, inverse predicate,
subject) when the predicate has an inverse, and with `hypernym_probability` an unmasked
entity (one at random when the predicate is masked) is replaced by one of its hypernyms
(P31/P279 classes) when it has any. Other passage triples may fit a question as well (a
second occupation; any instance of the class shown): with `all_answers` their elements are
accepted answers too, after the sampled one, whose span stays the one models train on.
A passage gets 1 to `max_questions_per_passage` questions on distinct (triple, element)
pairs, so that the split sizes are exact.

With `aliases = false` every element is written with its primary label only: the ablation
under which the paper reports near-perfect scores for every approach.

Each split has its own `random.Random` derived from the seed and the split name; every
choice is made over ordered lists, so a seed gives byte-identical splits and another seed
different ones.
"""

from __future__ import annotations

import random
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from concur.components import GeneratorKind
from concur.data.cloze import BLANK
from concur.data.kg import KnowledgeGraph, Triple, read_kg
from concur.data.kg_build import codex_graph
from concur.data.kg_codex import CodexFiles
from concur.data.model import DetectedAnswer, Passage, Question, Span, Split
from concur.errors import ConcurError

DATASET = "WikidataSyntheticQA"
SUBJECT, PREDICATE, OBJECT = range(3)


@dataclass(frozen=True)
class WikidataSyntheticConfig:
    """Every generation parameter; the defaults are the reference study's sizes (the spec repeats them)."""

    aliases: bool = True
    seed_pool: int = 10_000
    damping: float = 0.85
    tolerance: float = 1e-10  # L1 change of the PageRank vector between iterations
    max_iterations: int = 1000
    triples_per_passage: int = 50
    delimiter: str = "."
    mask: str = BLANK
    inverse_probability: float = 0.5
    hypernym_probability: float = 0.5
    all_answers: bool = True  # accept the answer of every passage triple the question fits, not only the sampled one's
    train_questions: int = 10_000
    train_passages: int = 8_376
    test_questions: int = 9_835
    test_passages: int = 1_967
    max_questions_per_passage: int = 5

    def __post_init__(self) -> None:
        for name in ("inverse_probability", "hypernym_probability"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConcurError(f"wikidata generator: {name} must lie in [0, 1], got {getattr(self, name)}")
        if not 0.0 < self.damping < 1.0:
            raise ConcurError(f"wikidata generator: damping must lie in (0, 1), got {self.damping}")
        for name in ("seed_pool", "triples_per_passage", "max_iterations", "max_questions_per_passage"):
            if getattr(self, name) < 1:
                raise ConcurError(f"wikidata generator: {name} must be at least 1, got {getattr(self, name)}")
        for split in ("train", "test"):
            questions, passages = getattr(self, f"{split}_questions"), getattr(self, f"{split}_passages")
            if not 1 <= passages <= questions <= passages * self.max_questions_per_passage:
                raise ConcurError(
                    f"wikidata generator: {split} needs 1 <= passages ({passages}) <= questions ({questions})"
                    f" <= {self.max_questions_per_passage} * passages"
                )
        if not self.mask.strip() or not self.delimiter.strip():
            raise ConcurError("wikidata generator: mask and delimiter must be non-blank tokens")


KG_INPUTS = ("kg",)
CODEX_INPUTS = ("triples", "valid_triples", "test_triples", "relations", "labels", "entity_types", "type_labels")
INPUTS = KG_INPUTS + CODEX_INPUTS


@dataclass(frozen=True)
class WikidataOptions(WikidataSyntheticConfig):
    """What a spec may set in `[generator.options]`: every generation parameter, and its input sources (`INPUTS`):
    the compact graph `kg`, or the CoDEx files (`triples`, `relations`, `labels` at least)."""

    kg: str | None = None
    triples: str | None = None
    valid_triples: str | None = None
    test_triples: str | None = None
    relations: str | None = None
    labels: str | None = None
    entity_types: str | None = None
    type_labels: str | None = None


def generate(seed: int, **options: typing.Any) -> tuple[Split, Split]:
    """Both splits from a compact KG (`kg`) or from the CoDEx + FB15k-237 files; other options configure."""
    inputs = {name: options.pop(name) for name in INPUTS if options.get(name) is not None}
    config = WikidataSyntheticConfig(**options)
    return WikidataSynthetic(load_graph(inputs), config).splits(seed)


def load_graph(inputs: dict[str, Path]) -> KnowledgeGraph:
    """The compact KG file, or the graph built in memory from CoDEx (`triples`, `relations`, `labels` at least)."""
    if "kg" in inputs:
        if inputs.keys() - {"kg"}:
            raise ConcurError(f"wikidata generator: give either 'kg' or the CoDEx inputs, not both (got {', '.join(sorted(inputs))})")
        return read_kg(inputs["kg"])
    missing = [name for name in ("triples", "relations", "labels") if name not in inputs]
    if missing:
        raise ConcurError(f"wikidata generator: needs a 'kg' input or the CoDEx inputs; missing {', '.join(missing)}")
    files = CodexFiles(
        triples=tuple(inputs[name] for name in ("triples", "valid_triples", "test_triples") if name in inputs),
        relations=inputs["relations"],
        labels=inputs["labels"],
        entity_types=inputs.get("entity_types"),
        type_labels=inputs.get("type_labels"),
    )
    return codex_graph(files)


def pagerank(sources: np.ndarray, targets: np.ndarray, n: int, damping: float, tolerance: float, max_iterations: int) -> np.ndarray:
    """PageRank of a directed multigraph by sparse power iteration; dangling nodes spread their rank uniformly.

    Converges when the L1 change between iterations falls below `tolerance`; the ranks sum to 1.
    """
    from scipy import sparse  # imported here: every spec load imports this module, few runs need scipy

    out_degree = np.bincount(sources, minlength=n).astype(float)
    weights = 1.0 / out_degree[sources]
    transition = sparse.csr_matrix((weights, (targets, sources)), shape=(n, n))  # parallel edges add up
    dangling = out_degree == 0
    rank = np.full(n, 1.0 / n)
    for _ in range(max_iterations):
        updated = damping * (transition @ rank + rank[dangling].sum() / n) + (1.0 - damping) / n
        change = np.abs(updated - rank).sum()
        rank = updated
        if change < tolerance:
            return rank
    raise ConcurError(f"PageRank did not converge to L1 change {tolerance} in {max_iterations} iterations")


def questions_per_passage(questions: int, passages: int, most: int, rng: random.Random) -> list[int]:
    """Questions of each passage: each gets 1, and the rest fill `most - 1` further slots per passage chosen at random.

    The totals are exact and every arrangement of the extra questions over the slots is equally likely.
    """
    counts = [1] * passages
    for slot in rng.sample(range(passages * (most - 1)), questions - passages):
        counts[slot // (most - 1)] += 1
    return counts


class WikidataSynthetic:
    """The graph indexed for generation: node numbers, PageRank seed pool, incident triples per node."""

    def __init__(self, graph: KnowledgeGraph, config: WikidataSyntheticConfig) -> None:
        self.graph, self.config = graph, config
        if not graph.triples:
            raise ConcurError(f"wikidata generator: the knowledge graph ({graph.source}) has no triples")
        in_triples = {qid for subject, _, obj in graph.triples for qid in (subject, obj)}
        self.nodes = [qid for qid in graph.entities if qid in in_triples]  # the graph's order, not a set's
        number = {qid: index for index, qid in enumerate(self.nodes)}
        self.subjects = np.array([number[subject] for subject, _, _ in graph.triples])
        self.objects = np.array([number[obj] for _, _, obj in graph.triples])
        n = len(self.nodes)
        rank = pagerank(self.subjects, self.objects, n, config.damping, config.tolerance, config.max_iterations)
        self.rank = rank
        self.pool = np.lexsort((np.arange(n), -rank))[: config.seed_pool].tolist()  # highest rank first, ties by graph order
        self.indptr, self.incident = _incidence(self.subjects, self.objects, n)

    def neighbourhood_triples(self, node: int) -> np.ndarray:
        """Indices (ascending) of the triples touching `node` or one of its neighbours."""
        own = self._incident_of(np.array([node]))
        around = _distinct(np.concatenate([self.subjects[own], self.objects[own]]), len(self.nodes))
        return _distinct(self._incident_of(around), len(self.subjects))

    def _incident_of(self, nodes: np.ndarray) -> np.ndarray:
        starts, ends = self.indptr[nodes], self.indptr[nodes + 1]
        lengths = ends - starts
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        return self.incident[offsets]

    def splits(self, seed: int) -> tuple[Split, Split]:
        config = self.config
        return (
            self.split("train", config.train_questions, config.train_passages, seed),
            self.split("test", config.test_questions, config.test_passages, seed),
        )

    def split(self, name: str, n_questions: int, n_passages: int, seed: int) -> Split:
        rng = random.Random(f"{DATASET}:{seed}:{name}")
        counts = questions_per_passage(n_questions, n_passages, self.config.max_questions_per_passage, rng)
        passages = [self.passage(rng, f"{name}-{index:05d}", count) for index, count in enumerate(counts)]
        return Split(dataset=DATASET, split=name, passages=passages)

    def passage(self, rng: random.Random, key: str, n_questions: int) -> Passage:
        """One passage around a random seed entity, with `n_questions` questions on distinct (triple, element) pairs."""
        seed_node = rng.choice(self.pool)
        candidates = self.neighbourhood_triples(seed_node)
        chosen = rng.sample(range(len(candidates)), min(self.config.triples_per_passage, len(candidates)))
        triples = [self.graph.triples[candidates[index]] for index in chosen]
        context, spans = self._realise_passage(rng, triples)
        positions = 3 * len(triples)
        picks = rng.sample(range(positions), min(n_questions, positions))
        picks += rng.choices(range(positions), k=n_questions - len(picks))  # a passage of one triple may repeat
        questions = []
        for number, pick in enumerate(picks):
            index, role = divmod(pick, 3)
            text, shown, class_slot = self._question(rng, triples[index], role)
            fitting = [
                other for other, triple in enumerate(triples) if other != index and _fits(self.graph, triple, shown, role, class_slot)
            ]
            answers: dict[str, list[Span]] = {}  # the sampled triple's answer first, then the others the question fits
            for other in [index, *fitting] if self.config.all_answers else [index]:
                first, last = spans[other][role]
                answers.setdefault(context[first : last + 1], []).append((first, last))
            questions.append(
                Question(
                    qid=f"{key}-{number}",
                    question=text,
                    answers=list(answers),
                    detected_answers=[DetectedAnswer(text=answer, char_spans=tuple(where)) for answer, where in answers.items()],
                )
            )
        return Passage(context=context, qas=questions, article=self.nodes[seed_node])

    def _labels(self, identifier: str) -> Sequence[str]:
        labels = self.graph.properties[identifier].labels if identifier in self.graph.properties else self.graph.entities[identifier]
        return labels if self.config.aliases else labels[:1]

    def _realise_passage(self, rng: random.Random, triples: list[Triple]) -> tuple[str, list[list[Span]]]:
        """The passage text and, per triple, the inclusive span of each element."""
        parts: list[str] = []
        offset = 0
        spans = []
        for index, triple in enumerate(triples):
            if index:
                parts.append(" ")
                offset += 1
            triple_spans = []
            for element in triple:
                text = rng.choice(self._labels(element))
                triple_spans.append((offset, offset + len(text) - 1))
                parts.append(text + " ")
                offset += len(text) + 1
            spans.append(triple_spans)
            parts.append(self.config.delimiter)
            offset += len(self.config.delimiter)
        return "".join(parts), spans

    def _question(self, rng: random.Random, triple: Triple, role: int) -> tuple[str, Triple, int | None]:
        """The question, with what it shows in the triple's own orientation: the elements, a class in the replaced slot.

        The element `role` is masked, the others freshly realised; the triple may be turned around
        (object, inverse predicate, subject) and an unmasked entity replaced by one of its classes.
        """
        inverse = self.graph.inverse_labels(triple[PREDICATE])
        inverted = role != PREDICATE and inverse is not None and rng.random() < self.config.inverse_probability
        shown, class_slot = list(triple), None
        if rng.random() < self.config.hypernym_probability:
            slot = OBJECT if role == SUBJECT else SUBJECT if role == OBJECT else rng.choice((SUBJECT, OBJECT))
            classes = self.graph.hypernyms.get(triple[slot])
            if classes:
                shown[slot], class_slot = rng.choice(classes), slot

        def word(slot: int) -> str:
            if slot == role:
                return self.config.mask
            if slot == PREDICATE and inverse is not None and inverted:
                return rng.choice(inverse if self.config.aliases else inverse[:1])
            return rng.choice(self._labels(shown[slot]))

        order = (OBJECT, PREDICATE, SUBJECT) if inverted else (SUBJECT, PREDICATE, OBJECT)
        return " ".join(word(slot) for slot in order), (shown[0], shown[1], shown[2]), class_slot


def _fits(graph: KnowledgeGraph, triple: Triple, shown: Triple, role: int, class_slot: int | None) -> bool:
    """Whether `triple` answers the question showing `shown` with `role` masked (a class matches its instances)."""
    for slot in (SUBJECT, PREDICATE, OBJECT):
        if slot == role or triple[slot] == shown[slot]:
            continue
        if slot != class_slot or shown[slot] not in graph.hypernyms.get(triple[slot], ()):
            return False
    return True


def _incidence(subjects: np.ndarray, objects: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR lists of the triples touching each node (a self-loop once): `incident[indptr[v]:indptr[v + 1]]`."""
    triple_ids = np.arange(len(subjects))
    loop = subjects == objects
    nodes = np.concatenate([subjects, objects[~loop]])
    owners = np.concatenate([triple_ids, triple_ids[~loop]])
    order = np.argsort(nodes, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(nodes, minlength=n))])
    return indptr, owners[order]


def _distinct(values: np.ndarray, size: int) -> np.ndarray:
    """The distinct values (all in `range(size)`), ascending: a mark per value beats sorting at these sizes."""
    marks = np.zeros(size, dtype=bool)
    marks[values] = True
    return np.flatnonzero(marks)


GENERATOR = GeneratorKind(generate, WikidataOptions, INPUTS)

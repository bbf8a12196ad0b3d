"""FuzzySyntheticQA (Liu, Lee, Jia & Liang 2023): fuzzy pattern matching over generated passages.

A passage is `passage_tokens` tokens from one of five passage generators:

- `uniform`: tokens drawn uniformly from a vocabulary: the distinct tokens of `corpus` (the
  paper: the WikiText-2 training vocabulary), or the word space's words when no corpus is given;
- `3gram`: a maximum-likelihood n-gram model (`ngram_order`, 3) trained on `corpus` (the
  paper: WikiText-103), see `concur.data.ngram`;
- `pcfg`: a maximum-likelihood PCFG estimated from `treebank` (the paper: the Penn Treebank),
  see `concur.data.pcfg`;
- `gpt2`: windows of language-model samples from the jsonl file `samples` (the paper: GPT-2
  1.5B top-k 40 samples of the GPT-2 output dataset);
- `wikipedia`: windows of the real paragraphs of `corpus`.

`corpus` is WikiText-format text (`concur.data.corpora`). The two corpus-cut generators split
their documents (articles, samples) between train and test, in proportion to the two splits'
passage counts, so no document gives passages to both; within a split, documents are used in
a seeded random order, each once before any is used again, at a random offset.

Each passage gets `questions_per_passage` questions about distinct answer positions. The answer
is one token (one with a letter or digit, not `<unk>`, so that no answer normalises to nothing
under SQuAD scoring); its span is the occurrence the question was made from. The question is the
answer's local context, `context_tokens` tokens including the answer placed at a random offset
(fewer at the passage's edges), with the answer replaced by `mask`, then corrupted in three steps:

1. each other token, with probability `replace_probability`, becomes one of its `neighbours`
   nearest words (uniformly) in the word space, if the space has it (as written or lower-cased);
2. local permutation: token i moves to the rank of i + U(0, `permutation_window` + 1), so no
   token moves more than `permutation_window` places (Lample et al. 2018's noise);
3. word dropout: each token except the mask is dropped with probability `dropout_rate`.

The word space is a fastText `.vec` file (`vectors`, the paper's choice, `max_vectors` keeps its
most frequent words) or, offline, MiniLM's word pieces (`concur.data.neighbours`). The paper does
not state the replacement rate; 0.5 is this implementation's default.

Randomness: one `random.Random` per purpose, seeded from the spec's seed and the purpose's name
(string seeds are hashed with SHA-512, so they do not depend on PYTHONHASHSEED), and no set or
dict order matters, so a seed reproduces byte-identical files.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from concur.components import GeneratorKind
from concur.data.corpora import Document, lm_samples, wikitext_articles, wikitext_paragraphs
from concur.data.model import DetectedAnswer, Passage, Question, Split
from concur.data.neighbours import WordSpace, load_word_space
from concur.errors import ConcurError
from concur.progress import task_progress

PASSAGE_GENERATORS = ("uniform", "3gram", "pcfg", "gpt2", "wikipedia")
UNKNOWN_TOKEN = "<unk>"
INPUTS = ("corpus", "samples", "treebank", "vectors")
_NEEDS = {"3gram": "corpus", "pcfg": "treebank", "gpt2": "samples", "wikipedia": "corpus"}
_POSITIVE = ("passage_tokens", "train_passages", "test_passages", "questions_per_passage", "context_tokens", "ngram_order", "max_depth")
_NON_NEGATIVE = ("neighbours", "permutation_window", "max_vectors")
_MAX_REDRAWS = 1000  # consecutive passages with too few answerable tokens before giving up

Slot = str | tuple[int, int]
"""A question token: its text, or (word-space row, neighbour rank) for a replacement looked up later."""


@dataclass(frozen=True)
class Corruption:
    """How a question's context is turned into a fuzzy question; the defaults are the paper's (and ours for the replacement rate)."""

    context_tokens: int = 10
    mask: str = "XXXXX"
    replace_probability: float = 0.5
    neighbours: int = 100
    permutation_window: int = 3
    dropout_rate: float = 0.2


@dataclass(frozen=True)
class FuzzyOptions:
    """What a spec may set in `[generator.options]`; the defaults are the paper's sizes (2,000 passages x 5 questions per split).

    `corpus`, `samples`, `treebank` and `vectors` name sources of the spec (`INPUTS`); which
    ones a passage generator needs is checked when it runs.
    """

    passage_generator: str  # one of PASSAGE_GENERATORS
    corpus: str | None = None
    samples: str | None = None
    treebank: str | None = None
    vectors: str | None = None
    max_vectors: int = 0  # rows of the vector file read (0: all)
    passage_tokens: int = 150
    train_passages: int = 2000
    test_passages: int = 2000
    questions_per_passage: int = 5
    context_tokens: int = Corruption.context_tokens
    mask: str = Corruption.mask
    replace_probability: float = Corruption.replace_probability
    neighbours: int = Corruption.neighbours
    permutation_window: int = Corruption.permutation_window
    dropout_rate: float = Corruption.dropout_rate
    ngram_order: int = 3
    max_depth: int = 40


@dataclass
class _Draft:
    """A passage whose questions still hold unresolved neighbour replacements."""

    tokens: list[str]
    article: str | None
    questions: list[tuple[int, list[Slot]]] = field(default_factory=list)  # (answer position, slots)


def generate_fuzzy(
    seed: int,
    passage_generator: str,
    corpus: Path | None = None,
    samples: Path | None = None,
    treebank: Path | None = None,
    vectors: Path | None = None,
    max_vectors: int = FuzzyOptions.max_vectors,
    passage_tokens: int = FuzzyOptions.passage_tokens,
    train_passages: int = FuzzyOptions.train_passages,
    test_passages: int = FuzzyOptions.test_passages,
    questions_per_passage: int = FuzzyOptions.questions_per_passage,
    context_tokens: int = FuzzyOptions.context_tokens,
    mask: str = FuzzyOptions.mask,
    replace_probability: float = FuzzyOptions.replace_probability,
    neighbours: int = FuzzyOptions.neighbours,
    permutation_window: int = FuzzyOptions.permutation_window,
    dropout_rate: float = FuzzyOptions.dropout_rate,
    ngram_order: int = FuzzyOptions.ngram_order,
    max_depth: int = FuzzyOptions.max_depth,
) -> tuple[Split, Split]:
    """Both splits of a FuzzySyntheticQA benchmark (the paper's sizes by default: 2,000 passages x 5 questions each)."""
    _check_options(passage_generator, locals())
    corruption = Corruption(context_tokens, mask, replace_probability, neighbours, permutation_window, dropout_rate)
    space = load_word_space(vectors, max_vectors)
    dataset = f"fuzzy-{passage_generator}"
    counts = {"train": train_passages, "test": test_passages}
    sources = _passage_sources(passage_generator, seed, counts, passage_tokens, corpus, samples, treebank, space, ngram_order, max_depth)
    drafts: dict[str, list[_Draft]] = {}
    dropped: dict[str, Counter[str]] = {}
    for split, count in counts.items():
        rng = random.Random(f"fuzzy:{seed}:{split}")
        drafts[split], dropped[split] = _draft_split(
            f"{dataset} {split}", sources[split], rng, count, questions_per_passage, corruption, space
        )
    table = space.neighbours([slot[0] for slot in _pending(drafts)], neighbours)
    splits = []
    for split, split_drafts in drafts.items():
        passages = [_passage(draft, f"{dataset}-{split}-{number:06d}", table) for number, draft in enumerate(split_drafts)]
        splits.append(Split(dataset, split, passages, dropped[split]))
    return splits[0], splits[1]


def corrupt(context: Sequence[str], mask_position: int, corruption: Corruption, space: WordSpace, rng: random.Random) -> list[Slot]:
    """A question from its context tokens: masked, then replaced, locally permuted and dropped out."""
    reach = min(corruption.neighbours, len(space.words) - 1)
    slots: list[Slot] = []
    for position, token in enumerate(context):
        slot: Slot = corruption.mask if position == mask_position else token
        if position != mask_position and rng.random() < corruption.replace_probability:
            row = space.row(token)
            if row is not None and reach > 0:
                slot = (row, rng.randrange(reach))
        slots.append(slot)
    keys = [position + rng.random() * (corruption.permutation_window + 1) for position in range(len(slots))]
    order = sorted(range(len(slots)), key=keys.__getitem__)
    return [slots[position] for position in order if position == mask_position or not rng.random() < corruption.dropout_rate]


def answerable(token: str) -> bool:
    """Whether a token may be an answer: it has a letter or digit and is not the unknown-word token."""
    return token != UNKNOWN_TOKEN and any(character.isalnum() for character in token)


PassageSource = Callable[[random.Random], tuple[list[str], str | None]]
"""Draws one passage's tokens (and the document it comes from, if any) with the split's generator."""


def _passage_sources(
    generator: str,
    seed: int,
    counts: dict[str, int],
    length: int,
    corpus: Path | None,
    samples: Path | None,
    treebank: Path | None,
    space: WordSpace,
    ngram_order: int,
    max_depth: int,
) -> dict[str, PassageSource]:
    """One passage source per split; only corpus-cut generators differ between splits."""
    if generator == "uniform":
        vocabulary = _vocabulary(corpus) if corpus is not None else space.words
        if not vocabulary:
            raise ConcurError(f"{corpus}: the uniform generator found no vocabulary in it")
        return dict.fromkeys(counts, lambda rng: (rng.choices(vocabulary, k=length), None))
    if generator == "3gram":
        from concur.data.ngram import NgramModel

        assert corpus is not None
        model = NgramModel.fit((tokens for _, tokens in wikitext_paragraphs(corpus)), ngram_order)
        return dict.fromkeys(counts, lambda rng: (model.sample(rng, length), None))
    if generator == "pcfg":
        from concur.data.pcfg import Grammar, read_treebank

        assert treebank is not None
        grammar = Grammar.fit(read_treebank(treebank))
        return dict.fromkeys(counts, lambda rng: (grammar.sample(rng, length, max_depth), None))
    path = samples if generator == "gpt2" else corpus
    assert path is not None
    documents = lm_samples(path) if generator == "gpt2" else wikitext_articles(path)
    pools = _split_documents(documents, counts, random.Random(f"fuzzy:{seed}:documents"))
    return {split: _WindowSource(path, pools[split], length) for split in counts}


class _WindowSource:
    """Passages cut from a pool of documents: each document once (in a random order) before any repeats."""

    def __init__(self, path: Path, documents: list[Document], length: int) -> None:
        self.path, self.length = path, length
        self.documents = [document for document in documents if document.length >= length]
        self.short = len(documents) - len(self.documents)
        self._queue: list[Document] = []

    def __call__(self, rng: random.Random) -> tuple[list[str], str | None]:
        if not self.documents:
            raise ConcurError(f"{self.path}: no document of this split has {self.length} tokens or more")
        if not self._queue:
            self._queue = rng.sample(self.documents, len(self.documents))
        document = self._queue.pop()
        tokens = document.text.split()
        offset = rng.randrange(len(tokens) - self.length + 1)
        return tokens[offset : offset + self.length], document.name


def _draft_split(
    label: str, source: PassageSource, rng: random.Random, count: int, per_passage: int, corruption: Corruption, space: WordSpace
) -> tuple[list[_Draft], Counter[str]]:
    drafts: list[_Draft] = []
    dropped: Counter[str] = Counter()
    redraws = 0
    with task_progress() as progress:
        task = progress.add_task(label, total=count, status="")
        while len(drafts) < count:
            tokens, article = source(rng)
            candidates = [position for position, token in enumerate(tokens) if answerable(token)]
            if len(candidates) < per_passage:
                dropped[f"passage with fewer than {per_passage} answerable tokens"] += 1
                redraws += 1
                if redraws >= _MAX_REDRAWS:
                    raise ConcurError(f"{label}: {redraws} passages in a row had fewer than {per_passage} answerable tokens")
                continue
            redraws = 0
            draft = _Draft(tokens, article)
            for answer in sorted(rng.sample(candidates, per_passage)):
                before = rng.randrange(corruption.context_tokens)
                first = max(0, answer - before)
                end = min(len(tokens), answer - before + corruption.context_tokens)
                draft.questions.append((answer, corrupt(tokens[first:end], answer - first, corruption, space, rng)))
            drafts.append(draft)
            progress.advance(task)
    short = getattr(source, "short", 0)
    if short:
        dropped["document shorter than a passage"] += short
    return drafts, dropped


def _pending(drafts: dict[str, list[_Draft]]) -> list[tuple[int, int]]:
    """Every replacement still to look up, in generation order."""
    return [
        slot for split in drafts.values() for draft in split for _, slots in draft.questions for slot in slots if isinstance(slot, tuple)
    ]


def _passage(draft: _Draft, prefix: str, table: dict[int, list[str]]) -> Passage:
    starts = []
    offset = 0
    for token in draft.tokens:
        starts.append(offset)
        offset += len(token) + 1
    questions = []
    for number, (answer, slots) in enumerate(draft.questions):
        text = " ".join(slot if isinstance(slot, str) else table[slot[0]][slot[1]] for slot in slots)
        token = draft.tokens[answer]
        span = (starts[answer], starts[answer] + len(token) - 1)
        questions.append(Question(f"{prefix}-{number}", text, [token], [DetectedAnswer(token, (span,))]))
    return Passage(" ".join(draft.tokens), questions, draft.article)


def _vocabulary(corpus: Path) -> list[str]:
    """The corpus's distinct tokens (paragraph text only, no `<unk>`) in order of first occurrence."""
    seen: dict[str, None] = {}
    for _, tokens in wikitext_paragraphs(corpus):
        seen.update(dict.fromkeys(tokens))
    seen.pop(UNKNOWN_TOKEN, None)
    return list(seen)


def _split_documents(documents: list[Document], counts: dict[str, int], rng: random.Random) -> dict[str, list[Document]]:
    """Documents shuffled, then dealt to train until it holds its share of the tokens, the rest to test."""
    order = rng.sample(documents, len(documents))
    total = sum(document.length for document in order)
    share = counts["train"] / (counts["train"] + counts["test"])
    pools: dict[str, list[Document]] = {"train": [], "test": []}
    dealt = 0
    for document in order:
        pools["train" if dealt + document.length / 2 < share * total else "test"].append(document)
        dealt += document.length
    return pools


def _check_options(generator: str, options: dict[str, object]) -> None:
    """Errors that name the option, before any file is read."""
    if generator not in PASSAGE_GENERATORS:
        raise ConcurError(f"fuzzy generator: passage_generator {generator!r} is not one of {', '.join(PASSAGE_GENERATORS)}")
    needed = _NEEDS.get(generator)
    if needed is not None and options[needed] is None:
        raise ConcurError(f"fuzzy generator: passage_generator {generator!r} needs the input option {needed!r}")
    for name in ("replace_probability", "dropout_rate"):
        if not 0.0 <= float(options[name]) <= 1.0:  # type: ignore[arg-type]
            raise ConcurError(f"fuzzy generator: {name} must be in [0, 1], got {options[name]}")
    for name in _POSITIVE:
        if int(options[name]) < 1:  # type: ignore[call-overload]
            raise ConcurError(f"fuzzy generator: {name} must be at least 1, got {options[name]}")
    for name in _NON_NEGATIVE:
        if int(options[name]) < 0:  # type: ignore[call-overload]
            raise ConcurError(f"fuzzy generator: {name} must not be negative, got {options[name]}")
    if int(options["questions_per_passage"]) > int(options["passage_tokens"]):  # type: ignore[call-overload]
        raise ConcurError("fuzzy generator: questions_per_passage cannot exceed passage_tokens (answer positions are distinct)")
    if not str(options["mask"]) or any(character.isspace() for character in str(options["mask"])):
        raise ConcurError(f"fuzzy generator: mask must be one token without spaces, got {options['mask']!r}")


GENERATOR = GeneratorKind(generate_fuzzy, FuzzyOptions, INPUTS)

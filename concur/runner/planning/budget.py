"""A study's budget: seeded subsets of each benchmark's splits, so a grid fits a time budget under unchanged ids.

```toml
[budget]
train_questions = 1500   # at most this many training questions of each benchmark
test_questions = 1000    # optional: at most this many test questions (EM is then on that subset)
seed = 0                 # the subsets' seed (default 0)

[budget.wikidata-synthetic]   # optional, per benchmark: its own counts in place of the study's
train_questions = 200         # (an unset count is the study's; the seed is the study's)
```

A per-benchmark budget spends a CPU study's time where it buys signal: fewer training
questions where passages are long and training is dear, more test questions where prediction
is cheap.

Benchmarks keep their ids (results stay comparable by id with a published table) and the
runner, not the approach, takes the subset: the approach only ever sees the subset of the
training split, and the framework scores the subset of the test split.

How a subset is taken (`take_subset`): the split's passages are shuffled with the seed and
taken whole while they fit; the passage that would overflow gives its first questions to
make the count exact, so at most one passage is cut. Kept passages and questions keep their
original order. Whole passages keep a passage's questions together, as the benchmark has
them (a SQuAD paragraph with its five questions), and a training subset encodes fewer
contexts than as many questions drawn one by one. The same split, size and seed always give
the same subset (Python's `random.Random` with an integer seed is platform-independent).

A split no larger than the budget is kept whole, and then it is no subset: the job is the
same computation as without a budget and has the same key (docs/running.md, "Jobs, keys and job directories").
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from concur.data.model import Passage, Split
from concur.data.prepare import SPLITS

QUESTIONS = "questions"  # keys of one split's entry in a job's `subset`
SEED = "seed"


@dataclass(frozen=True)
class Budget:
    """How many questions of each split every job of a grid sees (None: the whole split)."""

    train_questions: int | None = None
    test_questions: int | None = None
    seed: int = 0
    benches: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # benchmark id -> its own {count field: n}

    def for_bench(self, bench_id: str) -> Budget:
        """The budget of one benchmark's jobs: the study's counts with that benchmark's own in their place."""
        own = self.benches.get(bench_id)
        return replace(self, benches={}, **own) if own else replace(self, benches={})

    def limits(self) -> dict[str, int | None]:
        return {"train": self.train_questions, "test": self.test_questions}

    def subset(self, manifest: Mapping[str, Any]) -> dict[str, dict[str, int]]:
        """What this budget cuts from a prepared benchmark: `{split: {"questions": n, "seed": s}}` for each split it makes smaller.

        Read from the manifest's question counts, so a job's key is known without loading its data.
        """
        cut = {}
        for split, limit in self.limits().items():
            if limit is not None and limit < manifest["splits"][split][QUESTIONS]:
                cut[split] = {QUESTIONS: limit, SEED: self.seed}
        return cut


def take_subset(split: Split, questions: int, seed: int) -> Split:
    """`questions` questions of `split`: whole passages in a seeded order, at most one passage cut (see the module)."""
    if questions >= split.n_questions:
        return split
    order = list(range(split.n_passages))
    random.Random(seed).shuffle(order)
    kept: dict[int, int] = {}  # passage index -> how many of its first questions are kept
    remaining = questions
    for index in order:
        if remaining == 0:
            break
        take = min(len(split.passages[index].qas), remaining)
        if take:
            kept[index] = take
            remaining -= take
    passages = [
        Passage(context=passage.context, qas=passage.qas[: kept[index]], article=passage.article)
        for index, passage in enumerate(split.passages)
        if index in kept
    ]
    return Split(split.dataset, split.split, passages, Counter(split.dropped))


def apply_subset(splits: Mapping[str, Split], subset: Mapping[str, Mapping[str, int]]) -> tuple[dict[str, Split], dict[str, Any]]:
    """The splits a job sees under its `subset`, and what to record of each cut: sizes before and after.

    Runs in the job (worker side), so the approach never sees more than the subset.
    """
    seen: dict[str, Split] = {}
    record: dict[str, Any] = {}
    for name in SPLITS:
        whole = splits[name]
        cut = subset.get(name)
        if cut is None:
            seen[name] = whole
            continue
        part = take_subset(whole, cut[QUESTIONS], cut[SEED])
        seen[name] = part
        record[name] = {
            QUESTIONS: part.n_questions,
            "contexts": part.n_passages,
            SEED: cut[SEED],
            "of_questions": whole.n_questions,
            "of_contexts": whole.n_passages,
        }
    return seen, record

"""Do the non-pretrained readers really work? Train each on a benchmark, report EM next to a lexical baseline.

Run: `python -m bench.readers_check --bench babi-1` (the paper reports 100 EM for all ten
readers on bAbI task 1), or `--bench squad-dev-carved` (real SQuAD questions: 80% of the
MRQA SQuAD dev passages for training, 20% for testing; a built-in benchmark).
`--set epochs=30` overrides a hyperparameter of every approach that has it, and
`--set bidaf:optimizer='"adam"'` of one approach (values are JSON; they are printed with
the results); `--vector-std 0.35` sets every reader's `[model] offline_vector_std` (the
spread of the offline stand-in vectors); `--train-questions N` trains on a seeded sample of N questions;
`--test-questions N` tests on a seeded sample; `--precision bf16` trains and predicts under bf16
autocast; `--log` prints the loss as training goes. Prints one row per approach: EM, F1,
trainable parameters, training time, the loss at the start and at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import time
from pathlib import Path

import torch

from concur.approaches.base import RunContext, build_approach
from concur.approaches.precision import PRECISIONS, device_precision_problem
from concur.approaches.reader.settings import with_spacy_pipeline
from concur.baselines import lexical_overlap_answers
from concur.data.model import Split
from concur.data.prepare import prepare
from concur.data.sources import SourceLocator
from concur.data.transforms import downsample
from concur.errors import ConcurError
from concur.metrics import evaluate
from concur.registry.registry import default_registry
from concur.workspace import Workspace, data_roots

# The lexical baseline's setting (concur.baselines): spans of up to 2 tokens, words within 10 tokens.
BASELINE_WINDOW, BASELINE_MAX_LENGTH = 10, 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="babi-1")
    parser.add_argument("--approaches", default="", help="comma-separated approach ids (default: the ten non-pretrained study readers)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="hyperparameter override (JSON value)")
    parser.add_argument("--train-questions", type=int, default=0, help="train on a seeded sample of this many questions")
    parser.add_argument("--test-questions", type=int, default=0, help="test on a seeded sample of this many questions")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help="as `concur run --precision` (bf16: CPU autocast too)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vector-std", type=float, default=None, help="every reader's [model] offline_vector_std (default: each spec's)")
    parser.add_argument("--vectors", type=Path, default=None, help="a GloVe/fastText file (default: each spec's offline stand-in)")
    parser.add_argument("--spacy-pipeline", default=None, help="spaCy pipeline (package or directory) for the with-features readers")
    parser.add_argument("--source-dir", type=Path, action="append", default=[])
    parser.add_argument("--log", action="store_true", help="print each approach's training log (loss every 1/50 of the steps), timestamped")
    args = parser.parse_args()
    problem = device_precision_problem(args.device, args.precision)
    if problem is not None:
        parser.error(f"--precision {args.precision}: {problem}")
    torch.set_num_threads(args.threads)
    overrides = {name: json.loads(value) for name, value in (item.split("=", 1) for item in args.set)}  # [approach:]name
    registry = default_registry([Path(__file__).parent / "checks"])
    if args.approaches:
        specs = [registry.approach(name) for name in args.approaches.split(",")]
    else:
        specs = [registry.approach(spec.id) for spec in default_registry().approaches() if spec.family == "non-pretrained"]
    workspace = Workspace.resolve()
    args.cache_dir = workspace.cache_dir
    locator = SourceLocator(tuple(data_roots(tuple(args.source_dir))), workspace.cache_dir)
    prepared, _ = prepare(registry.benchmark(args.bench), locator, workspace.data_dir)
    train, test = prepared.load("train"), prepared.load("test")
    if args.train_questions:
        train = downsample(train, questions=args.train_questions, seed=args.seed)
    if args.test_questions:
        test = downsample(test, questions=args.test_questions, seed=args.seed)
    gold = {question.qid: question.answers for _, question in test.questions()}
    print(f"machine: {platform.machine()}, {args.threads} threads, {args.device}, precision {args.precision}, torch {torch.__version__}")
    print(f"{args.bench}: train {train.n_questions} questions / {train.n_passages} passages, test {test.n_questions} / {test.n_passages}")
    if overrides:
        print(f"overrides: {overrides}")
    if args.vector_std is not None:
        print(f"offline_vector_std: {args.vector_std}")
    baseline = evaluate(gold, lexical_overlap_answers(test, BASELINE_WINDOW, BASELINE_MAX_LENGTH))
    print(f"{'approach':24s} {'EM':>6s} {'F1':>6s} {'params':>11s} {'train s':>8s}  loss first -> last  vectors")
    print(f"{'lexical-overlap':24s} {baseline.exact_match:6.1f} {baseline.f1:6.1f} {0:11,d} {0:8.0f}")
    for spec in specs:
        print(_row(spec, overrides, train, test, gold, args), flush=True)


def _row(spec, overrides: dict, train: Split, test: Split, gold: dict, args: argparse.Namespace) -> str:
    shared = {name: value for name, value in overrides.items() if ":" not in name and name in spec.hparams}
    own = {name.split(":", 1)[1]: value for name, value in overrides.items() if name.startswith(f"{spec.id}:")}
    hparams = {**spec.hparams, **shared, **own}
    if args.vector_std is not None:
        spec = dataclasses.replace(spec, model={**spec.model, "offline_vector_std": args.vector_std})
    approach = build_approach(with_spacy_pipeline(spec, args.spacy_pipeline), hparams)
    started = time.perf_counter()

    def log(line: str) -> None:
        if args.log:
            print(f"  {spec.id} {time.perf_counter() - started:6.0f}s  {line}", flush=True)

    context = RunContext(
        device=args.device, seed=args.seed, log=log, model_path=args.vectors, cache_dir=args.cache_dir, precision=args.precision
    )
    report = approach.train(train, context)
    seconds = time.perf_counter() - started
    scores = evaluate(gold, approach.predict(test, context))
    details = report.details
    losses = f"{report.losses[0]:7.3f} -> {report.losses[-1]:7.3f}"
    tagger = f"  tagger {details['tagger']}" if details["tagger"] else ""
    row = f"{spec.id:24s} {scores.exact_match:6.1f} {scores.f1:6.1f} {details['parameters']:11,d} {seconds:8.0f}"
    return f"{row}  {losses}  {details['word_vectors']} (std {details['word_vector_std']:.2f}){tagger}"


if __name__ == "__main__":
    try:
        main()
    except ConcurError as error:  # a wrong name, a missing extra or a bad file: the message says which, no traceback
        raise SystemExit(f"error: {error}") from None

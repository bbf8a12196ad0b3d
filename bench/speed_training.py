"""Training speed of concur's hf-span against transformers' Trainer: same model, data and hyperparameters.

Run: `python -m bench.speed_training [--train-questions 512] [--test-questions 500] [--epochs 1]
[--precision auto|fp32|bf16] [--rounds 1] [--new-seed-each-round] [--out bench/results/speed-training.json]`.

Three systems fine-tune the same weights (minilm-l6's, --model-path, or with --random-weights a
bert-base-sized BERT drawn at random, for speed on a GPU) on the same questions:
- `concur`: the hf-span approach, as `concur run` trains it;
- `trainer-fast`: a plain `transformers.Trainer` script with its fast settings: dynamic padding
  (DataCollatorWithPadding), length-grouped batches, fused AdamW, SDPA attention;
- `trainer-pad384`: the same script with the transformers QA example's settings: every window
  padded to `max_seq_length`, random batches;
- `concur-stock-kernels` (only when asked for): concur with transformers' SDPA attention and
  PyTorch's dropout instead of its own (concur.approaches.hf_span.attention, .dropout; hf-span's
  `TrainingVariant(stock_kernels=True)`), which shows what those buy (on CUDA: PyTorch's own choice
  of attention backend, cuDNN's included);
- `concur-cuda-graphs` (only when asked for, CUDA only): concur with `--cuda-graphs`, each batch
  shape's training piece recorded once as a CUDA graph and replayed (concur.approaches.hf_span.graphs);
- `concur-trainer-decoding` (only when asked for): concur's training, then its model's answers found
  as the Trainer script finds them (the tokenizer's overlapping windows, the QA example's post-processing);
  a seed trains the same model as `concur`'s run of that seed, so the pair of rows separates decoding from
  training in an EM difference (its eval time includes concur's own prediction as well).
All three use the spec's hyperparameters (learning rate, batch, warm-up, decay, clipping, Adam's
epsilon, window length and stride) and the same precision: `auto` is fp32 on the CPU and bf16
autocast on CUDA (Trainer's `bf16=True`), `bf16` is bf16 autocast on both. Data: the two sides of
`--benchmark` (default `squad-dev-carved`: SQuAD dev, the MRQA file in ../shared/data or --source-dir,
carved by passage; any registry benchmark with its sources at hand, such as `squadshifts-reddit-carved`),
prepared once for every system, then seeded samples of each side.

Each (round, system) runs in its own process, interleaved, so one run's warm caches and memory
do not help another and peak memory is the process's own. Per system: train examples/s (windows
through the optimisation loop / its seconds; for Trainer, `train()`), eval questions/s (windows,
forward passes and answer decoding / their seconds), peak memory (max RSS on the CPU, allocated
memory on CUDA), EM and F1 on the test questions, and the whole run's seconds (loading, features,
training, prediction) with its setup (all but training and prediction). For concur also the steady train rate
(after the first quarter of the steps: CUDA graphs recorded, `steady_rate`) and the shapes it recorded. Both
clocks start after the imports a forked concur worker finds done (`import_before_the_clock`). Writes the
results as JSON (`--out`) and prints a table with concur's ratios. With `--new-seed-each-round`, round r runs
with seed `--seed` + r (head initialisation, dropout, batch order; the questions are the same whenever they are
the whole carved split), so EM parity is measured over seeds: each seed's EM difference, and the seed spread of
every system's EM to judge it by (`bench.seed_parity` pools the seeds of several runs' JSON).
Trainer needs `accelerate` (in concur's `test` extra: `pip install -e '.[test,minilm]'`). The Trainer script is
`bench.trainer_script`, and what a run is given and reports is `bench.training_runs`.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench import child_environment, module_command, round_ratios, seed_parity
from bench.benchmark_sides import DEFAULT_BENCHMARK, benchmark_sides
from bench.machine import cpu_features, cpu_name, git_commit
from bench.trainer_script import run_trainer, trainer_style_predict
from bench.training_runs import APPROACH, Config, Measured, benchmark_splits, measure_run
from concur.approaches.hf_span.variant import HF_SPAN_TRAINING, TrainingVariant  # these two import neither torch
from concur.approaches.precision import PRECISIONS  # nor transformers
from concur.devices import usable_cores
from concur.errors import closest

SYSTEMS = ("concur", "trainer-fast", "trainer-pad384")
SHARING_SYSTEMS = ("concur", "concur-cuda-graphs")  # what --sharing can start several of at once
ABLATIONS = ("concur-stock-kernels", "concur-cuda-graphs", "concur-trainer-decoding")
STEP_LINE = re.compile(r"\bstep (\d+)/(\d+)\b")  # concur.approaches.loss_curve's log line
STEADY_FROM = 0.25  # the steady rate counts the steps after this share of the run


# Measures whose concur/other ratio is also taken within each round (round_ratios); the whole run as runs per second.
BY_ROUND: dict[str, Callable[[Measured], float]] = {
    "train": lambda run: run.train_rate,
    "eval": lambda run: run.eval_rate,
    "whole run": lambda run: 1 / run.total_seconds,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default=DEFAULT_BENCHMARK, help="the registry benchmark whose sides are trained and tested on")
    parser.add_argument("--train-questions", type=int, default=512)
    parser.add_argument("--test-questions", type=int, default=500)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--learning-rate", type=float, default=None, help="default: the approach spec's")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the approach spec's train_batch_size")
    parser.add_argument("--precision", choices=PRECISIONS, default="auto")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, from {', '.join(SYSTEMS + ABLATIONS)}")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved repetitions of every system")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=usable_cores())
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--new-seed-each-round",
        action="store_true",
        help="round r runs with seed --seed + r: EM parity over seeds, each seed's EM difference paired",
    )
    parser.add_argument("--model-path", type=Path, default=None, help="default: the weights minilm-l6 ships with")
    parser.add_argument(
        "--random-weights",
        action="store_true",
        help="train a bert-base-sized BERT (transformers' BertConfig defaults) from seeded random weights, with the tokenizer of "
        "--model-path (the same bert-base-uncased vocabulary): speed only, its EM means nothing",
    )
    parser.add_argument("--source-dir", type=Path, action="append", default=[])
    parser.add_argument(
        "--sharing",
        type=_job_counts,
        default=[],
        help="comma-separated job counts, e.g. 2,4: afterwards, that many concur runs at once on the device (seeds from --seed, "
        "--threads split between them), as a grid packs small jobs onto one GPU; reports jobs/hour against one at a time",
    )
    parser.add_argument(
        "--sharing-systems",
        default="concur",
        help=f"comma-separated, from {', '.join(SHARING_SYSTEMS)}: which concur runs --sharing starts together, each system's in turn",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/speed-training.json"))
    parser.add_argument("--child", choices=SYSTEMS + ABLATIONS, help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        config = Config(**json.loads(args.config))
        print(json.dumps(asdict(CHILDREN[args.child](config))))
        return
    systems = _system_names("--systems", args.systems, SYSTEMS + ABLATIONS)
    sharing_systems = _system_names("--sharing-systems", args.sharing_systems, SHARING_SYSTEMS)
    if "concur-cuda-graphs" in systems + sharing_systems and not args.device.startswith("cuda"):
        raise SystemExit(f"concur-cuda-graphs records CUDA graphs: it needs --device cuda, not {args.device}")
    with tempfile.TemporaryDirectory(prefix="speed-training-") as scratch:
        config = config_from_args(args, Path(scratch))
        _benchmark(args, systems, sharing_systems, config)


def _system_names(option: str, text: str, known: tuple[str, ...]) -> list[str]:
    """The comma-separated system names of `option`, each one of `known`; else the exit message names the closest."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise SystemExit(f"{option} names no system; choose from {', '.join(known)}")
    unknown = sorted(set(names) - set(known))
    if unknown:
        hints = [f"{name!r} (did you mean {hint!r}?)" if (hint := closest(name, known)) else repr(name) for name in unknown]
        raise SystemExit(f"unknown system {', '.join(hints)} in {option}; choose from {', '.join(known)}")
    return names


def _benchmark(args: argparse.Namespace, systems: list[str], sharing_systems: list[str], config: Config) -> None:
    machine = _machine(config)
    print(f"machine: {machine['device']}, {config.threads} threads; torch {machine['torch']}, transformers {machine['transformers']}")
    print(f"model: {config.model_path}")
    questions = f"{config.train_questions} train / {config.test_questions} test questions"
    print(f"data: {questions} of {config.benchmark}; {json.dumps(config.hparams)}")
    runs: list[Measured] = []
    for round_ in range(args.rounds):
        round_config = replace(config, seed=config.seed + round_) if args.new_seed_each_round else config
        for system in systems:
            measured = _run_child(system, round_, round_config)
            runs.append(measured)
            print(
                f"round {round_ + 1}/{args.rounds} seed {round_config.seed} {system:15s} train {measured.train_rate:7.1f} windows/s  "
                f"eval {measured.eval_rate:6.1f} q/s  EM {measured.em:5.1f}  total {measured.total_seconds:6.1f} s"
                + (f"  ({measured.graph_shapes} shapes recorded)" if measured.graph_shapes else ""),
                flush=True,
            )
    summary = _summary(runs, systems)
    sharing = [_shared(config, jobs, system) for system in sharing_systems for jobs in args.sharing]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {"machine": machine, "config": asdict(config), "runs": [asdict(r) for r in runs], "summary": summary, "sharing": sharing}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(_table(summary, systems))
    print(f"written: {args.out}")


def _job_counts(text: str) -> list[int]:
    """`--sharing`'s comma-separated job counts, each at least 2."""
    counts = [part.strip() for part in text.split(",") if part.strip()]
    if not all(part.isdigit() and int(part) >= 2 for part in counts):
        raise argparse.ArgumentTypeError(f"expected comma-separated job counts of at least 2, e.g. 2,4; got {text!r}")
    return [int(part) for part in counts]


def config_from_args(args: argparse.Namespace, scratch: Path) -> Config:
    from concur.registry.registry import default_registry

    data_dir = scratch / "data"
    sides = benchmark_sides(args.benchmark, args.source_dir, data_dir)  # prepared here, so each system only reads it
    for option, wanted, side in zip(("--train-questions", "--test-questions"), (args.train_questions, args.test_questions), sides):
        if not 0 < wanted <= side.n_questions:
            raise SystemExit(f"{option} {wanted}: ask for 1 to {side.n_questions:,} ({args.benchmark}'s {side.split} side)")
    hparams = dict(default_registry().approach(APPROACH).hparams)
    hparams["epochs"] = args.epochs
    if args.learning_rate is not None:
        hparams["learning_rate"] = args.learning_rate
    if args.batch_size is not None:
        hparams["train_batch_size"] = args.batch_size
    model_path = args.model_path or _shipped_weights()
    if args.random_weights:
        model_path = _random_bert_base(model_path, scratch / "random-bert-base", args.seed)
    return Config(
        benchmark=args.benchmark,
        data_dir=str(data_dir),
        model_path=str(model_path),
        train_questions=args.train_questions,
        test_questions=args.test_questions,
        hparams=hparams,
        precision=args.precision,
        device=args.device,
        threads=args.threads,
        seed=args.seed,
    )


def _shipped_weights() -> Path:
    import importlib.resources

    from concur.approaches.hf_span.loading import model_settings
    from concur.registry.registry import default_registry

    settings = model_settings(default_registry().approach(APPROACH))
    assert settings.package is not None
    return Path(str(importlib.resources.files(settings.package) / settings.package_subdir))


def _random_bert_base(tokenizer_path: Path, directory: Path, seed: int) -> Path:
    """A bert-base-sized span model with seeded random weights, saved with `tokenizer_path`'s tokenizer so every
    system loads it alike. BertConfig's defaults are bert-base-uncased's sizes (12 layers, 768 wide, 12 heads)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForQuestionAnswering

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    BertForQuestionAnswering(BertConfig(vocab_size=tokenizer.vocab_size)).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def _machine(config: Config) -> dict[str, Any]:
    import torch
    import transformers

    if config.device.startswith("cuda"):
        device = torch.cuda.get_device_name()
    else:
        device = cpu_name()
    return {
        "device": device,
        "threads": config.threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "cpu_features": cpu_features(),
        "commit": git_commit(),
    }


def _run_child(system: str, round_: int, config: Config) -> Measured:
    return _child_result(system, round_, _start_child(system, config))


def _start_child(system: str, config: Config) -> subprocess.Popen[str]:
    command = module_command(__spec__.name, "--child", system, "--config", json.dumps(asdict(config)))
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=child_environment())


def _child_result(system: str, round_: int, child: subprocess.Popen[str]) -> Measured:
    output, _ = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"{system} failed (exit {child.returncode}); its output is above")
    return Measured(**{**json.loads(output.strip().splitlines()[-1]), "round": round_})


def _shared(config: Config, jobs: int, system: str) -> dict[str, Any]:
    """`jobs` runs of `system` started together on one device, each with its share of the threads and its own seed."""
    shares = [replace(config, seed=config.seed + index, threads=max(1, config.threads // jobs)) for index in range(jobs)]
    started = time.perf_counter()
    children = [_start_child(system, share) for share in shares]
    runs = [_child_result(system, 0, child) for child in children]
    seconds = time.perf_counter() - started
    print(
        f"{jobs} {system} jobs at once: {seconds:.1f} s, {jobs * 3600 / seconds:.0f} jobs/hour, "
        f"train {sum(run.train_windows for run in runs) / max(run.train_seconds for run in runs):.1f} windows/s together",
        flush=True,
    )
    return {
        "system": system,
        "jobs": jobs,
        "wall_seconds": seconds,
        "jobs_per_hour": jobs * 3600 / seconds,
        "runs": [asdict(run) for run in runs],
    }


def _summary(runs: list[Measured], systems: list[str]) -> dict[str, Any]:
    """Median of each measure per system, and concur's ratios against each Trainer setting."""
    medians: dict[str, dict[str, Any]] = {}
    for system in systems:
        mine = [run for run in runs if run.system == system]
        medians[system] = {
            "train_windows_per_s": statistics.median(run.train_rate for run in mine),
            "steady_train_windows_per_s": _median_or_none([run.steady_train_rate for run in mine]),
            "eval_questions_per_s": statistics.median(run.eval_rate for run in mine),
            "total_seconds": statistics.median(run.total_seconds for run in mine),
            "setup_seconds": statistics.median(run.setup_seconds for run in mine),
            "peak_memory_mb": statistics.median(run.peak_memory_mb for run in mine),
            "em": statistics.median(run.em for run in mine),
            "em_by_seed": seed_parity.by_seed(map(asdict, mine), system),
            "f1": statistics.median(run.f1 for run in mine),
            "optimizer_steps": statistics.median(run.optimizer_steps for run in mine),
        }
    ratios = {}
    if "concur" in medians:
        ours = medians["concur"]
        for other in (system for system in systems if system != "concur"):  # an ablation's ratio: what concur's kernels buy
            theirs = medians[other]
            ratios[f"concur/{other}"] = {
                "train": ours["train_windows_per_s"] / theirs["train_windows_per_s"],
                "eval": ours["eval_questions_per_s"] / theirs["eval_questions_per_s"],
                "total": theirs["total_seconds"] / ours["total_seconds"],
                "em_difference": ours["em"] - theirs["em"],
                "em_difference_by_seed": seed_parity.paired(ours["em_by_seed"], theirs["em_by_seed"]),
                "by_round": {
                    name: round_ratios.by_round(_per_round(runs, "concur", measure), _per_round(runs, other, measure))
                    for name, measure in BY_ROUND.items()
                },
            }
    return {"medians": medians, "ratios": ratios}


def _per_round(runs: list[Measured], system: str, measure: Callable[[Measured], float]) -> dict[int, float]:
    return {run.round: measure(run) for run in runs if run.system == system}


def _median_or_none(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def _table(summary: dict[str, Any], systems: list[str]) -> str:
    head = (
        "| system | train windows/s | steady (after the first quarter) | eval questions/s | whole run (s) | of it setup (s) | "
        f"peak memory (MB) | steps | EM | F1 |\n|{'---|' * 10}"
    )
    rows = [
        f"| {system} | {m['train_windows_per_s']:.1f} | {_steady(m)} | {m['eval_questions_per_s']:.1f} | {m['total_seconds']:.1f} | "
        f"{m['setup_seconds']:.1f} | "
        f"{m['peak_memory_mb']:.0f} | {m['optimizer_steps']:.0f} | {m['em']:.1f} | {m['f1']:.1f} |"
        for system, m in ((s, summary["medians"][s]) for s in systems)
    ]
    ratio_rows = [
        f"| {name} | {r['train']:.2f}x | | {r['eval']:.2f}x | {r['total']:.2f}x | | | | {r['em_difference']:+.1f} | |"
        for name, r in summary["ratios"].items()
    ]
    by_round = [
        f"{name} round by round: " + "; ".join(f"{measure} {round_ratios.describe(r['by_round'][measure])}" for measure in BY_ROUND)
        for name, r in summary["ratios"].items()
    ]
    return "\n".join([head, *rows, *ratio_rows, *by_round, *_seed_lines(summary, systems)])


def _seed_lines(summary: dict[str, Any], systems: list[str]) -> list[str]:
    """With several seeds: each system's EM by seed with their mean and standard deviation, then each EM difference by seed."""
    if len(summary["medians"][systems[0]]["em_by_seed"]) < 2:
        return []
    by_system = [seed_parity.system_line(system, summary["medians"][system]["em_by_seed"]) for system in systems]
    return by_system + [seed_parity.difference_line(name, ratio["em_difference_by_seed"]) for name, ratio in summary["ratios"].items()]


def _steady(medians: dict[str, Any]) -> str:
    steady = medians["steady_train_windows_per_s"]
    return "-" if steady is None else f"{steady:.1f}"


def run_concur(config: Config, system: str = "concur") -> Measured:
    """concur's hf-span as a job trains it; `system` names the variant (stock kernels, CUDA graphs, Trainer's decoding)."""
    import torch

    torch.set_num_threads(config.threads)
    import_before_the_clock()
    variant = TrainingVariant(stock_kernels=system == "concur-stock-kernels")
    run = train_and_predict(config, cuda_graphs=system == "concur-cuda-graphs", variant=variant)
    if system == "concur-trainer-decoding":
        run = replace(run, predictions=trainer_style_predict(run.model, run.tokenizer, run.test, config))
    report = run.report
    trained = (round(report.train_features * config.hparams["epochs"]), report.optimizer_steps, report.details["fit_seconds"])
    measured = measure_run(system, config, run.test, run.predictions, trained, run.started, run.predicting)
    try:
        steady: float | None = steady_rate(run.log, config.hparams["train_batch_size"])
    except ValueError:  # a run of a few steps has no steady part
        steady = None
    return replace(measured, steady_train_rate=steady, graph_shapes=len(report.details.get("cuda_graph_shapes", ())))


@dataclass(frozen=True)
class ConcurRun:
    """What one hf-span job did, for the scripts that time it."""

    test: Any  # the test split
    report: Any  # the approach's TrainReport
    predictions: dict[str, str]
    model: Any  # the fine-tuned model
    tokenizer: Any
    log: list[tuple[float, str]]  # (perf_counter seconds, line) of every line the job logged
    started: float  # perf_counter when the clock started (the data already read)
    predicting: float  # perf_counter when prediction started


def train_and_predict(config: Config, cuda_graphs: bool = False, variant: TrainingVariant = HF_SPAN_TRAINING) -> ConcurRun:
    """Train minilm-l6's hf-span approach (or `config.model_path`'s weights) and predict, as `concur run` does;
    `variant` departs from hf-span's training (by default in nothing)."""
    from concur.approaches.base import RunContext, build_approach
    from concur.approaches.hf_span.approach import HFSpanApproach
    from concur.registry.registry import default_registry

    train, test = benchmark_splits(config)
    log: list[tuple[float, str]] = []
    started = time.perf_counter()
    approach = build_approach(default_registry().approach(APPROACH), config.hparams)
    assert isinstance(approach, HFSpanApproach), f"{APPROACH} is an hf-span approach"
    context = RunContext(
        config.device,
        config.seed,
        lambda line: log.append((time.perf_counter(), line)),
        model_path=Path(config.model_path),
        precision=config.precision,
        cuda_graphs=cuda_graphs,
    )
    report = approach.train(train, context, variant)
    predicting = time.perf_counter()
    predictions = approach.predict(test, context)
    return ConcurRun(test, report, predictions, approach.fine_tuned.model, approach.fine_tuned.tokenizer, log, started, predicting)


def steady_rate(log: list[tuple[float, str]], batch_size: int) -> float:
    """Windows per second between the first logged step at or past `STEADY_FROM` of the run and the last logged step:
    the rate once start-up work (CUDA graphs recorded for new batch shapes, kernels compiled) is mostly behind.
    Each logged step has read its loss back, so it has waited for the device."""
    steps = [(seconds, int(match.group(1)), int(match.group(2))) for seconds, line in log if (match := STEP_LINE.search(line))]
    if not steps:
        raise ValueError("the training loop logged no step")
    total = steps[-1][2]
    later = [step for step in steps if step[1] >= STEADY_FROM * total]
    (start, first, _), (end, last, _) = later[0], later[-1]
    if last == first:
        raise ValueError(f"too few logged steps past {STEADY_FROM:.0%} of {total} to time")
    return (last - first) * batch_size / (end - start)


def import_before_the_clock() -> None:
    """Import what a concur job finds imported when its worker is forked warm (concur.runner.execution.zygote): PRELOAD and
    its approach's modules, transformers' `modeling_utils` among them. The Trainer script's clock also starts after
    its `from transformers import ...`, which loads that code (seconds of a cold process either way); both clocks
    still count importing the model family's own module (`modeling_bert`), as `from_pretrained` loads it."""
    import importlib

    from concur.registry.registry import default_registry
    from concur.runner.execution.zygote import PRELOAD
    from concur.runner.scheduling.worker_pool import worker_modules

    for module in (*PRELOAD, *worker_modules([default_registry().approach(APPROACH)])):
        importlib.import_module(module)


CHILDREN: dict[str, Callable[[Config], Measured]] = {
    "concur": run_concur,
    "concur-stock-kernels": lambda config: run_concur(config, "concur-stock-kernels"),
    "concur-cuda-graphs": lambda config: run_concur(config, "concur-cuda-graphs"),
    "concur-trainer-decoding": lambda config: run_concur(config, "concur-trainer-decoding"),
    "trainer-fast": lambda config: run_trainer(config, pad_to_max=False),
    "trainer-pad384": lambda config: run_trainer(config, pad_to_max=True),
}


if __name__ == "__main__":
    main()

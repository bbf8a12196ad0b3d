"""Training speed of concur's hf-span against transformers' Trainer: same model, data and hyperparameters.

Run: `python analysis/speed_training.py [--train-questions 512] [--test-questions 500] [--epochs 1]
[--precision auto|fp32|bf16] [--rounds 1] [--new-seed-each-round] [--out runs/bench/speed-training.json]`.

Three systems fine-tune the same weights (minilm-l6's, --model-path, or with --random-weights a
bert-base-sized BERT drawn at random, for speed on a GPU) on the same questions:
- `concur`: the hf-span approach, as `concur run` trains it;
- `trainer-fast`: a plain `transformers.Trainer` script with its fast settings: dynamic padding
  (DataCollatorWithPadding), length-grouped batches, fused AdamW, SDPA attention;
- `trainer-pad384`: the same script with the transformers QA example's settings: every window
  padded to `max_seq_length`, random batches;
- `concur-stock-kernels` (only when asked for): concur with transformers' SDPA attention and
  PyTorch's dropout instead of its own (concur.approaches.hf_span.attention, .dropout), which
  shows what those buy (on CUDA: PyTorch's own choice of attention backend, cuDNN's included);
- `concur-cuda-graphs` (only when asked for, CUDA only): concur with `--cuda-graphs`, each batch
  shape's training piece recorded once as a CUDA graph and replayed (concur.approaches.hf_span.graphs);
- `concur-trainer-decoding` (only when asked for): concur's training, then its model's answers found
  as the Trainer script finds them (the tokenizer's overlapping windows, the QA example's post-processing);
  a seed trains the same model as `concur`'s run of that seed, so the pair of rows separates decoding from
  training in an EM difference (its eval time includes concur's own prediction as well);
- `concur-trainer-order` (only when asked for): concur with its training batches in the order Trainer's
  length-grouped sampler gives them (`trainer_order_batches`: the same pools sorted by length, but the
  batches not shuffled across pools) instead of concur's shuffled batches;
- `concur-trainer-data` (only when asked for): concur trained on the Trainer script's training windows
  (`trainer_train_features`: the tokenizer's overlapping windows, Trainer's labels) in Trainer's batch order,
  so that what still separates it from `trainer-fast` is concur's training code and kernels, not its data;
- `concur-padding-in-loss` (only when asked for): `concur-trainer-order` with the padding positions of a batch
  kept in its loss's softmax (`span_loss_over_padding`), as transformers' span head computes it, instead of left
  out; paired with `concur-trainer-order`'s runs, it shows what the padding alone changes;
- `concur-as-trainer` (only when asked for): all four of Trainer's parts at once (its windows and labels, its
  batch order, the padding in the loss, PyTorch's attention and dropout), so that only the random draws (the
  batch permutation, the dropout masks) still separate it from `trainer-fast`;
- `concur-trainer-replay` (only when asked for): `concur-as-trainer` drawing what Trainer draws (torch's generator
  seeded as Trainer seeds it, transformers' own length-grouped sampler) and predicting through the script's own
  `Trainer`: it trains the model `trainer-fast` trains, so a seed's EM should be that seed's `trainer-fast` EM.
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
every system's EM to judge it by (`seed_parity.py` pools the seeds of several runs' JSON).
Trainer needs `accelerate` (in concur's `test` extra: `pip install -e '.[test,minilm]'`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import round_ratios
import seed_parity
from benchmark_sides import DEFAULT_BENCHMARK, benchmark_sides

from concur.approaches.precision import PRECISIONS  # imports neither torch nor transformers
from concur.errors import closest

APPROACH = "minilm-l6"
SYSTEMS = ("concur", "trainer-fast", "trainer-pad384")
ABLATIONS = (
    "concur-stock-kernels",
    "concur-cuda-graphs",
    "concur-trainer-decoding",
    "concur-trainer-order",
    "concur-trainer-data",
    "concur-padding-in-loss",
    "concur-as-trainer",
    "concur-trainer-replay",
)
CPU_FEATURES = ("avx512f", "avx512_bf16", "amx_bf16")  # what bf16 on the CPU runs on, recorded with each result
STEP_LINE = re.compile(r"\bstep (\d+)/(\d+)\b")  # concur.approaches.loss_curve's log line
# transformers' LengthGroupedSampler: pools of at most 50 batches, fewer when that would leave under 4 pools.
TRAINER_POOL_BATCHES, TRAINER_MIN_POOLS = 50, 4
STEADY_FROM = 0.25  # the steady rate counts the steps after this share of the run
# The parts of the Trainer script's run each ablation puts into concur's (`take_trainers_parts`).
TRAINERS_PARTS: dict[str, tuple[str, ...]] = {
    "concur-stock-kernels": ("kernels",),
    "concur-trainer-decoding": ("decoding",),
    "concur-trainer-order": ("order",),
    "concur-trainer-data": ("order", "data"),
    "concur-padding-in-loss": ("order", "padding-in-loss"),
    "concur-as-trainer": ("order", "data", "padding-in-loss", "kernels"),
    "concur-trainer-replay": ("draws", "data", "padding-in-loss", "kernels", "trainer-predict"),
}


@dataclass(frozen=True)
class Config:
    """What every system of one benchmark run is given."""

    benchmark: str
    data_dir: str  # where `benchmark` is prepared, once for every system
    model_path: str
    train_questions: int
    test_questions: int
    hparams: dict[str, Any]
    precision: str
    device: str
    threads: int
    seed: int


@dataclass
class Measured:
    """One system's run."""

    system: str
    round: int
    train_windows: int
    optimizer_steps: int
    train_seconds: float
    eval_questions: int
    eval_seconds: float
    total_seconds: float
    peak_memory_mb: float
    em: float
    f1: float
    seed: int = 0
    steady_train_rate: float | None = None  # concur's windows/s after the first quarter of its steps (see steady_rate)
    graph_shapes: int = 0  # batch shapes concur recorded as CUDA graphs (concur-cuda-graphs)

    @property
    def train_rate(self) -> float:
        return self.train_windows / self.train_seconds

    @property
    def eval_rate(self) -> float:
        return self.eval_questions / self.eval_seconds

    @property
    def setup_seconds(self) -> float:
        """The whole run less training and prediction: loading the model, building windows, moving to the device."""
        return self.total_seconds - self.train_seconds - self.eval_seconds


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
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
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
    parser.add_argument("--out", type=Path, default=Path("runs/bench/speed-training.json"))
    parser.add_argument("--child", choices=SYSTEMS + ABLATIONS, help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        config = Config(**json.loads(args.config))
        print(json.dumps(asdict(CHILDREN[args.child](config))))
        return
    systems = [name.strip() for name in args.systems.split(",") if name.strip()]
    known = SYSTEMS + ABLATIONS
    if not systems:
        raise SystemExit(f"--systems names no system; choose from {', '.join(known)}")
    unknown = sorted(set(systems) - set(known))
    if unknown:
        hints = [f"{name!r} (did you mean {hint!r}?)" if (hint := closest(name, known)) else repr(name) for name in unknown]
        raise SystemExit(f"unknown system {', '.join(hints)}; choose from {', '.join(known)}")
    if "concur-cuda-graphs" in systems and not args.device.startswith("cuda"):
        raise SystemExit(f"concur-cuda-graphs records CUDA graphs: it needs --device cuda, not {args.device}")
    with tempfile.TemporaryDirectory(prefix="speed-training-") as scratch:
        config = config_from_args(args, Path(scratch))
        _benchmark(args, systems, config)


def _benchmark(args: argparse.Namespace, systems: list[str], config: Config) -> None:
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
    sharing = [_shared(config, jobs) for jobs in args.sharing]
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

    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").is_file() else []
    fields = {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in cpuinfo)}
    if config.device.startswith("cuda"):
        device = torch.cuda.get_device_name()
    else:
        device = fields.get("model name") or platform.processor() or platform.machine()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent)
    return {
        "device": device,
        "threads": config.threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "cpu_features": [flag for flag in CPU_FEATURES if flag in fields.get("flags", "").split()],
        "commit": commit.stdout.strip() or None,
    }


def _run_child(system: str, round_: int, config: Config) -> Measured:
    return _child_result(system, round_, _start_child(system, config))


def _start_child(system: str, config: Config) -> subprocess.Popen[str]:
    command = [sys.executable, __file__, "--child", system, "--config", json.dumps(asdict(config))]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def _child_result(system: str, round_: int, child: subprocess.Popen[str]) -> Measured:
    output, _ = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"{system} failed (exit {child.returncode}); its output is above")
    return Measured(**{**json.loads(output.strip().splitlines()[-1]), "round": round_})


def _shared(config: Config, jobs: int) -> dict[str, Any]:
    """`jobs` concur runs started together on one device, each with its share of the threads and its own seed."""
    shares = [replace(config, seed=config.seed + index, threads=max(1, config.threads // jobs)) for index in range(jobs)]
    started = time.perf_counter()
    children = [_start_child("concur", share) for share in shares]
    runs = [_child_result("concur", 0, child) for child in children]
    seconds = time.perf_counter() - started
    print(
        f"{jobs} concur jobs at once: {seconds:.1f} s, {jobs * 3600 / seconds:.0f} jobs/hour, "
        f"train {sum(run.train_windows for run in runs) / max(run.train_seconds for run in runs):.1f} windows/s together",
        flush=True,
    )
    return {"jobs": jobs, "wall_seconds": seconds, "jobs_per_hour": jobs * 3600 / seconds, "runs": [asdict(run) for run in runs]}


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


# ---- the systems, each run in its own process -------------------------------------------------------------------


def benchmark_splits(config: Config) -> tuple[Any, Any]:
    """Seeded samples of the benchmark's sides (the sides whole when the counts cover them)."""
    from concur.data.transforms import downsample

    train, test = benchmark_sides(config.benchmark, [], Path(config.data_dir))
    return downsample(train, config.train_questions, config.seed), downsample(test, config.test_questions, config.seed)


def gold_answers(test: Any) -> dict[str, list[str]]:
    return {question.qid: question.answers for _, question in test.questions()}


def _peak_memory_mb(device: str) -> float:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_concur(config: Config, system: str = "concur") -> Measured:
    """concur's hf-span as a job trains it; `system` names the variant (stock kernels, CUDA graphs)."""
    import torch

    torch.set_num_threads(config.threads)
    import_before_the_clock()
    parts = TRAINERS_PARTS.get(system, ())
    take_trainers_parts(parts, config.hparams, config.seed)
    run = train_and_predict(config, cuda_graphs=system == "concur-cuda-graphs")
    if "decoding" in parts:
        run = replace(run, predictions=trainer_style_predict(run.model, run.tokenizer, run.test, config))
    if "trainer-predict" in parts:
        with tempfile.TemporaryDirectory() as output_dir:
            trainer = _trainer(run.model, run.tokenizer, config, output_dir, pad_to_max=False)
            run = replace(run, predictions=_trainer_predict(trainer, run.test, run.tokenizer, config.hparams, False))
    report = run.report
    trained = (round(report.train_features * config.hparams["epochs"]), report.optimizer_steps, report.details["fit_seconds"])
    measured = _measured(system, config, run.test, run.predictions, trained, run.started, run.predicting)
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


def take_trainers_parts(parts: tuple[str, ...], hparams: dict[str, Any], seed: int) -> None:
    """Patch concur's hf-span, in this process, to do what the Trainer script does in each of `parts`: "kernels"
    (transformers' SDPA attention, PyTorch's dropout), "order" (`trainer_order_batches`), "draws" (Trainer's own
    batches and random stream, `trainers_draws_batches`), "padding-in-loss" (`span_loss_over_padding`), "data"
    (`trainer_train_features`, built with `hparams`). ("decoding" and "trainer-predict" are `run_concur`'s.)"""
    from concur.approaches import training
    from concur.approaches.hf_span import approach, loading, loss

    if "kernels" in parts:
        loading.register_attention = lambda: "sdpa"  # type: ignore[assignment]
        loading.use_fast_dropout = lambda model: 0  # type: ignore[assignment]
    if "draws" in parts:
        training.length_grouped_batches = trainers_draws_batches(seed)  # type: ignore[assignment]
    elif "order" in parts:
        training.length_grouped_batches = trainer_order_batches  # type: ignore[assignment]
    if "padding-in-loss" in parts:
        loss.span_loss = span_loss_over_padding  # type: ignore[assignment]
    if "data" in parts:
        approach.train_features = lambda split, tokenizer, hp, cache_dir: (trainer_train_features(split, tokenizer, hparams), False)  # type: ignore[assignment]


def span_loss_over_padding(start_logits: Any, end_logits: Any, attention_mask: Any, start_positions: Any, end_positions: Any) -> Any:
    """concur's span loss (`concur.approaches.hf_span.loss.span_loss`) with each softmax over every position of the
    padded batch, as `BertForQuestionAnswering` computes it: a window's padding takes a share of the probability."""
    import torch.nn.functional as F

    return (F.cross_entropy(start_logits.float(), start_positions) + F.cross_entropy(end_logits.float(), end_positions)) / 2


def trainer_order_batches(lengths: Any, batch_size: int, rng: Any) -> list[Any]:
    """One epoch's batches in the order transformers' `LengthGroupedSampler` gives them (concur's
    `length_grouped_batches` contract): a random permutation cut into pools of up to 50 batches (fewer when
    that leaves under 4 pools), each pool sorted longest first, the longest window of all swapped to the
    front, then the pools one after another. concur cuts the same pools and shuffles the batches as well."""
    import numpy as np

    from concur.approaches.batches import length_sorted_pools

    pool = max(1, min(len(lengths) // (batch_size * TRAINER_MIN_POOLS), TRAINER_POOL_BATCHES)) * batch_size
    pools = length_sorted_pools(lengths, rng.permutation(len(lengths)), pool)
    longest = int(np.argmax([lengths[members[0]] for members in pools]))
    pools[0][0], pools[longest][0] = pools[longest][0], pools[0][0]
    return _cut(np.concatenate(pools), batch_size)


def trainers_draws_batches(seed: int) -> Callable[[Any, int, Any], list[Any]]:
    """concur's `length_grouped_batches` contract, drawing what the Trainer script draws. Called as the first batch
    is needed, it seeds torch's generator as `Trainer` does (`set_seed`), takes the one number a DataLoader draws
    as it starts an epoch (its workers' base seed), then orders the windows with transformers' own
    `get_length_grouped_indices` (a permutation from that generator): Trainer's batches, and the dropout masks that
    follow drawn from where Trainer's are. One epoch only: a second would reseed."""

    def batches(lengths: Any, batch_size: int, rng: Any) -> list[Any]:
        import numpy as np
        import torch
        from transformers.trainer_pt_utils import get_length_grouped_indices

        torch.manual_seed(seed)
        torch.empty((), dtype=torch.int64).random_()
        return _cut(np.asarray(get_length_grouped_indices([int(length) for length in lengths], batch_size)), batch_size)

    return batches


def _cut(order: Any, batch_size: int) -> list[Any]:
    """An epoch's window order cut into consecutive batches, as a DataLoader cuts its sampler's order."""
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def train_and_predict(config: Config, cuda_graphs: bool = False) -> ConcurRun:
    """Train minilm-l6's hf-span approach (or `config.model_path`'s weights) and predict, as `concur run` does."""
    from concur.approaches.base import RunContext, build_approach
    from concur.registry.registry import default_registry

    train, test = benchmark_splits(config)
    log: list[tuple[float, str]] = []
    started = time.perf_counter()
    approach = build_approach(default_registry().approach(APPROACH), config.hparams)
    context = RunContext(
        config.device,
        config.seed,
        lambda line: log.append((time.perf_counter(), line)),
        model_path=Path(config.model_path),
        precision=config.precision,
        cuda_graphs=cuda_graphs,
    )
    report = approach.train(train, context)
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
    """Import what a concur job finds imported when its worker is forked warm (concur.runner.zygote): PRELOAD and
    its approach's modules, transformers' `modeling_utils` among them. The Trainer script's clock also starts after
    its `from transformers import ...`, which loads that code (seconds of a cold process either way); both clocks
    still count importing the model family's own module (`modeling_bert`), as `from_pretrained` loads it."""
    import importlib

    from concur.registry.registry import default_registry
    from concur.runner.pool import worker_modules
    from concur.runner.zygote import PRELOAD

    for module in (*PRELOAD, *worker_modules([default_registry().approach(APPROACH)])):
        importlib.import_module(module)


def _measured(
    system: str, config: Config, test: Any, predictions: dict[str, str], trained: tuple[int, int, float], started: float, predicting: float
) -> Measured:
    """One run's measures once its predictions are in: `trained` is (windows, optimiser steps, seconds of training)."""
    from concur.metrics import evaluate

    _synchronize(config.device)
    done = time.perf_counter()
    scores = evaluate(gold_answers(test), predictions)
    windows, steps, train_seconds = trained
    return Measured(
        system=system,
        round=0,
        train_windows=windows,
        optimizer_steps=steps,
        train_seconds=train_seconds,
        eval_questions=test.n_questions,
        eval_seconds=done - predicting,
        total_seconds=done - started,
        peak_memory_mb=_peak_memory_mb(config.device),
        em=scores.exact_match,
        f1=scores.f1,
        seed=config.seed,
    )


def _synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_trainer(config: Config, pad_to_max: bool) -> Measured:
    """A plain Trainer script, as one writes it from the transformers docs; `pad_to_max` gives the QA example's padding."""
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.set_num_threads(config.threads)
    hp = config.hparams
    train, test = benchmark_splits(config)
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(config.model_path)
    model = AutoModelForQuestionAnswering.from_pretrained(config.model_path, attn_implementation="sdpa", dtype=torch.float32)
    padding = "max_length" if pad_to_max else False
    train_features = _trainer_train_features(train, tokenizer, hp, padding)
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = _trainer(model, tokenizer, config, output_dir, pad_to_max, train_features)
        training = time.perf_counter()
        outcome = trainer.train()
        _synchronize(config.device)
        predicting = time.perf_counter()
        predictions = _trainer_predict(trainer, test, tokenizer, hp, padding)
        measured = _measured(
            "trainer-pad384" if pad_to_max else "trainer-fast",
            config,
            test,
            predictions,
            (round(len(train_features) * hp["epochs"]), outcome.global_step, predicting - training),
            started,
            predicting,
        )
    return measured


def _trainer(model: Any, tokenizer: Any, config: Config, output_dir: str, pad_to_max: bool, train_features: Any = None) -> Any:
    """The script's `Trainer`: the spec's hyperparameters, its fast settings (or with `pad_to_max` the QA example's)."""
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments, default_data_collator

    hp = config.hparams
    on_cuda = config.device.startswith("cuda")
    arguments = TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=hp["train_batch_size"],
        per_device_eval_batch_size=hp["eval_batch_size"],
        learning_rate=hp["learning_rate"],
        num_train_epochs=hp["epochs"],
        warmup_steps=hp["warmup_ratio"],  # a float below 1 is a ratio of the steps
        lr_scheduler_type=hp["lr_schedule"],
        weight_decay=hp["weight_decay"],
        adam_beta1=hp["adam_beta1"],
        adam_beta2=hp["adam_beta2"],
        adam_epsilon=hp["adam_epsilon"],
        max_grad_norm=hp["max_grad_norm"],
        optim="adamw_torch_fused",
        train_sampling_strategy="random" if pad_to_max else "group_by_length",
        bf16=config.precision == "bf16" or (config.precision == "auto" and on_cuda),
        use_cpu=not on_cuda,
        seed=config.seed,
        report_to="none",
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
    )
    collator = default_data_collator if pad_to_max else DataCollatorWithPadding(tokenizer)
    return Trainer(model=model, args=arguments, train_dataset=train_features, data_collator=collator, processing_class=tokenizer)


def _encode(questions: list[str], contexts: list[str], tokenizer: Any, hp: dict[str, Any], padding: str | bool) -> Any:
    """The QA example's windows: question then context, overflowing context in windows overlapping by `doc_stride`."""
    return tokenizer(
        [question.lstrip() for question in questions],
        contexts,
        truncation="only_second",
        max_length=hp["max_seq_length"],
        stride=hp["doc_stride"],
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding=padding,
    )


def _trainer_train_features(split: Any, tokenizer: Any, hp: dict[str, Any], padding: str | bool) -> list[dict[str, Any]]:
    """Windows labelled with the answer's first and last token, or the CLS token when the answer is outside."""
    pairs = [(passage, question) for passage, question in split.questions() if question.first_span is not None]
    encoded = _encode([q.question for _, q in pairs], [p.context for p, _ in pairs], tokenizer, hp, padding)
    features = []
    for index, sample in enumerate(encoded["overflow_to_sample_mapping"]):
        first_char, last_char = pairs[sample][1].first_span
        sequence = encoded.sequence_ids(index)
        offsets = encoded["offset_mapping"][index]
        context = [position for position, part in enumerate(sequence) if part == 1]
        start = end = 0
        if offsets[context[0]][0] <= first_char and offsets[context[-1]][1] > last_char:
            start = next(p for p in context if offsets[p][1] > first_char)
            end = next(p for p in reversed(context) if offsets[p][0] <= last_char)
        item = {name: encoded[name][index] for name in encoded if name not in ("offset_mapping", "overflow_to_sample_mapping")}
        features.append({**item, "start_positions": start, "end_positions": end})
    return features


def trainer_train_features(split: Any, tokenizer: Any, hp: dict[str, Any]) -> Any:
    """The Trainer script's training windows and labels (`_trainer_train_features`, unpadded) as concur's `TrainFeatures`."""
    from collections import Counter

    import numpy as np

    from concur.approaches.hf_span.features import IDS, TYPES, TrainFeatures, Windows

    rows = _trainer_train_features(split, tokenizer, hp, padding=False)
    windows = Windows()
    for row in rows:
        types = row.get("token_type_ids")
        windows.add(np.asarray(row["input_ids"], dtype=IDS), None if types is None else np.asarray(types, dtype=TYPES))
    questions = sum(1 for _, question in split.questions() if question.first_span is not None)
    return TrainFeatures(
        windows,
        np.asarray([row["start_positions"] for row in rows], dtype=np.int64),
        np.asarray([row["end_positions"] for row in rows], dtype=np.int64),
        questions,
        Counter(),
    )


def _trainer_predict(trainer: Any, split: Any, tokenizer: Any, hp: dict[str, Any], padding: str | bool) -> dict[str, str]:
    """The QA example's windows through `trainer.predict`, then its post-processing (`trainer_style_answers`)."""
    import numpy as np

    pairs, encoded, features = _trainer_test_windows(split, tokenizer, hp, padding)
    # With length grouping, Trainer (transformers 5) evaluates in a length-grouped order too and predict()
    # returns the logits in that order; the sampler is seeded, so asking it again gives the order to undo
    order = np.asarray(list(trainer._get_eval_sampler(features)))
    output = trainer.predict(features)
    start_logits, end_logits = (np.empty_like(logits) for logits in output.predictions)
    start_logits[order], end_logits[order] = output.predictions
    return trainer_style_answers(pairs, encoded, list(start_logits), list(end_logits), hp)


def _trainer_test_windows(
    split: Any, tokenizer: Any, hp: dict[str, Any], padding: str | bool
) -> tuple[list[Any], Any, list[dict[str, Any]]]:
    """`(passage and question pairs, the tokenizer's encoding, one model-input dict per window)` of a test split."""
    pairs = list(split.questions())
    encoded = _encode([q.question for _, q in pairs], [p.context for p, _ in pairs], tokenizer, hp, padding)
    names = [name for name in encoded if name not in ("offset_mapping", "overflow_to_sample_mapping")]
    return pairs, encoded, [{name: encoded[name][index] for name in names} for index in range(len(encoded["input_ids"]))]


def trainer_style_answers(
    pairs: list[Any], encoded: Any, start_logits: list[Any], end_logits: list[Any], hp: dict[str, Any]
) -> dict[str, str]:
    """The QA example's post-processing: per question, the best valid span over its windows' n-best starts and ends
    (both in the context, end not before start, at most `max_answer_length` tokens), scored by the sum of its logits."""
    import numpy as np

    best: dict[str, tuple[float, str]] = {}
    for index, sample in enumerate(encoded["overflow_to_sample_mapping"]):
        passage, question = pairs[sample]
        sequence = encoded.sequence_ids(index)
        offsets = encoded["offset_mapping"][index]
        starts = np.argsort(start_logits[index])[::-1][: hp["n_best_size"]]
        ends = np.argsort(end_logits[index])[::-1][: hp["n_best_size"]]
        for start in starts:
            for end in ends:
                if start >= len(sequence) or end >= len(sequence) or sequence[start] != 1 or sequence[end] != 1:
                    continue
                if end < start or end - start + 1 > hp["max_answer_length"]:
                    continue
                score = float(start_logits[index][start] + end_logits[index][end])
                if question.qid not in best or score > best[question.qid][0]:
                    best[question.qid] = (score, passage.context[offsets[start][0] : offsets[end][1]])
    return {question.qid: best.get(question.qid, (0.0, ""))[1] for _, question in pairs}


def trainer_style_predict(model: Any, tokenizer: Any, split: Any, config: Config) -> dict[str, str]:
    """`model`'s answers as the Trainer script finds them: its windows, batches in order, its post-processing."""
    import torch

    from concur.approaches.precision import autocast

    hp = config.hparams
    pairs, encoded, features = _trainer_test_windows(split, tokenizer, hp, False)
    start_logits: list[Any] = []
    end_logits: list[Any] = []
    model.eval()
    with torch.inference_mode():
        for first in range(0, len(features), hp["eval_batch_size"]):
            batch = tokenizer.pad(features[first : first + hp["eval_batch_size"]], return_tensors="pt").to(config.device)
            with autocast(config.device, config.precision):
                output = model(**batch)
            for row, length in enumerate(batch["attention_mask"].sum(dim=1).tolist()):
                start_logits.append(output.start_logits[row, :length].float().cpu().numpy())
                end_logits.append(output.end_logits[row, :length].float().cpu().numpy())
    return trainer_style_answers(pairs, encoded, start_logits, end_logits, hp)


CHILDREN: dict[str, Callable[[Config], Measured]] = {
    "concur": run_concur,
    "concur-stock-kernels": lambda config: run_concur(config, "concur-stock-kernels"),
    "concur-cuda-graphs": lambda config: run_concur(config, "concur-cuda-graphs"),
    "concur-trainer-decoding": lambda config: run_concur(config, "concur-trainer-decoding"),
    "concur-trainer-order": lambda config: run_concur(config, "concur-trainer-order"),
    "concur-trainer-data": lambda config: run_concur(config, "concur-trainer-data"),
    "concur-padding-in-loss": lambda config: run_concur(config, "concur-padding-in-loss"),
    "concur-as-trainer": lambda config: run_concur(config, "concur-as-trainer"),
    "concur-trainer-replay": lambda config: run_concur(config, "concur-trainer-replay"),
    "trainer-fast": lambda config: run_trainer(config, pad_to_max=False),
    "trainer-pad384": lambda config: run_trainer(config, pad_to_max=True),
}


if __name__ == "__main__":
    main()

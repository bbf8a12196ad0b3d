"""The readers' speed across code revisions and precisions, interleaved round by round: a before/after table.

Run: `python -m bench.speed_readers_compare --variants 76871c9:fp32,HEAD:fp32,HEAD:bf16
--approaches rasor,qanet [--rounds 2] [--out bench/results/speed-readers-compare.json] [bench.speed_readers options]`.
A variant is REVISION:PRECISION; REVISION is a git revision, checked out into a temporary
worktree and removed afterwards, or `.` for this working tree as it is (uncommitted changes
included); PRECISION `auto` passes no --precision (fp32 on the CPU), so it also runs revisions
that predate the option, such as 76871c9. Each (round, reader, variant) is its own process running that revision's
`bench.speed_readers` (`analysis/speed_readers.py` before bench/ existed) with that revision's library, so every
revision is measured by its
own code; interleaving spreads the machine's drift over all variants alike, which separate
runs, hours apart, do not (on the 2-core development machine one tree varied by 10-40% between
rounds), and each round starts one variant further along (`round_order`), so that no variant
always runs first. Options it does not know (`--steps`, `--warmup-steps`, `--questions`, `--threads`,
`--source-dir`) go to every `bench.speed_readers` unchanged. Prints the median (min-max) of the
training rates and each variant's ratio to the first: of the medians, and round by round (each
round's rate over the first variant's in that round, their median and range, and in how many
rounds it was faster), for training and, as a control for changes that only touch training, for
prediction; `--out` writes every run.

`--fixed-batches` times the model instead of the whole loop: every variant runs this tree's
`bench.speed_step` (fixed batches collated once, the same steps; its `--batches` and
`--steps` pass through) with its revision's library, so a model change is measured without the
data pipeline's share and spread, in a process of its own rather than A/B inside one process,
where whichever code ran second gained about 9% (docs/performance.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import round_ratios

REPO = Path(__file__).resolve().parents[1]
THIS_TREE = "."
PRECISIONS = ("auto", "fp32", "bf16")  # speed_readers's --precision choices, in every revision since bf16 on the CPU
FIXED_BATCH_MODULE = "bench.speed_step"  # this tree's for every revision: the same batches and steps
PATH_OPTIONS = ("--source-dir", "--spacy-pipeline")  # made absolute: the children run in their own trees


@dataclass(frozen=True)
class Variant:
    revision: str
    precision: str

    @property
    def label(self) -> str:
        return f"{self.revision}:{self.precision}"


@dataclass(frozen=True)
class Run:
    round: int
    approach: str
    variant: str
    train_rate: float  # questions per second through the optimisation loop
    predict_rate: float  # questions per second through predict()


def parse_variants(text: str) -> list[Variant]:
    """`REV:PRECISION,...` as Variants; a malformed entry stops the script naming it and what is allowed."""
    variants = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        revision, _, precision = entry.rpartition(":")
        if not revision or precision not in PRECISIONS:
            raise SystemExit(f"--variants: {entry!r} is not REVISION:PRECISION with PRECISION one of {', '.join(PRECISIONS)}")
        variants.append(Variant(revision, precision))
    if not variants:
        raise SystemExit("--variants: give at least one REVISION:PRECISION, e.g. HEAD:fp32")
    return variants


def round_order(variants: Sequence[Variant], round_: int) -> list[Variant]:
    """The variants in round `round_` (from 1), rotated by one each round: over len(variants) rounds each runs once in every position."""
    shift = (round_ - 1) % len(variants)
    return [*variants[shift:], *variants[:shift]]


def rates_from_output(output: str, approach: str) -> tuple[float, float]:
    """(training, prediction) questions/s from speed_readers's row `APPROACH BATCH TRAIN PREDICT PARAMS`."""
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 5 and fields[0] == approach:
            return float(fields[2]), float(fields[3])
    raise ValueError(f"no row for {approach!r} in speed_readers's output")


def summarise(runs: Sequence[Run], variants: Sequence[str], approaches: Sequence[str]) -> dict[str, Any]:
    """Per approach and variant: median, min and max of both rates, the median training rate over the first variant's,
    and (`paired`) each rate over the first variant's in the same round (`paired_ratios`)."""
    summary: dict[str, Any] = {}
    for approach in approaches:
        cells = {}
        for variant in variants:
            mine = [run for run in runs if run.approach == approach and run.variant == variant]
            if mine:
                cells[variant] = {
                    name: {"median": statistics.median(values), "min": min(values), "max": max(values)}
                    for name, values in (("train", [r.train_rate for r in mine]), ("predict", [r.predict_rate for r in mine]))
                }
        first = cells.get(variants[0])
        for variant, cell in cells.items():
            cell["train_ratio"] = cell["train"]["median"] / first["train"]["median"] if first else None
            if variant != variants[0]:
                cell["paired"] = {rate: paired_ratios(runs, approach, variant, variants[0], rate) for rate in ("train", "predict")}
        summary[approach] = cells
    return summary


def paired_ratios(runs: Sequence[Run], approach: str, variant: str, baseline: str, rate: str) -> dict[str, Any] | None:
    """`variant`'s `rate` (train or predict) over `baseline`'s, round by round (`round_ratios.by_round`)."""

    def rates(label: str) -> dict[int, float]:
        return {run.round: getattr(run, f"{rate}_rate") for run in runs if run.approach == approach and run.variant == label}

    return round_ratios.by_round(rates(variant), rates(baseline))


def table(summary: dict[str, Any], variants: Sequence[str]) -> str:
    """Markdown: one row per approach, training q/s median (min-max) per variant, then each ratio to the first: of the
    medians, round by round (median (min-max), rounds ahead) and the prediction rates' round by round."""
    first = variants[0]
    others = variants[1:]
    header = [
        "reader",
        *(f"train {v}" for v in variants),
        *(f"{v} / {first}" for v in others),
        *(f"{v} / {first} by round" for v in others),
        *(f"predict {v} / {first} by round" for v in others),
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for approach, cells in summary.items():
        rates = []
        for variant in variants:
            cell = cells.get(variant)
            rates.append(f"{cell['train']['median']:.1f} ({cell['train']['min']:.1f}-{cell['train']['max']:.1f})" if cell else "-")
        ratios = [f"{cells[v]['train_ratio']:.2f}x" if v in cells and cells[v]["train_ratio"] else "-" for v in others]
        paired = [round_ratios.describe(cells.get(v, {}).get("paired", {}).get("train")) for v in others]
        predict = [round_ratios.describe(cells.get(v, {}).get("paired", {}).get("predict"), ahead=False) for v in others]
        lines.append("| " + " | ".join([approach, *rates, *ratios, *paired, *predict]) + " |")
    return "\n".join(lines)


@contextlib.contextmanager
def checked_out(revisions: Sequence[str]) -> Iterator[dict[str, Path]]:
    """A detached worktree of each revision (this tree for `.`), removed on the way out however the run ends."""
    trees = {THIS_TREE: REPO} if THIS_TREE in revisions else {}
    with tempfile.TemporaryDirectory(prefix="speed-readers-") as scratch:
        try:
            for revision in dict.fromkeys(r for r in revisions if r != THIS_TREE):
                tree = Path(scratch) / f"tree-{len(trees)}"
                command = ["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), revision]
                added = subprocess.run(command, capture_output=True, text=True)
                if added.returncode != 0:
                    raise SystemExit(f"--variants: cannot check out revision {revision!r}: {added.stderr.strip()}")
                trees[revision] = tree
            yield trees
        finally:
            for revision, tree in trees.items():
                if revision != THIS_TREE:
                    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], capture_output=True)
            subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True)


def _environment(tree: Path, before: Sequence[Path] = ()) -> dict[str, str]:
    """This interpreter's environment with `tree` first on the import path (after `before`), checked: an installed
    concur must not win."""
    paths = [*map(str, before), str(tree), os.environ.get("PYTHONPATH", "")]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(paths).rstrip(os.pathsep)}
    command = [sys.executable, "-c", "import concur; print(concur.__file__)"]
    probe = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=tree)
    if probe.returncode != 0 or not Path(probe.stdout.strip()).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"cannot import concur from {tree} (got {probe.stdout.strip() or probe.stderr.strip()[-300:]})")
    return environment


def _absolute_paths(options: list[str]) -> list[str]:
    """speed_readers options with the path values made absolute (the children's working directories differ)."""
    fixed = list(options)
    for i, option in enumerate(fixed):
        for name in PATH_OPTIONS:
            if option == name and i + 1 < len(fixed):
                fixed[i + 1] = str(Path(fixed[i + 1]).resolve())
            elif option.startswith(name + "="):
                fixed[i] = f"{name}={Path(option.split('=', 1)[1]).resolve()}"
    return fixed


def reader_command(tree: Path, fixed_batches: bool) -> list[str]:
    """What times the readers in `tree`: its own `bench.speed_readers` (`analysis/speed_readers.py` in revisions from
    before bench/), or with `fixed_batches` this tree's `bench.speed_step`, found first on the import path
    (`this_bench`). `-P`: the working directory, a revision's tree, does not come first."""
    if fixed_batches:
        return [sys.executable, "-P", "-m", FIXED_BATCH_MODULE]
    if (tree / "bench" / "speed_readers.py").is_file():
        return [sys.executable, "-P", "-m", "bench.speed_readers"]
    return [sys.executable, str(tree / "analysis" / "speed_readers.py")]


@contextlib.contextmanager
def this_bench() -> Iterator[Path]:
    """A directory holding only this tree's `bench` (a link): first on a child's import path, it gives every revision
    this tree's benchmark code and leaves `concur` to be found in the revision's own tree."""
    with tempfile.TemporaryDirectory(prefix="speed-readers-bench-") as directory:
        (Path(directory) / "bench").symlink_to(REPO / "bench", target_is_directory=True)
        yield Path(directory)


def _measure(
    tree: Path, environment: dict[str, str], command: list[str], approach: str, precision: str, options: list[str]
) -> tuple[float, float]:
    chosen = [] if precision == "auto" else ["--precision", precision]  # `auto` runs revisions older than --precision too
    command = [*command, "--approaches", approach, *chosen, *options]
    ran = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=tree)
    try:
        return rates_from_output(ran.stdout, approach)
    except ValueError as error:
        raise SystemExit(f"{error} ({tree}, exit {ran.returncode}): {last_line(ran.stderr)}") from error


def last_line(stderr: str) -> str:
    """What a failed child said last: its error, without the traceback above it."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else "(nothing on stderr)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", required=True, help="comma-separated REVISION:PRECISION (REVISION `.` = this tree as it is)")
    parser.add_argument("--approaches", required=True, help="comma-separated approach ids")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved repetitions of every (reader, variant)")
    parser.add_argument("--out", type=Path, default=None, help="JSON file for every run, the summary and the machine")
    parser.add_argument("--fixed-batches", action="store_true", help="time this tree's bench.speed_step with each revision's library")
    args, options = parser.parse_known_args()
    variants = parse_variants(args.variants)
    approaches = [name for name in args.approaches.split(",") if name]
    options = _absolute_paths(options)
    labels = [variant.label for variant in variants]
    runs: list[Run] = []
    with checked_out([variant.revision for variant in variants]) as trees, this_bench() as bench:
        before = [bench] if args.fixed_batches else []
        environments = {revision: _environment(tree, before) for revision, tree in trees.items()}
        for round_ in range(1, args.rounds + 1):
            for approach in approaches:
                for variant in round_order(variants, round_):
                    tree = trees[variant.revision]
                    command = reader_command(tree, args.fixed_batches)
                    train, predict = _measure(tree, environments[variant.revision], command, approach, variant.precision, options)
                    runs.append(Run(round_, approach, variant.label, train, predict))
                    rates = f"train {train:8.1f} q/s  predict {predict:8.1f} q/s"
                    print(f"round {round_}/{args.rounds} {approach:24s} {variant.label:20s} {rates}", flush=True)
    summary = summarise(runs, labels, approaches)
    machine = {"processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()}
    print(
        f"machine: {machine['processor']}, {machine['cpus']} CPUs; training questions/s, median (min-max) of {args.rounds} rounds; "
        "ratios of the medians, then of each round's rates"
    )
    print(table(summary, labels))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "machine": machine,
            "variants": labels,
            "fixed_batches": args.fixed_batches,
            "options": options,
            "runs": [asdict(run) for run in runs],
            "summary": summary,
        }
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()

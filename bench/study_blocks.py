"""A study's results as a generated block of a Markdown page: the study run once and timed, the block stamped.

A page that shows what a study found must show what the current study file finds. So the block is generated from
one timed `concur study run` of the whole study (its wall time, machine and commit recorded beside the runs dir),
and its first line carries the study file's SHA-256: a test that recomputes the hash fails once the file changes
until the block is regenerated. `bench.quickstart_readme` and `bench.cpu_full_docs` write their blocks with it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.machine import describe_cpu, git_commit
from concur.analysis.bootstrap import BootstrapSettings
from concur.analysis.concurrence import Method
from concur.analysis.matrix import BenchmarkMatrix, MatrixRequest, benchmark_matrix
from concur.analysis.results import load_results
from concur.data.sources import SourceLocator
from concur.registry import Registry, default_registry
from concur.runner.planning.study import Study, load_study, plan_study
from concur.workspace import Workspace


@dataclass(frozen=True)
class StudyRun:
    """Where a study's timed run goes and what it needs: the study file, the runs dir, the data and extra specs."""

    study: Path
    runs_dir: Path
    source_dir: Path | None
    registry: Path | None
    workers: int


@dataclass(frozen=True)
class WallRecord:
    """How long the study's one timed run took, where and at which commit."""

    study_sha256: str
    seconds: float
    jobs: int
    machine: str
    commit: str | None

    def duration(self) -> str:
        """`1 h 23 min 04 s` or `40 min 51 s`."""
        minutes, seconds = divmod(round(self.seconds), 60)
        hours, minutes = divmod(minutes, 60)
        return (f"{hours} h " if hours else "") + f"{minutes} min {seconds:02d} s"


@dataclass(frozen=True)
class Markers:
    """The two comment lines around a generated block; the first carries the study file and its SHA-256."""

    name: str

    @property
    def begin(self) -> str:
        return f"<!-- {self.name}:begin"

    @property
    def end(self) -> str:
        return f"<!-- {self.name}:end -->"

    @property
    def stamp(self) -> re.Pattern[str]:
        return re.compile(rf"<!-- {re.escape(self.name)}:begin study=(?P<study>\S+) sha256=(?P<sha256>[0-9a-f]{{64}}) -->")

    def first_line(self, study: Path) -> str:
        return f"{self.begin} study={study.as_posix()} sha256={study_sha256(study)} -->"


def add_run_options(parser: argparse.ArgumentParser, study: str) -> None:
    """The options every block script takes: the study file (`study` by default), the runs dir, data and specs."""
    parser.add_argument("--study", type=Path, default=Path(study))
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"))
    parser.add_argument("--source-dir", type=Path)
    parser.add_argument("--registry", type=Path, help="a registry directory beside the built-in one (e.g. bench/checks)")
    parser.add_argument("--workers", type=int, default=2)


def run_study(args: argparse.Namespace) -> tuple[StudyRun, Registry, Study, WallRecord]:
    """The study the options name, run now and timed unless its runs dir holds one timed run of it already."""
    if not args.study.is_file():
        raise SystemExit(f"--study {args.study}: no such study file")
    registry = default_registry([args.registry] if args.registry else [])
    study = load_study(args.study)
    run = StudyRun(args.study, args.runs_dir, args.source_dir, args.registry, args.workers)
    return run, registry, study, timed_or_recorded(run, registry, study)


def number(value: float, digits: int = 2) -> str:
    """A table's number; `-` where it is undefined (a τ of a benchmark on which every approach ties)."""
    return "-" if value != value else f"{value:.{digits}f}"


def with_interval(value: float, lower: float, upper: float) -> str:
    """`0.52 [0.10, 0.88]`, or `-` where the value is undefined."""
    return "-" if value != value else f"{value:.2f} [{number(lower)}, {number(upper)}]"


def study_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wall_file(run: StudyRun) -> Path:
    return run.runs_dir / f"{run.study.stem}-wall.json"


def timed_or_recorded(run: StudyRun, registry: Registry, study: Study) -> WallRecord:
    """The wall time of the run behind the runs dir's results: the study run now, timed, if none of its jobs has a
    result yet, else the record of that earlier run. A runs dir with only some jobs done mixes runs: an error."""
    jobs = plan_study(registry, study, Workspace.resolve(run.runs_dir)).jobs
    pending = sum(1 for planned in jobs if planned.state != "done")
    if 0 < pending < len(jobs):
        done = len(jobs) - pending
        raise SystemExit(f"{run.runs_dir}: {done} of the study's {len(jobs)} jobs ran outside one timed run; give a new --runs-dir")
    return timed_run(run, len(jobs)) if pending else recorded_wall(run)


def timed_run(run: StudyRun, jobs: int) -> WallRecord:
    """`concur study run` of the whole study with its report, as `make demo` runs the quick start; its wall time recorded."""
    command = [sys.executable, "-m", "concur", "--runs-dir", str(run.runs_dir), "study", "run", str(run.study),
               "--device", "cpu", "--workers", str(run.workers), "--report", str(run.runs_dir / f"{run.study.stem}-report")]  # fmt: skip
    command += ["--source-dir", str(run.source_dir)] if run.source_dir else []
    command += ["--registry", str(run.registry)] if run.registry else []
    started = time.perf_counter()
    if subprocess.run(command).returncode != 0:
        raise SystemExit(f"`concur study run {run.study}` failed; the page is unchanged")
    record = WallRecord(study_sha256(run.study), time.perf_counter() - started, jobs, describe_cpu(), git_commit())
    wall_file(run).write_text(json.dumps(record.__dict__, indent=2) + "\n")
    print(f"written: {wall_file(run)}")
    return record


def recorded_wall(run: StudyRun) -> WallRecord:
    """The record of the run that produced the runs dir's results; an error where there is none for this study file."""
    path = wall_file(run)
    if not path.is_file():
        raise SystemExit(f"{path}: no record of a timed run: every job ran outside this script, so give a new --runs-dir")
    record = WallRecord(**json.loads(path.read_text()))
    if record.study_sha256 != study_sha256(run.study):
        raise SystemExit(f"{path}: timed a different {run.study}; give a new --runs-dir to run the current one")
    return record


def kendall_matrix(run: StudyRun, registry: Registry, request: str, approaches: str | None = None) -> BenchmarkMatrix:
    """The Kendall matrix of one results request (over `approaches` where given), with its two-level bootstrap
    intervals and noise assessment."""
    locator = SourceLocator(tuple(p for p in [run.source_dir] if p), run.runs_dir / "cache")
    results = load_results([request], store_path=Workspace.resolve(run.runs_dir).db_path, locator=locator, registry=registry)
    matrix_request = MatrixRequest(method=Method.kendall, approaches=approaches, bootstrap=BootstrapSettings())
    return benchmark_matrix(results, matrix_request, registry=registry)


def block_span(page: Path, markers: Markers) -> tuple[str, int, int]:
    """The page's text and where its block starts and its end marker begins; checked before a study runs, so a
    missing page or marker stops the script at once, not after hours of jobs."""
    if not page.is_file():
        raise SystemExit(f"{page}: no such page")
    content = page.read_text(encoding="utf-8")
    start, end = content.find(markers.begin), content.find(markers.end)
    if start < 0 or end < start:
        raise SystemExit(f"{page}: no generated block; add the two lines `{markers.begin} -->` and `{markers.end}` where it goes")
    return content, start, end


def replace_block(page: Path, markers: Markers, text: str) -> None:
    """Put `text` between the page's markers (the markers themselves are part of `text`)."""
    content, start, end = block_span(page, markers)
    page.write_text(content[:start] + text + content[end + len(markers.end) :], encoding="utf-8")
    print(f"written: {page}")

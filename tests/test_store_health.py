"""A store that heals or says exactly what is wrong: real SQLite, real processes, real damaged files.

Every kind of damaged file is named in one line by `concur status` and `concur results`
(the other jobs still shown), listed by `concur store check` (exit 1), and moved aside by
`concur store rebuild`, after which the index holds exactly the readable results.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from concur.errors import DamagedFileError
from concur.fsutil import atomic_write_json
from concur.runner.records.jobdir import JobDir, file_stamp
from concur.runner.records.result import JobResult
from concur.runner.records.store import Store, finished_jobs
from concur.workspace import Workspace
from tests.conftest import Ran

APPROACHES = ("rasor", "bidaf", "docreader", "bert-base", "roberta-base")
EM = {"squad": (10.0, 20.0, 30.0, 40.0, 50.0), "qamr": (15.0, 25.0, 45.0, 35.0, 55.0)}  # Kendall tau squad-qamr 0.8
FAILED = ("bert-base", "babi-1")
INTERRUPTED = ("rasor", "babi-1")  # started, no result, nobody holds its claim
WRITERS = 20  # processes opening one fresh index at once
RANDOM_BYTES = 4096
CLI_TIMEOUT = 300


def _key(approach: str, bench: str) -> str:
    return f"{approach}-{bench}"


def _result(approach: str, bench: str, em: float | None) -> dict:
    """A result.json as a worker writes it (the fields the index reads)."""
    job = {
        "key": _key(approach, bench),
        "approach": approach,
        "benchmark": bench,
        "hparam_id": 0,
        "seed": 0,
        "hparams": {"epochs": 2},
        "data_hash": "0" * 16,
        "result_version": 1,
    }
    if em is None:
        return {"job": job, "status": "failed", "error": "RuntimeError: it broke"}
    return {"job": job, "status": "ok", "scores": {"exact_match": em, "f1": em + 5.0, "n_questions": 100}, "device": "cpu"}


def _write_job(workspace: Workspace, result: dict, *, finished: bool = True) -> JobDir:
    job = JobDir(workspace.jobs_dir / result["job"]["key"])
    job.path.mkdir(parents=True)
    atomic_write_json(job.path / "job.json", {**result["job"], "host": "elsewhere", "pid": 1})
    if finished:
        job.write_result(JobResult.from_json(result))
    return job


@pytest.fixture
def runs(tmp_path) -> Workspace:
    """10 finished jobs, 1 failed and 1 interrupted, all indexed."""
    workspace = Workspace(tmp_path / "runs")
    for bench, scores in EM.items():
        for approach, em in zip(APPROACHES, scores):
            _write_job(workspace, _result(approach, bench, em))
    _write_job(workspace, _result(*FAILED, None))
    _write_job(workspace, _result(*INTERRUPTED, 0.0), finished=False)
    with Store(workspace.db_path) as store:
        store.sync(workspace.jobs_dir)
    return workspace


def _finished_keys() -> set[str]:
    return {_key(approach, bench) for bench in EM for approach in APPROACHES} | {_key(*FAILED)}


@pytest.fixture
def cli(concur):
    """`concur --runs-dir WORKSPACE ARGS` through its entry point, in this process."""
    return lambda workspace, *args: concur("--runs-dir", str(workspace.root), *args)


def _unprivileged_concur(workspace: Workspace, prefix: tuple[str, ...], *args: str) -> subprocess.CompletedProcess:
    """`concur` in a process of its own under `prefix` (a user namespace), where file permissions hold."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "concur", "--runs-dir", str(workspace.root), *args],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
    )


def _clean_exit(made: Ran | subprocess.CompletedProcess, code: int = 0) -> None:
    output = made.stdout + made.stderr
    assert made.returncode == code, output
    assert "Traceback" not in output and "unexpected error" not in output, output


def _lines_naming(text: str, path: Path) -> list[str]:
    return [line for line in text.splitlines() if str(path) in line]


def _indexed_keys(workspace: Workspace) -> set[str]:
    with Store.open_for_reading(workspace.db_path) as store:
        return {row["key"] for row in store.rows()}


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# ---- many drivers at once ----

WRITER = """
import sys, time
from pathlib import Path
from concur.runner.records.jobdir import JobDir, file_stamp
from concur.runner.records.result import JobResult
from concur.runner.records.store import Store
index, root, go = int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
job = {"key": f"job-{index:02d}", "approach": "rasor", "benchmark": "squad", "hparam_id": 0, "seed": index,
       "hparams": {}, "data_hash": "0" * 16, "result_version": 1}
result = JobResult.from_json({"job": job, "status": "ok", "scores": {"exact_match": float(index), "f1": float(index)}})
job_dir = JobDir(root / "jobs" / job["key"])
job_dir.path.mkdir(parents=True)
job_dir.write_result(result)
while not go.exists():
    time.sleep(0.001)
store = Store(root / "concur.sqlite")
store.record(result, job_dir.path)
store.refresh(root / "jobs")
store.sync(root / "jobs")
store.record(result, job_dir.path)
"""


def test_twenty_drivers_open_one_new_index_at_once(tmp_path):
    root, go = tmp_path / "runs", tmp_path / "go"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(index), str(root), str(go)], stderr=subprocess.PIPE, text=True)
        for index in range(WRITERS)
    ]
    time.sleep(1.0)  # every interpreter up and waiting, so they all open the index within a millisecond
    go.touch()
    failures = [(writer.wait(timeout=CLI_TIMEOUT), writer.stderr.read()) for writer in writers]
    assert [failure for failure in failures if failure[0] != 0] == []
    assert not any("database is locked" in stderr for _, stderr in failures)
    with Store.open_for_reading(root / "concur.sqlite") as store:
        rows = store.rows()
    assert sorted(row["key"] for row in rows) == [f"job-{index:02d}" for index in range(WRITERS)]
    assert sorted(row["em"] for row in rows) == [float(index) for index in range(WRITERS)]


# ---- damaged job files ----


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _without(field: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        payload = json.loads(path.read_text())
        del payload[field]
        path.write_text(json.dumps(payload))

    return damage


# kind: (approach, benchmark, file, damage, what the line says)
FILE_DAMAGE = {
    "result.json truncated": ("bidaf", "qamr", "result.json", _truncate, "truncated JSON at line"),
    "result.json empty": ("docreader", "qamr", "result.json", lambda path: path.write_bytes(b""), "empty file"),
    "result.json not JSON": ("bert-base", "qamr", "result.json", lambda path: path.write_text("<html>503</html>"), "not JSON"),
    "result.json a JSON list": ("roberta-base", "qamr", "result.json", lambda path: path.write_text("[1]"), "a JSON list, not an object"),
    "result.json without status": ("rasor", "qamr", "result.json", _without("status"), "no 'status'"),
    "result.json without job": ("rasor", "squad", "result.json", _without("job"), "no 'job' object"),
    "job.json truncated": (*INTERRUPTED, "job.json", _truncate, "truncated JSON at line"),
}


def test_every_damaged_job_file_is_named_once_and_set_aside(cli, runs):
    damaged = {}
    for approach, bench, name, damage, _ in FILE_DAMAGE.values():
        path = runs.jobs_dir / _key(approach, bench) / name
        damage(path)
        damaged[path] = path.read_bytes()
    lost = {path.parent.name for path in damaged if path.name == "result.json"}
    healthy = _finished_keys() - lost

    status = cli(runs, "status")
    _clean_exit(status)
    results = cli(runs, "results", "--results", "store")
    _clean_exit(results)
    for approach, bench, name, _, problem in FILE_DAMAGE.values():
        path = runs.jobs_dir / _key(approach, bench) / name
        (line,) = _lines_naming(status.stderr, path)
        assert problem in line and "`concur store rebuild`" in line and line.startswith("warning:")
        if name == "result.json":  # what `results` reads; job.json tells only of a job that has not finished
            (note,) = _lines_naming(results.stderr, path)
            assert problem in note
    assert all(key in status.stdout for key in healthy)
    assert _key(*INTERRUPTED) not in status.stdout  # its job.json is unreadable: named, not guessed at
    assert {_key(row["approach"], row["benchmark"]) for row in _csv_rows(results.stdout)} == healthy - {_key(*FAILED)}

    check = cli(runs, "store", "check")
    _clean_exit(check, 1)
    for path in damaged:
        assert len(_lines_naming(check.stdout, path)) == 1
    assert f"{len(damaged)} damaged files" in check.stdout

    rebuild = cli(runs, "store", "rebuild")
    _clean_exit(rebuild)
    (aside,) = (runs.root / "damaged").iterdir()
    for path, content in damaged.items():
        moved = aside / path.parent.name / path.name
        assert moved.read_bytes() == content and not path.exists()
        assert f"{path} -> {moved}" in rebuild.stderr
    assert _indexed_keys(runs) == healthy
    _clean_exit(cli(runs, "store", "check"))


# ---- damaged index ----


def _sqlite_with(path: Path, schema: str) -> None:
    path.unlink()
    connection = sqlite3.connect(path)
    connection.execute(schema)
    connection.commit()
    connection.close()


INDEX_DAMAGE = {
    "0 bytes": (lambda path: path.write_bytes(b""), "empty file (0 bytes)"),
    "random bytes": (lambda path: path.write_bytes(random.Random(0).randbytes(RANDOM_BYTES)), "not a usable SQLite database"),
    "no table": (lambda path: _sqlite_with(path, "CREATE TABLE notes (text TEXT)"), "without the 'jobs' table"),
    "missing columns": (lambda path: _sqlite_with(path, "CREATE TABLE jobs (key TEXT PRIMARY KEY, approach TEXT)"), "lacks the columns"),
}


@pytest.mark.parametrize("kind", INDEX_DAMAGE)
def test_a_damaged_index_is_named_read_around_and_rebuilt(cli, runs, kind):
    damage, problem = INDEX_DAMAGE[kind]
    damage(runs.db_path)
    content = runs.db_path.read_bytes()

    status = cli(runs, "status")
    _clean_exit(status)
    (line,) = _lines_naming(status.stderr, runs.db_path)
    assert problem in line and "`concur store rebuild`" in line and "reading the job directories instead" in line
    assert all(key in status.stdout for key in _finished_keys() | {_key(*INTERRUPTED)})
    results = cli(runs, "results", "--results", "store")
    _clean_exit(results)
    (note,) = _lines_naming(results.stderr, runs.db_path)
    assert problem in note
    assert len(_csv_rows(results.stdout)) == len(APPROACHES) * len(EM)
    assert runs.db_path.read_bytes() == content  # readers never write over a damaged index

    check = cli(runs, "store", "check")
    _clean_exit(check, 1)
    assert problem in _lines_naming(check.stdout, runs.db_path)[0]

    rebuild = cli(runs, "store", "rebuild")
    _clean_exit(rebuild)
    (aside,) = (runs.root / "damaged").iterdir()
    assert (aside / "concur.sqlite").read_bytes() == content
    assert _indexed_keys(runs) == _finished_keys()
    _clean_exit(cli(runs, "store", "check"))


def test_store_names_a_damaged_index_instead_of_reading_it_as_empty(runs):
    runs.db_path.write_bytes(b"")
    with pytest.raises(DamagedFileError, match="concur.sqlite is damaged .empty file .0 bytes..; `concur store rebuild`"):
        Store(runs.db_path)
    finished = finished_jobs(runs.db_path, runs.jobs_dir)
    assert finished.index_problem is not None and {row["key"] for row in finished.rows} == _finished_keys()
    assert runs.db_path.read_bytes() == b""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"steps": 0, "weight_decay": 0.', "truncated JSON at line 1 column 31"),  # cut inside a number: json stops at "."
        ('{"a": 1.5e', "truncated JSON at line 1 column 10"),  # and at "e"
        ('{"a": -', "truncated JSON at line 1 column 7"),
        ('{"a": tr', "truncated JSON at line 1 column 7"),
        ('{"a": "unfinish', "truncated JSON at line 1 column 7"),
        ('{"a": 1, "b": 2', "truncated JSON at line 1 column 16"),
        ("<html>503</html>", "not JSON: Expecting value at line 1 column 1"),
        ('{"a": 0.}', "not JSON: Expecting ',' delimiter at line 1 column 8"),
        ('{"a": 1}junk', "not JSON: Extra data at line 1 column 9"),
    ],
)
def test_a_file_cut_anywhere_reads_as_truncated_and_junk_as_not_json(tmp_path, text, problem):
    job = JobDir(tmp_path / "job")
    job.path.mkdir()
    job.result_path.write_text(text)
    with pytest.raises(DamagedFileError, match=re.escape(f"({problem})")):
        job.result()


def test_a_damaged_result_stops_the_runner_instead_of_reading_as_no_result(runs):
    job = JobDir(runs.jobs_dir / _key("bidaf", "squad"))
    _truncate(job.result_path)
    with pytest.raises(DamagedFileError, match=r"result.json is damaged \(truncated JSON at line \d+ column \d+\)"):
        job.result()
    with pytest.raises(DamagedFileError):
        job.state()


# ---- read-only runs dir ----


def _unprivileged() -> tuple[str, ...]:
    """A command prefix under which file permissions hold: none for a user, a user namespace for root (where
    root's own files are checked by their owner bits), else the test is skipped."""
    if os.geteuid() != 0:
        return ()
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "--user", "true"], capture_output=True).returncode == 0:
        return (unshare, "--user")
    pytest.skip("running as root without user namespaces: permissions are not enforced")


def _chmod_tree(root: Path, writable: bool) -> None:
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode | 0o200 if writable else mode & ~0o222)


def test_a_read_only_runs_dir_is_read(runs):
    prefix = _unprivileged()
    extra = _write_job(runs, _result("rasor", "mrqa-nq", 77.0))  # written, not indexed
    _chmod_tree(runs.root, writable=False)
    try:
        before = sorted(path.name for path in runs.root.iterdir())
        status = _unprivileged_concur(runs, prefix, "status")
        _clean_exit(status)
        assert all(key in status.stdout for key in _finished_keys() | {extra.path.name}) and "77.00" in status.stdout
        results = _unprivileged_concur(runs, prefix, "results", "--results", "store")
        _clean_exit(results)
        assert {row["em"] for row in _csv_rows(results.stdout)} == {str(em) for scores in EM.values() for em in scores} | {"77.0"}
        matrix = _unprivileged_concur(runs, prefix, "matrix", "--results", "store", "--benches", "squad,qamr")
        _clean_exit(matrix)
        assert "0.80" in matrix.stdout
        assert sorted(path.name for path in runs.root.iterdir()) == before  # nothing written, no WAL file made
    finally:
        _chmod_tree(runs.root, writable=True)


def test_a_score_outside_0_100_is_named_by_job_and_left_out_of_every_analysis(cli, runs):
    """A hand-edited EM of 150 is no result: `store check` names its job, the analysis commands leave it out with a
    warning naming it, even where the index took the value in before results were checked for it."""
    job = JobDir(runs.jobs_dir / _key("bidaf", "squad"))
    edited = json.loads(job.result_path.read_text())
    edited["scores"]["exact_match"] = 150.0
    atomic_write_json(job.result_path, edited)  # by hand: concur itself never writes such a result
    with sqlite3.connect(runs.db_path) as connection:  # the index holds the edited file's row, stamp and all
        connection.execute("UPDATE jobs SET em = 150.0, result_stamp = ? WHERE key = ?", (file_stamp(job.result_path), job.path.name))
    problem = "exact_match 150.0 is not a percentage within 0-100, for bidaf on squad, hparams 0, seed 0"

    check = cli(runs, "store", "check")
    _clean_exit(check, 1)
    (line,) = _lines_naming(check.stdout, job.result_path)
    assert problem in line and "`concur store rebuild`" in " ".join(check.stdout.split())  # the table folds long lines
    assert "1 damaged files" in check.stdout and "9 finished ok" in check.stdout

    results = cli(runs, "results", "--results", "store")
    _clean_exit(results)
    (note,) = _lines_naming(results.stderr, job.result_path)
    assert problem in note
    rows = {(row["approach"], row["benchmark"]): float(row["em"]) for row in _csv_rows(results.stdout)}
    assert ("bidaf", "squad") not in rows and len(rows) == 9 and max(rows.values()) == 55.0
    matrix = cli(runs, "matrix", "--results", "store", "--benches", "squad,qamr", "--format", "json")
    _clean_exit(matrix)
    assert json.loads(matrix.stdout)["counts"] == [[4, 4], [4, 5]]  # bidaf's squad cell left out


# ---- results not indexed yet ----


def test_a_result_written_but_not_indexed_is_seen_and_indexed(cli, runs):
    extra = _write_job(runs, _result("docreader", "babi-1", 66.0))  # as a worker writes it; no driver indexed it
    assert extra.path.name not in _indexed_keys(runs)
    results = cli(runs, "results", "--results", "store")
    _clean_exit(results)
    assert ("docreader", "babi-1", "66.0") in {(row["approach"], row["benchmark"], row["em"]) for row in _csv_rows(results.stdout)}
    assert extra.path.name in _indexed_keys(runs)  # the reader could write, so it indexed it
    rewritten = _result("docreader", "babi-1", 68.0)
    time.sleep(0.01)
    extra.write_result(JobResult.from_json(rewritten))  # a newer file under the same key: its stamp tells
    status = cli(runs, "status")
    _clean_exit(status)
    assert extra.path.name in status.stdout and "68.00" in status.stdout and "66.00" not in status.stdout


# ---- the runner ----


@pytest.mark.slow
def test_the_runner_stops_at_a_damaged_result_and_runs_the_job_again_once_it_is_set_aside(cli, tmp_path, tiny_registry):
    workspace = Workspace(tmp_path / "runs")
    common = ("--registry", str(tiny_registry))
    run_args = ("run", "-a", "tiny-reader", "-b", "tiny-babi", "--device", "cpu", "--source-dir", str(tmp_path / "data-root"))
    _clean_exit(cli(workspace, *common, *run_args))
    (job_dir,) = workspace.jobs_dir.iterdir()
    result = job_dir / "result.json"
    _truncate(result)
    damaged = result.read_bytes()

    stopped = cli(workspace, *common, *run_args)
    _clean_exit(stopped, 2)
    (line,) = _lines_naming(stopped.stderr, result)
    assert line.startswith("warning:") and "truncated JSON" in line and "`concur store rebuild`" in line
    closing = stopped.stderr.strip().splitlines()[-1]
    assert closing.startswith("error: 1 of 1 jobs have no usable result: 1 has a damaged result file (named above)")
    assert "`concur store check` lists them" in closing and "--retry-failed (or `concur store rebuild`) moves them aside" in closing
    assert result.read_bytes() == damaged  # neither taken for "no result" nor run again over it

    _clean_exit(cli(workspace, "store", "rebuild"))
    again = cli(workspace, *common, *run_args)
    _clean_exit(again)
    assert again.stdout.startswith("done: tiny-reader on tiny-babi") and json.loads(result.read_text())["status"] == "ok"

    _truncate(result)  # the closing line's other fix: --retry-failed moves the damaged file aside and runs the job
    damaged = result.read_bytes()
    set_aside_before = set((workspace.root / "damaged").glob(f"*/{job_dir.name}/result.json"))  # by the rebuild above
    retried = cli(workspace, *common, *run_args, "--retry-failed")
    _clean_exit(retried)
    (aside,) = set((workspace.root / "damaged").glob(f"*/{job_dir.name}/result.json")) - set_aside_before
    assert aside.read_bytes() == damaged and json.loads(result.read_text())["status"] == "ok"
    (line,) = _lines_naming(retried.stderr, aside)
    assert line.startswith(f"job {job_dir.name} (tiny-reader on tiny-babi (hparams 0, seed 0)): its damaged result.json (truncated JSON")
    assert line.endswith(f") is moved to {aside}; running it again")

    workspace.db_path.write_bytes(random.Random(1).randbytes(RANDOM_BYTES))
    refused = cli(workspace, *common, *run_args)
    _clean_exit(refused, 2)
    (line,) = _lines_naming(refused.stderr, workspace.db_path)
    assert "not a usable SQLite database" in line and "`concur store rebuild`" in line
    _clean_exit(cli(workspace, "store", "rebuild"))
    assert cli(workspace, *common, *run_args).stdout.startswith("already done, nothing to run")

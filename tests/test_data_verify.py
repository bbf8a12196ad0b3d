"""Prepared data is verified before use, and killed downloads and prepares leave nothing behind.

Real files and real processes: a small bAbI-like benchmark prepared by `prepare`, edited,
truncated and deleted on disk; the CLI and the job worker run as subprocesses; downloads and
prepares killed with SIGKILL mid-way (against a real HTTP server on 127.0.0.1, and through
a pause injected into a real `python -m concur data prepare` process).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from concur import fsutil
from concur.data import prepare as prepare_module
from concur.data.download import download, partial_path
from concur.data.prepare import MANIFEST, VERIFIED, DataChangedError, PreparedDataError, prepare, prepared
from concur.data.sources import SourceLocator
from concur.errors import ConcurError
from concur.fsutil import (
    ABANDONED_AFTER_SECONDS,
    entry_path,
    md5_file,
    owned_name,
    publish_directory,
    read_json,
    remove_abandoned,
    this_host,
)
from concur.registry import default_registry
from concur.runner.execution.one_job import RunOptions
from concur.runner.execution.request import JobRequest
from concur.runner.planning.jobs import make_job
from concur.workspace import Workspace
from tests.conftest import TINY_HPARAMS, write_babi_like, write_tiny_approach

BENCH = "tiny"
OTHER = "other"  # a second benchmark in the same data dir, which no fault of `tiny` may touch
WAIT_SECONDS = 60  # for a subprocess to reach the point where it is killed
POLL_SECONDS = 0.02
SPEC = """id = "{id}"
family = "synthetic"
[sources.train]
reader = "babi"
path = "{id}/train.txt"
[sources.test]
reader = "babi"
path = "{id}/test.txt"
"""


class Env:
    """A registry with two small benchmarks and an approach, their sources, and a runs dir, under `base`."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.registry_dir = base / "registry"
        self.source_root = base / "data-root"
        self.runs = base / "runs"
        (self.registry_dir / "benchmarks").mkdir(parents=True)
        (self.registry_dir / "approaches").mkdir()
        for bench_id, seed in ((BENCH, 1), (OTHER, 3)):
            (self.source_root / bench_id).mkdir(parents=True)
            write_babi_like(self.source_root / bench_id / "train.txt", stories=30, seed=seed)
            write_babi_like(self.source_root / bench_id / "test.txt", stories=10, seed=seed + 1)
            (self.registry_dir / "benchmarks" / f"{bench_id}.toml").write_text(SPEC.format(id=bench_id))
        # an approach whose model is never loaded: every command here stops at the data
        write_tiny_approach(self.registry_dir, "tiny-bert", base / "no-model", TINY_HPARAMS)

    @property
    def data_dir(self) -> Path:
        return self.runs / "data"

    def spec(self, bench_id: str = BENCH):
        return default_registry([self.registry_dir]).benchmark(bench_id)

    def locator(self) -> SourceLocator:
        return SourceLocator((self.source_root,), self.runs / "cache")

    def prepare(self, bench_id: str = BENCH, *, force: bool = False):
        return prepare(self.spec(bench_id), self.locator(), self.data_dir, force=force)

    def prepared(self, bench_id: str = BENCH):
        return prepared(self.data_dir, self.spec(bench_id))

    def split(self, name: str, bench_id: str = BENCH) -> Path:
        return self.data_dir / bench_id / f"{name}.jsonl.gz"

    def cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "concur", "--registry", str(self.registry_dir), "--runs-dir", str(self.runs), *args]

    def concur(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(self.cli(*args), capture_output=True, text=True, timeout=WAIT_SECONDS)

    def run_args(self) -> list[str]:
        return ["run", "-a", "tiny-bert", "-b", BENCH, "--device", "cpu", "--source-dir", str(self.source_root)]


@pytest.fixture
def env(tmp_path) -> Env:
    return Env(tmp_path)


@pytest.fixture
def md5_calls(monkeypatch) -> list[Path]:
    """Every md5 `prepare` computes from now on, by file: the cost of a check."""
    calls: list[Path] = []
    real = prepare_module.md5_file

    def counting(path, *, decompress=False):
        calls.append(Path(path))
        return real(path, decompress=decompress)

    monkeypatch.setattr(prepare_module, "md5_file", counting)
    return calls


def _lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _write_lines(path: Path, lines: list[dict]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)


def _edit_question(path: Path) -> str:
    """Change the first question's text, as a person fixing a typo would; returns the new md5."""
    lines = _lines(path)
    lines[1]["qas"][0]["question"] = lines[1]["qas"][0]["question"].replace("Where is", "Where was")
    _write_lines(path, lines)
    return md5_file(path, decompress=True)


def _one_error_line(result: subprocess.CompletedProcess) -> str:
    """The CLI's error for a refused command: exit status 2, one line on stderr, no traceback."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0].removeprefix("error: ")


def _no_jobs(env: Env) -> bool:
    jobs = env.runs / "jobs"
    return not jobs.exists() or not any(jobs.rglob("result.json"))


def _tree(directory: Path) -> dict[str, tuple[int, int]]:
    """Every file under `directory` with its size and mtime: to show that nothing there changed."""
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(directory.rglob("*")) if p.is_file()}


def _dead_pid() -> int:
    """The pid of a process that ran on this host and has exited (and was reaped)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(child.stdout)


def _wait_for(condition: Callable[[], bool], process: subprocess.Popen) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if process.poll() is not None:
            pytest.fail(f"the process ended (status {process.returncode}) before the point it was to be killed at: {process.stderr.read()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("the process never reached the point it was to be killed at")
        time.sleep(POLL_SECONDS)


def _kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL


# (a), (b): the cheap path and the full check -------------------------------------------------


def test_unchanged_data_is_trusted_by_stat_without_hashing(env, md5_calls):
    bench, did_work = env.prepare()
    assert did_work and [path.name for path in md5_calls] == ["train.jsonl.gz", "test.jsonl.gz"]  # the manifest's, while writing
    record = read_json(env.data_dir / BENCH / VERIFIED)
    assert set(record) == {"train.jsonl.gz", "test.jsonl.gz"} and record["test.jsonl.gz"]["md5"] == bench.manifest["splits"]["test"]["md5"]
    md5_calls.clear()
    again = env.prepared()
    assert again is not None and again.data_hash == bench.data_hash
    assert again.load("test").n_questions == 30 and again.load("train").n_questions == 90
    assert env.prepare() == (again, False)
    assert md5_calls == []  # 2 checks by prepared(), 2 by load(), 2 by prepare(): not one file hashed


def test_touched_file_is_hashed_once_then_trusted_again(env, md5_calls):
    bench, _ = env.prepare()
    test_file = env.split("test")
    before = read_json(env.data_dir / BENCH / VERIFIED)["test.jsonl.gz"]
    later = test_file.stat().st_mtime_ns + 5 * 10**9
    os.utime(test_file, ns=(later, later))  # same content, new mtime
    md5_calls.clear()
    checked = env.prepared()
    assert checked is not None and checked.data_hash == bench.data_hash
    assert md5_calls == [test_file]  # only the touched file, and once: load() below trusts what prepared() checked
    assert checked.load("test").n_questions == 30 and md5_calls == [test_file]
    after = read_json(env.data_dir / BENCH / VERIFIED)["test.jsonl.gz"]
    assert after["mtime_ns"] == later and after != before and after["md5"] == before["md5"]
    md5_calls.clear()
    assert env.prepared() is not None and md5_calls == []  # recorded again: cheap again


def test_a_copy_with_the_same_size_and_mtime_is_still_hashed(env, md5_calls):
    """A file replaced by another (here: an identical copy) with its size and mtime put back is not trusted by them alone."""
    env.prepare()
    test_file = env.split("test")
    stat = test_file.stat()
    copy = test_file.with_name("copy")
    shutil.copyfile(test_file, copy)
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(copy, test_file)
    assert (test_file.stat().st_size, test_file.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    md5_calls.clear()
    assert env.prepared() is not None and md5_calls == [test_file]


def test_a_missing_record_means_one_full_check(env, md5_calls):
    """Data prepared before records existed (or whose record was lost) is hashed once and recorded."""
    env.prepare()
    (env.data_dir / BENCH / VERIFIED).write_text("{not json")
    md5_calls.clear()
    assert env.prepared() is not None and sorted(md5_calls) == sorted([env.split("train"), env.split("test")])
    md5_calls.clear()
    assert env.prepared() is not None and md5_calls == []


# (c): changed content is refused everywhere ---------------------------------------------------


def test_edited_question_is_refused_naming_the_file_and_both_md5s(env):
    bench, _ = env.prepare()
    test_file = env.split("test")
    expected = bench.manifest["splits"]["test"]["md5"]
    actual = _edit_question(test_file)
    assert actual != expected
    with pytest.raises(DataChangedError) as info:
        env.prepared()
    message = (
        f"{test_file}: content changed since it was prepared: its md5 is {actual}, but {env.data_dir / BENCH / MANIFEST} "
        f"records {expected}, so results made from it could be taken for results on the prepared data; "
        f"prepare it again with `concur data prepare {BENCH} --force`"
    )
    assert str(info.value) == message and (info.value.expected, info.value.actual) == (expected, actual)
    with pytest.raises(DataChangedError):  # preparing without --force does not paper over it
        env.prepare()
    with pytest.raises(DataChangedError):  # an object checked before the edit checks again when it reads
        bench.load("test")
    assert bench.load("train").n_questions == 90


def test_changed_data_stops_the_cli_run_and_the_worker(env):
    bench, _ = env.prepare()
    registry = default_registry([env.registry_dir])
    job = make_job(registry.approach("tiny-bert"), bench, seed=0)  # planned on the data as prepared
    request_path = env.base / "request.json"
    JobRequest.make(job, [env.registry_dir], Workspace(env.runs), RunOptions(device="cpu")).write(request_path)
    expected = bench.manifest["splits"]["test"]["md5"]
    actual = _edit_question(env.split("test"))

    for args in (["data", "prepare", BENCH], env.run_args(), ["data", "show", BENCH, "--split", "test"], ["data", "verify", BENCH]):
        result = env.concur(*args)
        if args[:2] == ["data", "verify"]:  # a table of every benchmark's state, then the one-line error
            assert "damaged" in result.stdout and _one_error_line(result) == "1 of 1 benchmarks failed verification; see the table above"
            continue
        line = _one_error_line(result)
        assert line.startswith(f"{env.split('test')}: content changed") and actual in line and expected in line, args
    assert _no_jobs(env)

    worker_command = [sys.executable, "-m", "concur.runner.execution.worker", str(request_path)]
    worker = subprocess.run(worker_command, capture_output=True, text=True, timeout=120)
    assert worker.returncode == 0, worker.stderr  # it wrote a (failed) result: the driver must not retry blindly
    job_dir = env.runs / "jobs" / job.key
    result = read_json(job_dir / "result.json")
    assert result["status"] == "failed" and "scores" not in result
    assert result["error"].startswith("DataChangedError: ") and actual in result["error"] and expected in result["error"]
    assert not (job_dir / "predictions.json.gz").exists()

    repaired = env.concur("data", "prepare", BENCH, "--force", "--source-dir", str(env.source_root))
    assert repaired.returncode == 0, repaired.stderr
    assert env.prepared().data_hash == bench.data_hash == job.data_hash  # the sources are unchanged: the same data again


def test_a_manifest_edited_to_match_the_data_gives_new_job_keys(env):
    """Changed data can never reuse results: a manifest made to agree with edited data has another data_hash, so other keys."""
    bench, _ = env.prepare()
    approach = default_registry([env.registry_dir]).approach("tiny-bert")
    old_key = make_job(approach, bench, seed=0).key
    actual = _edit_question(env.split("test"))
    manifest_path = env.data_dir / BENCH / MANIFEST
    manifest = read_json(manifest_path)
    manifest["splits"]["test"]["md5"] = actual
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(PreparedDataError, match=r"manifest.json: data_hash '[0-9a-f]{64}' is not the hash of its split md5s"):
        env.prepared()
    manifest["data_hash"] = prepare_module.data_hash(manifest["splits"][split]["md5"] for split in prepare_module.SPLITS)
    manifest_path.write_text(json.dumps(manifest))
    edited = env.prepared()
    assert edited is not None and edited.data_hash != bench.data_hash
    assert make_job(approach, edited, seed=0).key != old_key


# (d): damaged prepared data: one clear line each --------------------------------------------------


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _not_gzip(path: Path) -> None:
    path.write_bytes(b"this is not gzip data\n")


def _corrupt_json(path: Path) -> None:
    path.write_text('{"benchmark": "tiny",')  # cut off, as by a full disk under an editor


def _drop_splits(path: Path) -> None:
    manifest = json.loads(path.read_text())
    del manifest["splits"]["test"]
    path.write_text(json.dumps(manifest))


DAMAGE = {
    "truncated gzip": ("test.jsonl.gz", _truncate, r"cannot be read, the file is damaged or truncated \(Compressed file ended"),
    "not gzip": ("train.jsonl.gz", _not_gzip, r"cannot be read, the file is damaged or truncated \(Not a gzipped file"),
    "deleted split": ("test.jsonl.gz", Path.unlink, r"missing: the prepared benchmark is incomplete"),
    "corrupt manifest": (MANIFEST, _corrupt_json, r"the manifest cannot be read \(Expecting property name enclosed in double quotes"),
    "manifest without a split": (MANIFEST, _drop_splits, r"not a benchmark manifest: it needs a file and an md5 for each of the splits"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_data_is_one_clear_line_and_force_repairs_it(env, case):
    bench, _ = env.prepare()
    name, damage, problem = DAMAGE[case]
    path = env.data_dir / BENCH / name
    damage(path)
    remedy = f"; prepare it again with `concur data prepare {BENCH} --force`"
    with pytest.raises(PreparedDataError) as info:
        env.prepared()
    assert re.match(rf"{re.escape(str(path))}: {problem}", str(info.value)) and str(info.value).endswith(remedy)
    assert _one_error_line(env.concur("data", "prepare", BENCH)) == str(info.value)
    repaired, did_work = env.prepare(force=True)
    assert did_work and repaired.data_hash == bench.data_hash and env.prepared() == repaired


# (e): a download killed mid-transfer -----------------------------------------------------------


class StallingServer:
    """Serves one file on 127.0.0.1, honouring `Range`; a request for the whole file stops after `stall_after` bytes and hangs."""

    def __init__(self, body: bytes, stall_after: int) -> None:
        self.body, self.stall_after = body, stall_after
        self.ranges: list[str | None] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                self.close_connection = True
                requested = self.headers.get("Range")
                server.ranges.append(requested)
                start = int(re.fullmatch(r"bytes=(\d+)-", requested).group(1)) if requested else 0
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(server.body) - start))
                self.send_header("ETag", '"v1"')
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(server.body) - 1}/{len(server.body)}")
                self.end_headers()
                try:
                    if start:
                        self.wfile.write(server.body[start:])
                    else:
                        self.wfile.write(server.body[: server.stall_after])
                        self.wfile.flush()
                        server.release.wait(WAIT_SECONDS)  # the client is killed meanwhile
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": POLL_SECONDS}, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def stalling_server() -> Iterator[StallingServer]:
    body = hashlib.sha256(b"seed").digest() * (1 << 15)  # 1 MiB
    server = StallingServer(body, stall_after=600 * 1024)
    yield server
    server.close()


def test_download_killed_mid_transfer_leaves_no_final_file_and_resumes(stalling_server, tmp_path):
    body = stalling_server.body
    md5 = hashlib.md5(body).hexdigest()
    url = stalling_server.url("/data/big.bin")
    destination = tmp_path / "cache" / "big.bin"
    partial = partial_path(destination)
    destination.parent.mkdir(parents=True)
    leftover = destination.parent / f"{owned_name('.big.bin').rsplit('@', 1)[0]}@{_dead_pid()}.x1y2.tmp"
    leftover.write_bytes(b"half of an earlier extraction")  # a temporary file of a writer killed before its rename
    code = "import sys, pathlib, concur.data.download as d; d.download(sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3])"
    process = subprocess.Popen([sys.executable, "-c", code, url, str(destination), md5], stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: partial.is_file() and partial.stat().st_size >= 512 * 1024, process)
    _kill(process)
    assert not destination.exists()
    # only the partial bytes and their resume state, clearly named; the dead writer's temporary file went when the download began
    assert sorted(p.name for p in destination.parent.iterdir()) == ["big.bin.part", "big.bin.part.json"]
    kept = partial.stat().st_size
    assert 0 < kept <= stalling_server.stall_after and partial.read_bytes() == body[:kept]
    assert download(url, destination, md5) == md5
    assert destination.read_bytes() == body and md5_file(destination) == md5
    assert stalling_server.ranges == [None, f"bytes={kept}-"]  # the second attempt fetched only the rest
    assert sorted(p.name for p in destination.parent.iterdir()) == ["big.bin"]


# (f): a prepare killed mid-way ---------------------------------------------------------------

PAUSING_CLI = """
import os, runpy, sys, time
import concur.data.prepare as prepare_module
if os.environ["PAUSE_AT"] == "written":  # after the first split file is written into the staging directory
    write_mrqa = prepare_module.write_mrqa
    def write_then_pause(split, path):
        write_mrqa(split, path)
        time.sleep(600)
    prepare_module.write_mrqa = write_then_pause
else:  # after the old directory is moved aside, before the new one is renamed into place
    replace = os.replace
    def replace_then_pause(source, target):
        replace(source, target)
        if ".old@" in os.fspath(target):
            time.sleep(600)
    os.replace = replace_then_pause
sys.argv = ["concur", *sys.argv[1:]]
runpy.run_module("concur", run_name="__main__", alter_sys=True)
"""

KILL_POINTS = {
    # case: (prepared before, --force, where it is killed, what the data dir holds after the kill)
    "first prepare, while writing": (False, False, "written", [".tiny.staging"]),
    "forced prepare, while writing": (True, True, "written", [".tiny.staging", "tiny"]),
    "forced prepare, old directory moved aside": (True, True, "retired", [".tiny.old", ".tiny.staging"]),
}


@pytest.mark.parametrize("case", list(KILL_POINTS))
def test_killed_prepare_leaves_only_complete_benchmarks(env, case):
    before, force, point, after_kill = KILL_POINTS[case]
    other, _ = env.prepare(OTHER)
    other_leftover = env.data_dir / f".{OTHER}.staging@{this_host()}@{_dead_pid()}"
    other_leftover.mkdir()  # another benchmark's leftover is not this prepare's to remove
    other_files = _tree(other.directory)
    data_hash = env.prepare()[0].data_hash if before else None
    args = env.cli("data", "prepare", BENCH, "--source-dir", str(env.source_root), *(["--force"] if force else []))
    process = subprocess.Popen(
        [sys.executable, "-c", PAUSING_CLI, *args[3:]], env={**os.environ, "PAUSE_AT": point}, stderr=subprocess.PIPE, text=True
    )
    marker = "*.staging@*/train.jsonl.gz" if point == "written" else f".{BENCH}.old@*"
    _wait_for(lambda: any(env.data_dir.glob(marker)), process)
    _kill(process)
    mine = sorted(p.name.split("@")[0] for p in env.data_dir.iterdir() if p.name not in (OTHER, other_leftover.name))
    assert mine == after_kill
    if "tiny" in after_kill:
        assert env.prepared().data_hash == data_hash  # the complete benchmark is still there, unharmed

    again = env.concur("data", "prepare", BENCH, "--source-dir", str(env.source_root))
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in env.data_dir.iterdir()) == sorted([BENCH, OTHER, other_leftover.name])
    assert ("up to date" if "tiny" in after_kill else "prepared") in again.stdout
    bench = env.prepared()
    assert sorted(p.name for p in bench.directory.iterdir()) == ["manifest.json", "test.jsonl.gz", "train.jsonl.gz", "verified.json"]
    assert data_hash is None or bench.data_hash == data_hash
    assert _tree(other.directory) == other_files and env.prepared(OTHER).data_hash == other.data_hash


# (g): a read-only runs dir --------------------------------------------------------------------


@contextlib.contextmanager
def read_only(*directories: Path) -> Iterator[None]:
    """Make directories read-only for this process: mode 0555, or for root (whom modes do not stop) the immutable attribute."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", *map(str, directories)], capture_output=True).returncode:
            pytest.skip("running as root on a file system without the immutable attribute: no directory is read-only to root")
        undo = lambda: subprocess.run(["chattr", "-i", *map(str, directories)], check=True)  # noqa: E731
    else:
        for directory in directories:
            directory.chmod(0o555)
        undo = lambda: [directory.chmod(0o755) for directory in directories]  # noqa: E731
    try:
        yield
    finally:
        undo()


def test_read_only_runs_dir_is_verified_without_recording(env, md5_calls):
    bench, _ = env.prepare()
    test_file = env.split("test")
    later = test_file.stat().st_mtime_ns + 5 * 10**9
    os.utime(test_file, ns=(later, later))  # to be hashed: its record no longer holds
    leftover = env.data_dir / f".{BENCH}.staging@{this_host()}@{_dead_pid()}"
    leftover.mkdir()
    record = (env.data_dir / BENCH / VERIFIED).read_bytes()
    with read_only(env.data_dir, env.data_dir / BENCH):
        with pytest.raises(PermissionError):
            (env.data_dir / BENCH / "probe").touch()
        md5_calls.clear()
        for _ in range(2):
            checked = env.prepared()
            assert checked.data_hash == bench.data_hash
            assert checked.load("test").n_questions == 30 and checked.load("train").n_questions == 90
        assert md5_calls == [test_file] * 2  # hashed at each prepared() (not at each load), as nothing can be recorded
        assert (env.data_dir / BENCH / VERIFIED).read_bytes() == record
        up_to_date = env.concur("data", "prepare", BENCH, "--source-dir", str(env.source_root))
        assert up_to_date.returncode == 0, up_to_date.stderr
        assert "up to date" in up_to_date.stdout and leftover.is_dir()  # it cannot be removed here, and that is no error
        actual = _edit_question(env.split("train"))  # the files themselves stay writable: only the directories are not
        line = _one_error_line(env.concur("data", "prepare", BENCH))
        assert line.startswith(f"{env.split('train')}: content changed") and actual in line
    with pytest.raises(DataChangedError):
        env.prepare()
    assert not leftover.exists()  # writable again: the next prepare removes it, then refuses the changed data


# publishing and leftovers, without a benchmark ------------------------------------------------------


def _listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


@pytest.mark.parametrize("target", [".", "..", "sub/deeper", "../elsewhere", "/abs", ""])
def test_publish_refuses_a_final_not_strictly_inside_the_parent(tmp_path, target):
    parent = tmp_path / "data"
    (parent / "sub").mkdir(parents=True)
    (parent / "keep").mkdir()
    (parent / "keep" / "file").write_text("kept")
    staging = parent / ".new.staging"
    staging.mkdir()
    (staging / "file").write_text("new")
    before = _listing(tmp_path)
    final = parent / target if target != "/abs" else tmp_path / "abs"
    with pytest.raises(ConcurError, match=r"^refusing to publish .*: it is not a directory strictly inside "):
        publish_directory(staging, final)
    assert _listing(tmp_path) == before
    with pytest.raises(ConcurError, match="does not name an entry directly inside"):
        entry_path(parent, target)


def _old_and_staged(parent: Path, staged: str) -> Path:
    """`parent/bench` holding "old" and a staging directory beside it holding `staged`; returns the staging directory."""
    for directory, text in ((parent / "bench", "old"), (parent / ".bench.staging", staged)):
        directory.mkdir(parents=True)
        (directory / "file").write_text(text)
    return parent / ".bench.staging"


def test_publish_replaces_and_puts_the_old_directory_back_on_failure(tmp_path, monkeypatch):
    parent = tmp_path / "data"
    staging = _old_and_staged(parent, "new")
    real_replace = os.replace

    def failing(source, target):
        if Path(source) == staging:
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(fsutil.os, "replace", failing)
    with pytest.raises(OSError, match="No space left"):
        publish_directory(staging, parent / "bench")
    assert (parent / "bench" / "file").read_text() == "old"
    assert sorted(p.name for p in parent.iterdir()) == [".bench.staging", "bench"]
    monkeypatch.undo()
    assert publish_directory(staging, parent / "bench") is True
    assert (parent / "bench" / "file").read_text() == "new" and sorted(p.name for p in parent.iterdir()) == ["bench"]


def test_publish_keeps_the_directory_another_process_published_in_between(tmp_path, monkeypatch):
    """Two drivers prepare one benchmark: the other publishes between our moving the old one aside and our rename."""
    parent = tmp_path / "data"
    staging = _old_and_staged(parent, "ours")
    real_replace = os.replace

    def racing(source, target):
        real_replace(source, target)
        if Path(target).name.startswith(".bench.old"):  # the old one is aside: the other process's rename lands now
            (parent / "bench").mkdir()
            (parent / "bench" / "file").write_text("theirs")

    monkeypatch.setattr(fsutil.os, "replace", racing)
    assert publish_directory(staging, parent / "bench") is False
    assert (parent / "bench" / "file").read_text() == "theirs"
    assert sorted(p.name for p in parent.iterdir()) == ["bench"]  # neither ours nor the old one is left behind


def test_a_copy_another_driver_finished_meanwhile_is_used_and_left_in_place(env, monkeypatch):
    """Drivers started together each prepare: a later one keeps the first one's copy, which jobs may already read."""
    real_write = prepare_module._write
    others: list[int] = []

    def write_while_another_finishes(spec, splits, located, staging):
        manifest = real_write(spec, splits, located, staging)
        other = staging.parent / ".other-driver"
        real_write(spec, splits, located, other)
        os.replace(other, env.data_dir / BENCH)  # the other driver's publish lands first
        others.append((env.data_dir / BENCH).stat().st_ino)
        return manifest

    monkeypatch.setattr(prepare_module, "_write", write_while_another_finishes)
    bench, worked = env.prepare()
    assert worked and bench.directory == env.data_dir / BENCH
    assert (env.data_dir / BENCH).stat().st_ino == others[0]  # the other copy was not replaced
    assert sorted(path.name for path in env.data_dir.iterdir()) == [BENCH]  # no staging or retired copy left


def test_leftovers_are_removed_only_when_their_writer_is_gone(tmp_path, monkeypatch):
    host = this_host()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            "dead here": f".b.staging@{host}@{_dead_pid()}",
            "dead here, file": f".b.staging@{host}@{_dead_pid()}.x9.tmp",
            "running here": f".b.staging@{host}@{sleeper.pid}",
            "this process": f".b.staging@{host}@{os.getpid()}",
            "another host": f".b.staging@elsewhere.example@{os.getpid()}",
            "another stem": f".bb.staging@{host}@{_dead_pid()}",
            "not owned": ".b.staging",
        }
        for label, name in names.items():
            if label.endswith("file"):
                (tmp_path / name).write_text("x")
            else:
                (tmp_path / name).mkdir()
        removed = remove_abandoned(tmp_path, ".b.staging")
        assert sorted(p.name for p in removed) == sorted([names["dead here"], names["dead here, file"]])
        kept = sorted(p.name for p in tmp_path.iterdir())
        assert kept == sorted(name for label, name in names.items() if not label.startswith("dead here"))
        now = time.time()
        monkeypatch.setattr(fsutil.time, "time", lambda: now + ABANDONED_AFTER_SECONDS + 60)  # a day later
        assert [p.name for p in remove_abandoned(tmp_path, ".b.staging")] == [names["another host"]]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_benches_lists_damaged_data_and_goes_on(env):
    env.prepare()
    env.prepare(OTHER)
    _edit_question(env.split("test"))
    listing = env.concur("benches", "--format", "json")
    assert listing.returncode == 0 and "Traceback" not in listing.stderr
    records = {record["id"]: record for record in json.loads(listing.stdout)}
    assert records[BENCH]["offline"] == f"damaged: {env.split('test')}" and records[BENCH]["data"] == "damaged"
    assert records[OTHER]["offline"] == "prepared" and records[OTHER]["data"] == "prepared"

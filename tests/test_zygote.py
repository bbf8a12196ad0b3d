"""Workers forked from a warm zygote (concur.runner.execution.zygote, .forked) behave as new processes would."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from concur.runner.execution import zygote as zygote_module
from concur.runner.execution.worker import DRIVER_PID_ENV
from concur.runner.records.store import Store
from concur.runner.scheduling import zygote_client
from concur.runner.scheduling.zygote_client import Zygote, ZygoteError
from tests.conftest import write_tiny_reader


def _fork(zygote: Zygote, tmp_path, name: str, **environment: str):
    output = tmp_path / f"{name}.out"
    return zygote.fork(tmp_path / f"{name}.json", output, {**os.environ, **environment}), output


def test_a_forked_worker_reports_its_exit_status_and_writes_only_its_own_output(tmp_path):
    zygote = Zygote(os.environ)
    try:
        worker, output = _fork(zygote, tmp_path, "missing")  # no such request file: the worker fails as a new process would
        assert worker.wait() == 1 and worker.poll() == 1
        text = output.read_text()
        assert "Traceback" in text and "missing.json" in text
        second, _ = _fork(zygote, tmp_path, "other")
        assert second.wait() == 1 and second.pid != worker.pid
        assert zygote.environment[DRIVER_PID_ENV] == str(os.getpid())  # it dies with this process
        process = zygote.process  # its report reader lets go of it once it has left
    finally:
        zygote.close()
    assert process is not None and process.returncode == 0  # it left when its stdin closed


def _blocked(zygote: Zygote, tmp_path, name: str):
    """A worker that waits until killed: its request is a FIFO nobody writes."""
    request = tmp_path / f"{name}.json"
    os.mkfifo(request)
    return zygote.fork(request, tmp_path / f"{name}.out", dict(os.environ))


def _gone(pid: int) -> bool:
    """Exited (a zombie counts: nobody may reap an orphan in a container)."""
    try:
        status = open(f"/proc/{pid}/status").read()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


def test_waiting_for_an_exit_returns_when_a_worker_exits_not_at_the_timeout(tmp_path):
    zygote = Zygote(os.environ)
    try:
        worker = _blocked(zygote, tmp_path, "held")
        zygote.wait_for_exit(0.2)  # nothing has exited: it waits out its timeout
        assert worker.poll() is None
        started = time.monotonic()
        os.killpg(worker.pid, signal.SIGKILL)  # it leads its own session
        zygote.wait_for_exit(600)
        assert worker.poll() == -signal.SIGKILL  # its exit was already reported when the wait returned
        assert time.monotonic() - started < 300  # woken by the exit, not by the ten-minute timeout
    finally:
        zygote.close()


def test_a_zygote_imports_the_modules_it_is_given_once_before_forking_and_skips_missing_ones(tmp_path):
    package = tmp_path / "site"
    package.mkdir()
    marker = tmp_path / "imported"
    (package / "heavy_model_code.py").write_text(f"open({str(marker)!r}, 'a').write('once\\n')\n")
    zygote = Zygote({**os.environ, "PYTHONPATH": f"{package}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
                    ["heavy_model_code", "no_such_module_here"])  # fmt: skip
    try:
        for name in ("first", "second"):
            worker, _ = _fork(zygote, tmp_path, name)
            assert worker.wait() == 1  # forked all the same: fails on its missing request file
    finally:
        zygote.close()
    assert marker.read_text() == "once\n"  # by the zygote, once for both workers


def test_a_forked_worker_leads_its_own_session_and_is_killed_with_it(tmp_path):
    zygote = Zygote(os.environ)
    try:
        worker = _blocked(zygote, tmp_path, "waiting")
        deadline = time.monotonic() + 60
        while os.getpgid(worker.pid) != worker.pid and time.monotonic() < deadline:  # setsid comes right after the fork
            time.sleep(0.01)
        assert os.getpgid(worker.pid) == worker.pid and worker.poll() is None
        os.killpg(worker.pid, signal.SIGKILL)
        assert worker.wait() == -signal.SIGKILL
    finally:
        zygote.close()


def test_workers_die_with_their_zygote_and_are_reported_killed(tmp_path):
    """The zygote dies with the driver (parent-death signal); its workers die with it."""
    zygote = Zygote(os.environ)
    try:
        worker = _blocked(zygote, tmp_path, "orphan")
        first = zygote.process.pid
        assert not _gone(first) and worker.poll() is None  # both alive until the zygote is killed
        os.kill(first, signal.SIGKILL)
        assert worker.wait() == -signal.SIGKILL
        deadline = time.monotonic() + 30
        while not _gone(worker.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(worker.pid)
        replacement, _ = _fork(zygote, tmp_path, "after")  # the next fork starts a new zygote
        assert replacement.wait() == 1 and zygote.process.pid != first
    finally:
        zygote.close()


class _LateZygote(Zygote):
    """A zygote that answers its first request after 2 s, with a made-up pid, then waits for its stdin to close."""

    command = (
        sys.executable,
        "-c",
        "import sys, time; sys.stdin.readline(); time.sleep(2); print('{\"pid\": 4242}', flush=True); sys.stdin.read()",
    )


def test_a_zygote_that_does_not_answer_in_time_is_killed_and_its_late_answer_is_never_taken(tmp_path, monkeypatch):
    monkeypatch.setattr(zygote_client, "ANSWER_SECONDS", 0.5)
    zygote = _LateZygote(os.environ)
    with pytest.raises(ZygoteError, match="did not fork within"):
        _fork(zygote, tmp_path, "late")
    first = zygote.process
    assert first.wait(timeout=30) == -signal.SIGKILL  # killed before its answer came
    deadline = time.monotonic() + 30
    while zygote.process is first and time.monotonic() < deadline:  # the reader sees it gone
        time.sleep(0.01)
    assert zygote.process is None and zygote.forked == []


class _CudaInitialisedZygote(Zygote):
    """The real zygote, as it would be had it initialised CUDA: its driver is libc, which cannot say it has not."""

    command = (
        sys.executable,
        "-c",
        "import sys; from concur.runner.execution import zygote; zygote.CUDA_DRIVER = 'libc.so'; sys.exit(zygote.main())",
    )


def test_a_zygote_that_initialised_cuda_refuses_gpu_workers_and_still_forks_cpu_workers(tmp_path):
    zygote = _CudaInitialisedZygote(os.environ)
    try:
        with pytest.raises(ZygoteError, match="has initialised the CUDA driver, which a forked GPU worker cannot use"):
            _fork(zygote, tmp_path, "gpu", CUDA_VISIBLE_DEVICES="0")
        worker, output = _fork(zygote, tmp_path, "cpu", CUDA_VISIBLE_DEVICES="")  # the pool hides every GPU from CPU workers
        assert worker.wait() == 1 and "cpu.json" in output.read_text()  # forked: fails on its missing request file
        assert zygote.refused == [] and not (tmp_path / "gpu.out").exists()
    finally:
        zygote.close()


def _fake_driver(tmp_path, name: str, body: str):
    """A shared library at tmp_path/name built from C `body`, listed in a memory map as a process would list it."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed: the fake CUDA drivers cannot be built")
    source = tmp_path / f"{name}.c"
    source.write_text(body)
    library = tmp_path / name
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    maps = tmp_path / f"{name}.maps"
    maps.write_text(
        "7f00-7f10 r-xp 0 08:01 12 /usr/local/cuda/lib64/libcudart.so.13\n"
        f"7f20-7f30 r--p 0 08:01 13 {library}\n7f30-7f40 r-xp 1000 08:01 13 {library}\n"
    )
    return maps


@pytest.mark.parametrize(
    ("status", "initialised"),
    [(3, False), (0, True), (100, True)],  # CUDA_ERROR_NOT_INITIALIZED; CUDA_SUCCESS; CUDA_ERROR_NO_DEVICE (after cuInit)
)
def test_cuda_counts_as_initialised_unless_its_driver_says_it_is_not(tmp_path, status, initialised):
    body = f"int cuDeviceGetCount(int *count) {{ *count = 1; return {status}; }}\n"
    maps = _fake_driver(tmp_path, f"libcuda.so.580.{status}", body)  # a name per status: a process keeps what it loaded
    assert zygote_module.cuda_initialised(maps) is initialised
    refusal = zygote_module.refusal_for({"CUDA_VISIBLE_DEVICES": "1"}, maps)
    assert (refusal is not None) is initialised
    assert zygote_module.refusal_for({"CUDA_VISIBLE_DEVICES": ""}, maps) is None  # a CPU worker never uses it
    assert zygote_module.refusal_for({}, maps) is None


def test_cuda_is_not_initialised_where_its_driver_was_never_loaded_and_is_where_nothing_can_tell(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f10 r-xp 0 08:01 12 /usr/local/cuda/lib64/libcudart.so.13\n")  # the runtime alone
    assert zygote_module.cuda_initialised(maps) is False
    assert zygote_module.cuda_initialised(tmp_path / "unreadable") is True
    no_symbol = _fake_driver(tmp_path, "libcuda.so.1", "int something_else(void) { return 0; }\n")
    assert zygote_module.cuda_initialised(no_symbol) is True


def _run_tiny_grid(concur, tmp_path, tiny_registry, seeds: int):
    """`concur run` of a tiny reader with `seeds` seeds on the CPU (a grid: its workers fork warm); checks every job finished."""
    write_tiny_reader(tiny_registry, "tiny-reader", {"epochs": 1.0})
    common = ["--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs")]
    result = concur(*common, "run", "-a", "tiny-reader", "-b", "tiny-babi", "--seeds", ",".join(map(str, range(seeds))),
                    "--device", "cpu", "--source-dir", str(tmp_path / "data-root"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"{seeds} run now: {seeds} done" in result.stdout
    assert len(Store(tmp_path / "runs" / "concur.sqlite").rows()) == seeds
    return result


@pytest.mark.slow
def test_a_grid_starts_new_processes_when_its_zygote_cannot_fork(concur, tmp_path, tiny_registry, monkeypatch):
    monkeypatch.setattr(zygote_client, "ANSWER_SECONDS", 0.5)
    monkeypatch.setattr(Zygote, "command", _LateZygote.command)
    result = _run_tiny_grid(concur, tmp_path, tiny_registry, seeds=2)
    assert (result.stdout + result.stderr).count("warm workers stopped (the worker zygote did not fork within 0 s)") == 1
    assert [row["pool_start_seconds"] for row in Store(tmp_path / "runs" / "concur.sqlite").rows()] == [None, None]  # new processes


@pytest.mark.slow
def test_a_cpu_grid_forks_its_workers_from_one_zygote(concur, tmp_path, tiny_registry, monkeypatch):
    forks: list[int] = []
    starts: list[int] = []
    original_fork, original_start = Zygote.fork, Zygote._start

    def counted_fork(self, *args):
        worker = original_fork(self, *args)
        forks.append(worker.pid)
        return worker

    def counted_start(self):
        starts.append(1)
        original_start(self)

    monkeypatch.setattr(Zygote, "fork", counted_fork)
    monkeypatch.setattr(Zygote, "_start", counted_start)
    _run_tiny_grid(concur, tmp_path, tiny_registry, seeds=3)
    assert len(forks) == 3 and len(set(forks)) == 3 and starts == [1]
    # each job recorded the one zygote's start (its imports, seconds on any machine), which its run paid once
    (start,) = {row["pool_start_seconds"] for row in Store(tmp_path / "runs" / "concur.sqlite").rows()}
    assert 0.2 < start < 120


GPU_CHILD = """
import importlib, os, sys
from concur.components import resolve
from concur.runner.execution import zygote
for module in (*zygote.PRELOAD, *resolve("approach", "hf-span").modules()):  # a grid of pretrained models: the most it imports
    importlib.import_module(module)
assert zygote.refusal_for({"CUDA_VISIBLE_DEVICES": "0"}) is None, "the zygote's imports initialised CUDA"
pid = os.fork()
if pid == 0:
    import torch
    a = torch.ones(256, 256, device="cuda")
    os._exit(0 if (a @ a).sum().item() == 256**3 else 1)
assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, "the forked child could not use CUDA"
import torch
torch.cuda.init()
assert zygote.refusal_for({"CUDA_VISIBLE_DEVICES": "0"}) is not None, "CUDA initialised, yet not refused"
print("ok")
"""


def test_a_gpu_worker_forked_after_the_zygotes_imports_uses_cuda():
    """On a CUDA machine (seen passing on an H100, torch 2.11+cu130, where importing torch maps the driver library)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU here: forking GPU workers is checked on GPU machines")
    ran = subprocess.run([sys.executable, "-c", GPU_CHILD], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", ran.stderr

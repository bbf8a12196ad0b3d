"""A full disk, for real: a small tmpfs as the runs dir (mounting one needs root, as CI runs).

Wherever the space runs out (the index, a claim, a request, a job's files, data preparation),
the command ends in one line naming the path and the free space, leaves no temporary file,
staging directory or claim behind and records no job as failed; once space is freed, running
the same command again completes the grid.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

DISK_KB = 1024
FREE_KB = (0, 100)  # what is left free when the grid starts: the index runs out of space, then a job's files
SEEDS = "0,1"
FULL_LINE = re.compile(
    r"^error: (?:job [0-9a-f]+ \(.*\) stopped without a result: )?cannot write (?P<path>\S+): No space left on device"
    r"(?: \(SQLite: database or disk is full\))?; (?P<free>[0-9.]+ k?B) free on (?P<where>\S+): "
    r"free some space \(or fix the disk\), then run the same command again$"
)


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    """A tmpfs of DISK_KB, unmounted after the test; skipped, with the reason, where it cannot be mounted."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_KB}k", "tmpfs", str(mount)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"could not mount a tmpfs at {mount}: {mounted.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave_kb: int) -> Path:
    """A file taking all but `leave_kb` of the disk's space."""
    filler = disk / "filler"
    room = shutil.disk_usage(disk).free - leave_kb * 1024
    with open(filler, "wb") as handle:
        try:
            handle.write(b"\0" * max(0, room))
            handle.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC
    return filler


def _leftovers(disk: Path) -> list[str]:
    """Temporary files and staging directories anywhere on the disk, and claims: what a stopped writer must not leave."""
    found = [path for path in disk.rglob("*") if ".tmp" in path.name or ".staging" in path.name or ".rebuild" in path.name]
    found += [path for path in disk.rglob("claims/*.json")]
    return sorted(str(path.relative_to(disk)) for path in found)


def _full_line(stderr: str) -> re.Match[str]:
    last = stderr.strip().splitlines()[-1]
    matched = FULL_LINE.match(last)
    assert matched is not None, stderr
    assert "Traceback" not in stderr and "unexpected error" not in stderr
    return matched


def test_preparing_data_on_a_full_disk_names_the_file_and_leaves_no_staging_directory(concur, small_disk, tmp_path, tiny_registry):
    runs = small_disk / "runs"
    prepare = ("--registry", str(tiny_registry), "--runs-dir", str(runs), "data", "prepare", "tiny-babi")
    filler = _fill(small_disk, 0)
    full = concur(*prepare, "--source-dir", str(tmp_path / "data-root"))
    assert full.returncode == 2
    line = _full_line(full.stderr)
    assert line["path"].startswith(str(runs / "data")) and line["free"] == "0 B"
    assert _leftovers(small_disk) == []
    filler.unlink()
    again = concur(*prepare, "--source-dir", str(tmp_path / "data-root"))
    assert again.returncode == 0, again.stderr
    assert (runs / "data" / "tiny-babi" / "manifest.json").is_file()


def test_a_grid_on_a_full_disk_stops_in_one_line_and_the_rerun_completes_it(concur, small_disk, tmp_path, tiny_registry):
    """The grid is run with FREE_KB left, one level after another, and once more with the space freed."""
    runs = small_disk / "runs"
    where = ("--registry", str(tiny_registry), "--runs-dir", str(runs))
    sources = ("--source-dir", str(tmp_path / "data-root"))
    grid = (*where, "run", "-a", "tiny-reader", "-b", "tiny-babi", "--seeds", SEEDS, "--device", "cpu", "--workers", "1", *sources)
    assert concur(*where, "data", "prepare", "tiny-babi", *sources).returncode == 0
    named: dict[int, str] = {}
    for leave_kb in FREE_KB:
        filler = _fill(small_disk, leave_kb)
        full = concur(*grid)
        assert full.returncode == 2, full.stderr
        line = _full_line(full.stderr)
        assert line["path"].startswith(str(runs)) and line["where"].startswith(str(small_disk))
        named[leave_kb] = str(Path(line["path"]).relative_to(runs))
        assert _leftovers(small_disk) == [], leave_kb
        assert "FAILED" not in full.stderr and not [path for path in runs.rglob("result.json") if '"failed"' in path.read_text()]
        filler.unlink()
    print(f"\nwhere the disk ran out, by the space left free (kB): {named}")
    assert named[FREE_KB[0]] == "concur.sqlite"  # the index, written first
    assert named[FREE_KB[1]].startswith(("jobs/", "claims/", "requests/"))  # then the runner's own files
    again = concur(*grid)
    assert again.returncode == 0, again.stderr
    assert re.search(r"^2 jobs, \d run now: 2 done\b", again.stdout, re.MULTILINE), again.stdout
    assert _leftovers(small_disk) == []

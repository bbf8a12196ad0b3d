"""`concur --help` and `concur benches` start light: none of the heavy libraries is imported.

Each command runs in a fresh interpreter (this test process has long imported them all), which
then lists the heavy libraries it holds. The commands that need them (run, matrix, figures, ...)
import them when they run (`concur.cli.lazy`), so listing what is there stays quick.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "scipy", "matplotlib", "seaborn", "pandas")
PROBE = f"""
import json, sys
from concur.cli import main
sys.argv = ["concur", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted({{name.partition(".")[0] for name in sys.modules}} & set({HEAVY!r}))), file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--help"], ["Usage:", "benches", "study", "matrix", "Concurrence between every pair of benchmarks"]),
        (["benches"], ["benchmarks", "babi-1", "squad-dev-carved", "offline"]),
    ],
)
def test_a_light_command_imports_no_heavy_library(tmp_path, args, shown):
    ran = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    *_, heavy = ran.stderr.strip().splitlines()
    assert json.loads(heavy) == [], ran.stderr
    assert all(text in ran.stdout for text in shown), ran.stdout


@pytest.mark.slow
def test_a_driver_of_cpu_jobs_imports_neither_torch_nor_transformers(tmp_path, tiny_registry):
    """The jobs import them in their own worker processes; the driver only plans, starts and indexes them."""
    args = ["--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs"), "run", "-a", "tiny-reader", "-b", "tiny-babi"]
    args += ["--device", "cpu", "--source-dir", str(tmp_path / "data-root")]
    ran = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    *_, heavy = ran.stderr.strip().splitlines()
    assert "done: tiny-reader on tiny-babi" in ran.stdout, ran.stderr
    assert not {"torch", "transformers"} & set(json.loads(heavy)), heavy

"""The measuring scripts of analysis/ run as their docstrings say, at toy sizes on the real shared data.

They import the library like any user code, so a change of its interfaces (a field removed
from RunContext, say) must fail here, not on the next person who measures speed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO, SHARED_DATA, shared_file


def _script(tmp_path, name: str, *args: str) -> str:
    ran = subprocess.run(
        [sys.executable, str(REPO / "analysis" / name), *args, "--source-dir", str(SHARED_DATA)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


@pytest.mark.slow
def test_speed_readers_reports_positive_rates(tmp_path):
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    out = _script(tmp_path, "speed_readers.py", "--approaches", "rasor", "--steps", "2", "--warmup-steps", "1", "--questions", "40")
    (row,) = [line.split() for line in out.splitlines() if line.startswith("rasor ")]
    batch, train_rate, predict_rate = int(row[1]), float(row[2]), float(row[3])
    assert batch == 4 and train_rate > 0 and predict_rate > 0  # rasor's spec trains in batches of 4


@pytest.mark.slow
def test_readers_check_trains_and_scores_a_reader(tmp_path):
    shared_file("babi")
    out = _script(tmp_path, "readers_check.py", "--approaches", "tiny-rasor", "--train-questions", "100", "--test-questions", "50")
    (row,) = [line.split() for line in out.splitlines() if line.startswith("tiny-rasor ")]
    em, f1, params = float(row[1]), float(row[2]), int(row[3].replace(",", ""))
    assert 0 <= em <= f1 <= 100 and params > 0
    assert "babi-1: train 100 questions" in out and "test 50 /" in out

"""Shared test fixtures: the real data under ../shared, and an isolated environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CONCUR_TEST_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_file(relative: str) -> Path:
    """A real data file from ../shared/data; the test is skipped, visibly, where it is absent."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"real data not on this machine: {path} (set CONCUR_TEST_SHARED_DATA to the shared data directory)")
    return path


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch, tmp_path):
    """No test reads the user's registry, data root, runs directory, or the network hub."""
    for variable in ("CONCUR_REGISTRY", "CONCUR_DATA_ROOT", "CONCUR_RUNS", "CONCUR_MODELS"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CONCUR_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)

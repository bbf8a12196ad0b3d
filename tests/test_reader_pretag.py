"""`concur data annotate`: a benchmark is tagged once into the annotation cache, and jobs then read it."""

from __future__ import annotations

import sqlite3

import pytest
from typer.testing import CliRunner

from concur.cli import app
from concur.data.mrqa import read_mrqa
from concur.registry import default_registry
from tests.conftest import toml_value
from tests.spacy_pipeline import build_babi_pipeline

pytest.importorskip("spacy", reason="spaCy is not installed (pip install 'concur[features]'); tagging needs it")


def _with_features_approach(registry, pipeline) -> None:
    docreader = default_registry().approach("docreader")
    body = "\n".join(f"{key} = {toml_value(value)}" for key, value in docreader.hparams.items())
    (registry / "approaches" / "babi-docreader.toml").write_text(
        'id = "babi-docreader"\nfamily = "non-pretrained"\nimplementation = "docreader"\n'
        '[model]\nword_vectors = "glove.840B.300d"\noffline_vectors = "random"\nword_dim = 8\n'
        f'linguistic_features = true\nspacy_pipeline = "{pipeline}"\n[hparams]\n{body}\n'
    )


def test_annotate_tags_each_distinct_text_once_and_a_rerun_tags_nothing(tmp_path, tiny_registry):
    _with_features_approach(tiny_registry, build_babi_pipeline(tmp_path / "babi_rules"))
    runs = tmp_path / "runs"
    args = ["--registry", str(tiny_registry), "--runs-dir", str(runs), "data", "annotate", "tiny-babi", "-a", "babi-docreader"]
    args += ["--source-dir", str(tmp_path / "data-root")]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    # tiny-babi: 40 training and 10 test stories of 3 questions, one passage per question
    assert "en_babi_rules 1.0.0" in first.output and "babi-docreader" in first.output
    splits = [read_mrqa(runs / "data" / "tiny-babi" / f"{split}.jsonl.gz") for split in ("train", "test")]
    contexts = {passage.context for split in splits for passage in split.passages}
    questions = {question.question for split in splits for _, question in split.questions()}
    assert len(questions) == 4  # "Where is <person>?" for the four people
    with sqlite3.connect(runs / "cache" / "annotations" / "en_babi_rules-1.0.0.sqlite") as connection:
        (rows,) = connection.execute("SELECT COUNT(*) FROM annotations").fetchone()
    assert rows == len(contexts) + len(questions)
    row = next(line for line in first.output.splitlines() if "tiny-babi" in line)
    assert "│ 300 " in row and f"│ {rows} " in row  # 150 passages + 150 questions; each distinct one tagged
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    row = next(line for line in second.output.splitlines() if "tiny-babi" in line)
    assert "│ 300 " in row and "│ 0 " in row


def test_annotate_refuses_approaches_without_features(concur, tmp_path, tiny_registry):
    result = concur("--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs"), "data", "annotate", "tiny-babi", "-a", "bidaf")
    assert result.returncode == 2
    assert "none of the approaches bidaf uses linguistic features; nothing to annotate" in " ".join(result.stderr.split())
    assert not (tmp_path / "runs" / "data").exists()  # refused before any work

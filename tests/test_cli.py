"""The command line as a user runs it: its entry point in this process (the `concur` fixture), and once as `python -m concur`."""

import json
import subprocess
import sys
import tomllib

import pytest

from concur import __version__
from tests.conftest import REPO, SHARED_DATA, shared_file
from tests.test_data_formats import SQUAD_FIXTURE


def _spec_ids(kind: str, family: str | None = None) -> set[str]:
    """The ids of the shipped specs in `benchmarks/` or `approaches/` (of one family), read from the TOML files."""
    specs = [tomllib.loads(path.read_text()) for path in (REPO / kind).glob("*.toml")]
    return {spec["id"] for spec in specs if family is None or spec["family"] == family}


def test_python_dash_m_concur_is_the_command_line(concur, tmp_path):
    """The module entry point in a real process: the version, and a user error as one line with status 2."""
    version = subprocess.run([sys.executable, "-m", "concur", "--version"], capture_output=True, text=True, timeout=120)
    assert (version.returncode, version.stdout) == (0, f"concur {__version__}\n")
    typo = subprocess.run([sys.executable, "-m", "concur", "benches", "--family", "cloz"], capture_output=True, text=True, cwd=tmp_path)
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr.strip().splitlines() == ["error: unknown benchmark family 'cloz'; did you mean 'cloze'?"]


def test_score_real_official_predictions_on_xquad_subset(concur):
    gold = shared_file("squad/xquad/xquad.en.json.gz")
    bert = shared_file("squad/explorer/models/1.1/BERT_ensemble_Google_AI_Language.json.gz")
    baseline = shared_file("squad/explorer/models/1.1/Logistic_Regression_Baseline_Stanford_University.json.gz")
    result = concur("score", str(gold), str(bert))
    assert result.returncode == 0, result.stderr
    bert_scores = json.loads(result.stdout)
    assert set(bert_scores) == {"exact_match", "f1"}
    # 10,570 dev predictions for 1,190 gold questions: the rest are reported and ignored
    assert "9380 predictions are for questions not in xquad.en.json.gz and were ignored" in result.stderr
    assert "no prediction" not in result.stderr
    lr = json.loads(concur("score", str(gold), str(baseline)).stdout)
    # XQuAD keeps one reference answer per question (the dev set has about three), so scores
    # sit below the leaderboard's dev F1 (BERT ensemble about 93, the LR baseline 51)
    assert 80 < bert_scores["f1"] < 93 and 35 < lr["f1"] < 55
    assert bert_scores["exact_match"] < bert_scores["f1"] and lr["exact_match"] < lr["f1"]


def test_score_mrqa_gold_with_missing_predictions(concur, tmp_path):
    gold = shared_file("mrqa/dev/SQuAD.jsonl.gz")
    from concur.data.mrqa import read_mrqa

    split = read_mrqa(gold)
    golds = split.gold_answers()
    qids = list(golds)
    predictions = {qid: golds[qid][0] for qid in qids[:5000]}  # right answers for the first 5,000
    predictions.update({qid: "wrong" for qid in qids[5000:10000]})
    (tmp_path / "pred.json").write_text(json.dumps(predictions))
    result = concur("score", str(gold), str(tmp_path / "pred.json"))
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert scores["exact_match"] == pytest.approx(100 * 5000 / 10_507)
    assert "507 of 10507 questions have no prediction and count as wrong" in result.stderr


def test_score_fixture_exact_values_and_bad_predictions(concur, tmp_path):
    (tmp_path / "gold.json").write_text(json.dumps(SQUAD_FIXTURE))
    (tmp_path / "pred.json").write_text(json.dumps({"a": "in Normandy!", "b": "in France", "zzz": "?"}))
    result = concur("score", "gold.json", "pred.json", cwd=tmp_path)
    # a: EM 1 ("in normandy"); b: EM 0, F1 2/3 (P 1/2, R 1); c: missing
    assert json.loads(result.stdout) == {"exact_match": pytest.approx(100 / 3), "f1": pytest.approx(100 * (1 + 2 / 3) / 3)}
    assert "1 of 3 questions have no prediction" in result.stderr and "1 predictions are for questions not in" in result.stderr
    (tmp_path / "list.json").write_text("[1, 2]")
    result = concur("score", "gold.json", "list.json", cwd=tmp_path)
    assert result.returncode == 2 and "list.json: predictions must be a JSON object" in result.stderr
    (tmp_path / "numbers.json").write_text('{"a": 3}')
    assert "the prediction for 'a' must be a string" in concur("score", "gold.json", "numbers.json", cwd=tmp_path).stderr
    result = concur("score", "missing.json", "pred.json", cwd=tmp_path)
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_listing_json(concur):
    benches = json.loads(concur("benches", "--format", "json").stdout)
    by_id = {record["id"]: record for record in benches}
    assert set(by_id) == _spec_ids("benchmarks")  # every shipped spec, each once
    assert by_id["qamr"]["source"]["sentences"]["url"] == "https://raw.githubusercontent.com/uwnlp/qamr/master/data/wiki-sentences.tsv"
    assert by_id["squad"]["family"] == "human"
    assert by_id["squad"]["source"]["train"]["url"] == "https://rajpurkar.github.io/SQuAD-explorer/dataset/train-v1.1.json"
    assert by_id["babi-2-10k"]["source"]["test"]["url"].startswith("http://www.thespermwhale.com/jaseweston/babi/")
    approaches = json.loads(concur("approaches", "--format", "json").stdout)
    by_id = {record["id"]: record for record in approaches}
    assert set(by_id) == _spec_ids("approaches") and len(approaches) == len(by_id)
    assert by_id["bidaf"]["family"] == "non-pretrained" and by_id["bidaf"]["implementation"] == "bidaf"
    assert by_id["roberta-large"]["implementation"] == "hf-span" and by_id["roberta-large"]["model"] == "roberta-large"
    pretrained = json.loads(concur("approaches", "--family", "pretrained", "--format", "json").stdout)
    assert {r["id"] for r in pretrained} == _spec_ids("approaches", "pretrained") and {r["family"] for r in pretrained} == {"pretrained"}


def test_listing_shows_local_availability(concur):
    shared_file("babi")
    records = json.loads(concur("benches", "--family", "synthetic", "--format", "json", "--source-dir", str(SHARED_DATA)).stdout)
    by_id = {record["id"]: record for record in records}
    assert by_id["babi-1"]["data"] == "local"
    assert by_id["babi-3-10k"]["source"]["train"]["available"] == "download"  # absent from the shared copy


def test_unknown_names_are_clear_errors(concur, tmp_path):
    result = concur("run", "--approach", "bert-bsae", "--bench", "babi-1", cwd=tmp_path)
    assert result.returncode == 2 and "unknown approach 'bert-bsae'; did you mean 'bert-base'?" in result.stderr
    result = concur("data", "prepare", "babi-1", "sqad", cwd=tmp_path)
    assert "unknown benchmark 'sqad'; did you mean 'squad'?" in result.stderr
    assert not (tmp_path / "runs").exists()  # names are checked before any work
    (tmp_path / "mine" / "approaches").mkdir(parents=True)
    (tmp_path / "mine" / "approaches" / "new-reader.toml").write_text(
        'id = "new-reader"\nfamily = "non-pretrained"\nimplementation = "new-reader"\n[hparams]\n'
    )
    result = concur("--registry", str(tmp_path / "mine"), "run", "--approach", "new-reader", "--bench", "babi-1", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "new-reader.toml, field 'implementation': 'new-reader' is not one of hf-span, bidaf" in result.stderr


def test_data_prepare_cli(concur, tmp_path):
    shared_file("babi")
    result = concur("--runs-dir", str(tmp_path / "runs"), "data", "prepare", "babi-1", "babi-15", "--source-dir", str(SHARED_DATA))
    assert result.returncode == 0, result.stderr
    assert "babi-1" in result.stdout and "1,000 / 1,000" in result.stdout
    assert sorted(p.name for p in (tmp_path / "runs" / "data").iterdir()) == ["babi-1", "babi-15"]
    again = concur("--runs-dir", str(tmp_path / "runs"), "data", "prepare", "babi-1", "--source-dir", str(SHARED_DATA))
    assert "up to date" in again.stdout
    missing = concur("--runs-dir", str(tmp_path / "runs"), "data", "prepare", "babi-3-10k", "--source-dir", str(SHARED_DATA))
    assert missing.returncode == 2
    assert "tasks_1-20_v1-2.tar.gz: download failed" in missing.stderr and "--source-dir DIR" in missing.stderr

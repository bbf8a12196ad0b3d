"""The benchmark commands of bench/ (`python -m bench.NAME`) run as their docstrings say, at toy sizes on the real
shared data.

They import the library like any user code, so a change of its interfaces (a field removed
from RunContext, say) must fail here, not on the next person who measures speed.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import child_environment, module_command
from tests.conftest import REPO, SHARED_DATA, native_cpu_bf16, shared_file


@pytest.fixture(autouse=True)
def bench_importable(monkeypatch):
    """Every command these tests start finds `bench` (the repository first on the import path), from any directory."""
    monkeypatch.setenv("PYTHONPATH", child_environment()["PYTHONPATH"])


def _bench(name: str) -> list[str]:
    """The command line of `python -m bench.NAME`."""
    return module_command(f"bench.{name}")


def _module(name: str):
    """`bench.NAME`, imported."""
    return importlib.import_module(f"bench.{name}")


def _script(tmp_path, name: str, *args: str) -> str:
    ran = subprocess.run(
        [*_bench(name), *args, "--source-dir", str(SHARED_DATA)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=child_environment(),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


@pytest.mark.slow
def test_speed_readers_reports_positive_rates(tmp_path):
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    options = ["--epoch-questions", "10", "--warmup-steps", "1", "--questions", "40", "--precision", "fp32", "--profile"]
    out = _script(tmp_path, "speed_readers", "--approaches", "rasor", *options)
    assert "precision fp32" in out
    (row,) = [line.split() for line in out.splitlines() if line.startswith("rasor ")]
    batch, train_rate, predict_rate = int(row[1]), float(row[2]), float(row[3])
    assert batch == 4 and train_rate > 0 and predict_rate > 0  # rasor's spec trains in batches of 4
    (epoch,) = [line for line in out.splitlines() if line.startswith("rasor: one epoch")]
    seconds = float(re.fullmatch(r"rasor: one epoch of 10 questions \(3 steps of 4\) trained in ([0-9.]+) s", epoch).group(1))
    assert seconds == pytest.approx(3 * 4 / train_rate, abs=0.06)  # the rate is the same run's questions over its seconds
    profiled = re.search(r"^profiled 3 steps: ([0-9.]+) ms of host operator time a step \(([0-9.]+) s training call\)$", out, re.MULTILINE)
    host_ms, call_seconds = float(profiled.group(1)), float(profiled.group(2))
    assert call_seconds > seconds - 0.05  # the call holds the steps (the epoch line rounds to 0.1 s)
    assert 0 < 3 * host_ms < call_seconds * 1000 + 1  # the operators' own time fits inside the profiled call's wall time
    assert "aten::mkldnn_rnn_layer_backward" in out  # RaSoR's LSTMs' backward pass, among the busiest operators


@pytest.mark.slow
def test_readers_check_trains_and_scores_a_reader(tmp_path):
    shared_file("babi")
    native_cpu_bf16()
    options = ["--train-questions", "100", "--test-questions", "50", "--precision", "bf16"]
    out = _script(tmp_path, "readers_check", "--approaches", "tiny-rasor", *options)
    assert "precision bf16" in out  # trained and scored under bf16 autocast on the CPU
    (row,) = [line.split() for line in out.splitlines() if line.startswith("tiny-rasor ")]
    em, f1, params = float(row[1]), float(row[2]), int(row[3].replace(",", ""))
    assert 0 <= em <= f1 <= 100 and params > 0
    assert "babi-1: train 100 questions" in out and "test 50 /" in out


@pytest.mark.slow
def test_speed_training_runs_concur_and_both_trainer_settings_on_the_same_questions_then_shares_the_device(tmp_path):
    """Each system trains one step's worth of windows; the JSON holds every run and concur's ratios. concur with
    PyTorch's kernels (hf-span's `TrainingVariant`) trains on concur's windows. Then two concur jobs run at once."""
    pytest.importorskip("accelerate", reason="transformers' Trainer needs accelerate (pip install 'concur[test]')")
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    out_file = tmp_path / "speed.json"
    systems = "concur,trainer-fast,trainer-pad384,concur-trainer-decoding,concur-stock-kernels"
    out = _script(
        tmp_path, "speed_training", "--systems", systems, "--train-questions", "12", "--test-questions", "10", "--batch-size", "8",
        "--sharing", "2", "--sharing-systems", "concur", "--out", str(out_file),
    )  # fmt: skip
    report = json.loads(out_file.read_text())
    runs = {run["system"]: run for run in report["runs"]}
    assert sorted(runs) == ["concur", "concur-stock-kernels", "concur-trainer-decoding", "trainer-fast", "trainer-pad384"]
    assert all(run["eval_questions"] == 10 and run["train_windows"] >= 12 and run["optimizer_steps"] == 2 for run in runs.values())
    assert all(0 <= run["em"] <= run["f1"] <= 100 and run["train_seconds"] > 0 and run["peak_memory_mb"] > 0 for run in runs.values())
    assert runs["concur-trainer-decoding"]["train_windows"] == runs["concur"]["train_windows"]  # concur's training, decoded otherwise
    assert runs["concur-stock-kernels"]["train_windows"] == runs["concur"]["train_windows"]  # concur's data, other kernels
    assert sorted(report["summary"]["ratios"]) == [
        "concur/concur-stock-kernels", "concur/concur-trainer-decoding", "concur/trainer-fast", "concur/trainer-pad384"
    ]  # fmt: skip
    assert report["config"]["hparams"]["train_batch_size"] == 8 and report["machine"]["threads"] >= 1
    assert "| concur/trainer-fast |" in out and f"written: {out_file}" in out
    (sharing,) = report["sharing"]
    assert sharing["system"] == "concur" and sharing["jobs"] == 2
    assert sharing["jobs_per_hour"] == pytest.approx(2 * 3600 / sharing["wall_seconds"])
    shared = sharing["runs"]
    assert [run["seed"] for run in shared] == [0, 1]  # the jobs of a device get seeds from --seed
    assert [(run["optimizer_steps"], run["eval_questions"]) for run in shared] == [(2, 10), (2, 10)]
    assert shared[0]["train_windows"] == runs["concur"]["train_windows"]  # the same questions as concur's seed-0 run
    assert "2 concur jobs at once:" in out


def test_speed_training_gives_round_r_seed_r_and_reports_em_by_seed(monkeypatch, tmp_path, capsys):
    """--new-seed-each-round: the rounds' runs are paired by seed, and the report gives each system's EM by seed."""
    speed_training = _module("speed_training")
    ran = []

    def run_child(system, round_, config):  # the measured run of a child, without starting one
        ran.append((system, round_, config.seed))
        em = {"concur": 40.0, "trainer-fast": 41.0}[system] + config.seed
        return speed_training.Measured(
            system=system, round=round_, train_windows=16, optimizer_steps=2, train_seconds=4.0, eval_questions=10, eval_seconds=1.0,
            total_seconds=6.0, peak_memory_mb=900.0, em=em, f1=em + 10, seed=config.seed,
        )  # fmt: skip

    monkeypatch.setattr(speed_training, "_run_child", run_child)
    monkeypatch.setattr(speed_training, "_machine", lambda config: {"device": "test CPU", "torch": "-", "transformers": "-"})
    config = speed_training.Config("squad-dev-carved", str(tmp_path), "model", 12, 10, {}, "auto", "cpu", 2, seed=5)
    args = argparse.Namespace(rounds=2, new_seed_each_round=True, sharing=[], out=tmp_path / "speed.json")
    speed_training._benchmark(args, ["concur", "trainer-fast"], [], config)
    assert ran == [("concur", 0, 5), ("trainer-fast", 0, 5), ("concur", 1, 6), ("trainer-fast", 1, 6)]
    report = json.loads(args.out.read_text())
    assert [(run["round"], run["seed"]) for run in report["runs"]] == [(0, 5), (0, 5), (1, 6), (1, 6)]
    assert report["summary"]["medians"]["concur"]["em_by_seed"] == {"5": 45.0, "6": 46.0}
    out = capsys.readouterr().out
    assert "concur EM by seed: seed 5 45.0, seed 6 46.0" in out


@pytest.mark.slow
def test_speed_compile_times_the_steady_steps_of_an_eager_run(tmp_path):
    """The compiled mode is for a GPU (on the CPU concur's dropout breaks the graph and compiling takes minutes)."""
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    out_file = tmp_path / "compile.json"
    options = ["--modes", "eager", "--device", "cpu", "--threads", "2", "--train-questions", "24", "--test-questions", "10"]
    out = _script(tmp_path, "speed_compile", *options, "--batch-size", "4", "--out", str(out_file))
    (run,) = json.loads(out_file.read_text())["runs"]
    assert run["mode"] == "eager" and run["optimizer_steps"] >= 6 and 0 <= run["em"] <= 100
    assert 0 < run["first_logged_step_seconds"] < run["total_seconds"] and 0 < run["fit_seconds"] < run["total_seconds"]
    assert run["steady_windows_per_s"] > 0
    assert "| eager |" in out and "| 1.00x |" in out and f"written: {out_file}" in out


def test_the_steady_rate_counts_the_steps_after_the_first_quarter(monkeypatch):
    speed_training = _module("speed_training")
    log = [(0.0, "step 1/8  loss 5.0"), (1.0, "step 2/8  loss 4.0"), (2.0, "a line without a step"), (3.0, "step 4/8  loss 3.5"),
           (7.0, "step 8/8  loss 3.0")]  # fmt: skip
    assert speed_training.steady_rate(log, 16) == (8 - 2) * 16 / (7.0 - 1.0)
    with pytest.raises(ValueError, match="logged no step"):
        speed_training.steady_rate([(0.0, "train: 12 questions")], 16)
    with pytest.raises(ValueError, match="too few logged steps"):
        speed_training.steady_rate([(0.0, "step 1/1  loss 2.0")], 16)


def _refused(tmp_path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A benchmark command run with a bad option: it stops before any work, without a traceback or an output file."""
    out = tmp_path / "out.json"
    command = [*_bench(script), *args, "--out", str(out)]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert "Traceback" not in ran.stderr and not out.exists()
    return ran


def test_speed_model_load_times_a_forked_jobs_first_load_and_the_later_ones(tmp_path, tiny_model_dir):
    from transformers import BertForQuestionAnswering

    command = [*_bench("speed_model_load"), "--model-path", str(tiny_model_dir), "--loads", "3"]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    parameters = sum(parameter.numel() for parameter in BertForQuestionAnswering.from_pretrained(tiny_model_dir).parameters())
    assert f"minilm-l6: BertForQuestionAnswering from --model-path {tiny_model_dir}, {parameters:,} parameters" in ran.stdout
    (first,) = re.findall(r"first load \(a forked job's\): (\d+\.\d+) s", ran.stdout)
    (later,) = re.findall(r"later loads: (.+) s; median", ran.stdout)
    assert float(first) > 0 and len(later.split(", ")) == 2 and all(float(value) > 0 for value in later.split(", "))
    refused = subprocess.run([*command[:-1], "1"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert refused.returncode != 0 and "--loads 1: give at least 2" in refused.stderr and "Traceback" not in refused.stderr
    unknown = subprocess.run([*command, "--approach", "minilm-l7"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert unknown.returncode != 0 and unknown.stderr.strip() == "unknown approach 'minilm-l7'; did you mean 'minilm-l6'?"
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "config.json").write_text("{not json")
    corrupt_command = [*command[:3], "--model-path", str(tmp_path / "corrupt")]
    corrupt = subprocess.run(corrupt_command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert corrupt.returncode != 0 and "Traceback" not in corrupt.stderr and len(corrupt.stderr.strip().splitlines()) == 1
    assert corrupt.stderr.startswith(f"approach 'minilm-l6': --model-path {tmp_path / 'corrupt'} holds no usable config.json")


def test_speed_compile_names_an_unknown_mode_before_any_work(tmp_path):
    ran = _refused(tmp_path, "speed_compile", "--modes", "eager,jit")
    assert ran.returncode == 1 and ran.stderr.strip() == "--modes: unknown jit; choose from eager, compiled"
    ran = _refused(tmp_path, "speed_compile", "--modes", " , ")
    assert ran.returncode == 1 and ran.stderr.strip() == "--modes: give at least one of eager, compiled"


def test_speed_features_windows_the_carved_squad_sides_and_reads_them_back(tmp_path):
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    out = _script(tmp_path, "speed_features")
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith(("train ", "test "))}
    # the carved sides of squad-dev-carved, and their windows of 384 tokens moving 128 (BERT's geometry)
    assert [rows["train"][:2], rows["test"][:2]] == [["8,414", "8,650"], ["2,093", "2,119"]]
    assert all(float(seconds) >= 0 for row in rows.values() for seconds in row[2:])


def test_speed_attention_times_every_backend_setting_the_device_has(tmp_path):
    """On the CPU only the default and no-cuDNN settings can serve a masked SDPA; the GPU-only ones say so."""
    ran = subprocess.run(
        [*_bench("speed_attention"), "--device", "cpu", "--batch", "2", "--heads", "2",
         "--shortest", "16", "--longest", "32"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    rows = {line.split()[0]: line.split()[1:] for line in ran.stdout.splitlines()[3:]}
    assert "3 lengths" in ran.stdout.splitlines()[0]  # 16, 24, 32
    assert sorted(rows) == ["cudnn", "default", "efficient", "no-cudnn"]
    assert all(float(ms) > 0 for name in ("default", "no-cudnn") for ms in rows[name])
    assert rows["cudnn"][0] == rows["efficient"][0] == "unavailable:"


def _gru_layer(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*_bench("speed_gru_layer"), *args, "--inputs", "5,3", "--batch", "3",
         "--length", "6", "--hidden", "4", "--rounds", "2", "--threads", "1"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip


def test_speed_gru_layer_times_two_revisions_of_the_layer_and_checks_their_gradients_agree(tmp_path):
    ran = _gru_layer(tmp_path, "--revisions", "HEAD,.", "--precision", "fp32")
    assert ran.returncode == 0, ran.stderr
    rows = [line.split() for line in ran.stdout.splitlines()[2:]]
    assert [row[0] for row in rows] == ["5", "3"]
    for row in rows:  # width, median (min x), median (min y), ratio, difference
        assert float(row[1]) > 0 and float(row[4]) > 0 and row[7].endswith("x")
        assert float(row[8]) == 0.0  # the same file computes the same gradients


def test_speed_gru_layer_names_a_revision_without_the_layer_in_one_line(tmp_path):
    ran = _gru_layer(tmp_path, "--revisions", "no-such-revision,HEAD")
    assert ran.returncode == 1
    assert ran.stderr.startswith("bench.speed_gru_layer: revision 'no-such-revision' has no concur/approaches/reader/gru.py (git: ")
    assert len(ran.stderr.strip().splitlines()) == 1
    bad_widths = subprocess.run(
        [*_bench("speed_gru_layer"), "--revisions", "HEAD,.", "--inputs", "484,x"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert bad_widths.returncode == 2 and "Traceback" not in bad_widths.stderr
    assert bad_widths.stderr.strip().endswith("expected positive input widths, comma-separated, e.g. 484,200; got '484,x'")


def test_speed_readers_compare_reads_variants_rows_and_summarises_medians_and_ratios(monkeypatch):
    compare = _module("speed_readers_compare")
    variants = compare.parse_variants("76871c9:fp32, HEAD:bf16,.:auto")
    assert [(v.revision, v.precision) for v in variants] == [("76871c9", "fp32"), ("HEAD", "bf16"), (".", "auto")]
    orders = [[v.revision for v in compare.round_order(variants, round_)] for round_ in (1, 2, 3, 4)]
    assert orders == [["76871c9", "HEAD", "."], ["HEAD", ".", "76871c9"], [".", "76871c9", "HEAD"], ["76871c9", "HEAD", "."]]
    for bad in ("HEAD", "HEAD:fp16", ":bf16", " , "):
        with pytest.raises(SystemExit, match="REVISION:PRECISION"):
            compare.parse_variants(bad)
    output = "machine: x86_64, 2 CPU threads\napproach batch train q/s predict q/s params\nrasor 4 85.7 279.1 733,668\n"
    assert compare.rates_from_output(output, "rasor") == (85.7, 279.1)
    with pytest.raises(ValueError, match="no row for 'qanet'"):
        compare.rates_from_output(output, "qanet")
    runs = [
        compare.Run(1, "rasor", "a", 20.0, 200.0), compare.Run(1, "rasor", "b", 80.0, 300.0),
        compare.Run(2, "rasor", "a", 30.0, 220.0), compare.Run(2, "rasor", "b", 70.0, 280.0),
        compare.Run(3, "rasor", "a", 16.0, 210.0), compare.Run(3, "rasor", "b", 90.0, 290.0),
    ]  # fmt: skip
    summary = compare.summarise(runs, ["a", "b"], ["rasor"])
    assert summary["rasor"]["a"]["train"] == {"median": 20.0, "min": 16.0, "max": 30.0}
    assert summary["rasor"]["b"]["predict"] == {"median": 290.0, "min": 280.0, "max": 300.0}
    assert summary["rasor"]["b"]["train_ratio"] == 4.0 and summary["rasor"]["a"]["train_ratio"] == 1.0
    # round by round: train 80/20, 70/30, 90/16; predict 300/200, 280/220, 290/210
    assert summary["rasor"]["b"]["paired"]["train"] == {"median": 4.0, "min": 70 / 30, "max": 5.625, "ahead": 3, "rounds": 3}
    assert summary["rasor"]["b"]["paired"]["predict"]["median"] == 290 / 210 and "paired" not in summary["rasor"]["a"]
    assert compare.table(summary, ["a", "b"]).splitlines()[2] == (
        "| rasor | 20.0 (16.0-30.0) | 80.0 (70.0-90.0) | 4.00x | 4.00x (2.33-5.62), ahead in 3 of 3 | 1.38x (1.27-1.50) |"
    )
    lone = [*runs, compare.Run(4, "rasor", "b", 10.0, 100.0)]  # a round the baseline did not run is left out of the pairs
    assert compare.paired_ratios(lone, "rasor", "b", "a", "train")["rounds"] == 3
    assert compare.paired_ratios(lone, "rasor", "b", "c", "train") is None
    traceback = "Traceback (most recent call last):\n  File \"x.py\"\nconcur.errors.UnknownNameError: unknown approach 'rasorr'\n\n"
    assert compare.last_line(traceback) == "concur.errors.UnknownNameError: unknown approach 'rasorr'"
    assert compare.last_line("") == "(nothing on stderr)"
    relative = compare._absolute_paths(["--steps", "3", "--source-dir", "data", "--spacy-pipeline=pipe"])
    assert relative[:3] == ["--steps", "3", "--source-dir"] and Path(relative[3]).is_absolute()
    assert relative[4] == f"--spacy-pipeline={Path('pipe').resolve()}"


@pytest.mark.slow
def test_speed_readers_compare_measures_a_revision_and_this_tree_and_removes_its_worktree(tmp_path):
    """HEAD in a temporary worktree against this tree, one round of a toy-sized rasor: both measured, JSON
    written, and the worktree gone afterwards."""
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    if subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip("not a git checkout: no revision to check out")
    before = subprocess.run(["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True).stdout
    out_file = tmp_path / "compare.json"
    toy = ["--steps", "2", "--warmup-steps", "0", "--questions", "40"]
    out = _script(tmp_path, "speed_readers_compare", "--variants", "HEAD:fp32,.:fp32", "--approaches", "rasor", "--rounds", "1",
                  "--out", str(out_file), *toy)  # fmt: skip
    report = json.loads(out_file.read_text())
    assert [(run["variant"], run["round"]) for run in report["runs"]] == [("HEAD:fp32", 1), (".:fp32", 1)]
    assert all(run["train_rate"] > 0 and run["predict_rate"] > 0 for run in report["runs"])
    assert report["summary"]["rasor"]["HEAD:fp32"]["train_ratio"] == 1.0
    assert "| rasor | " in out and "| train HEAD:fp32 | train .:fp32 | .:fp32 / HEAD:fp32 | .:fp32 / HEAD:fp32 by round |" in out
    assert report["summary"]["rasor"][".:fp32"]["paired"]["train"]["rounds"] == 1
    assert subprocess.run(["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True).stdout == before


def test_speed_step_picks_windows_of_neighbouring_lengths_at_even_quantiles(monkeypatch):
    step = _module("speed_step")
    lengths = np.array([5, 1, 4, 2, 3, 9, 8, 7, 6, 0])  # length order: examples 9, 1, 3, 4, 2, 0, 8, 7, 6, 5
    windows = step.fixed_batch_indices(lengths, batch_size=2, batches=3)  # centres at ranks 1, 5 and 8
    assert [w.tolist() for w in windows] == [[9, 1], [2, 0], [7, 6]]
    assert [w.tolist() for w in step.fixed_batch_indices(lengths[:3], batch_size=4, batches=1)] == [[1, 2, 0]]  # fewer than a batch
    assert step.median_ms(lambda: None, warmup=0, timed=3) >= 0


@pytest.mark.slow
def test_speed_step_times_a_reader_on_fixed_batches_and_the_comparison_runs_it(tmp_path):
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    toy = ["--approaches", "rasor", "--questions", "40", "--batches", "2", "--steps", "1", "--warmup-steps", "0", "--precision", "fp32"]
    out = _script(tmp_path, "speed_step", *toy)
    (row,) = [line.split() for line in out.splitlines() if line.startswith("rasor ")]
    assert int(row[1]) == 4 and float(row[2]) > 0 and float(row[3]) > 0
    batches = [line for line in out.splitlines() if line.startswith("  rasor batch 4x")]
    assert len(batches) == 2 and all(" ms, prediction " in line for line in batches)
    out_file = tmp_path / "compare.json"
    _script(tmp_path, "speed_readers_compare", "--variants", ".:fp32", "--rounds", "1", "--fixed-batches", "--out", str(out_file),
            *toy[:-2])  # fmt: skip
    report = json.loads(out_file.read_text())
    assert report["fixed_batches"] is True and len(report["runs"]) == 1 and report["runs"][0]["train_rate"] > 0


@pytest.mark.parametrize(
    ("option", "systems", "error", "choices"),
    [
        ("--systems", "concur,concur-trainer-decodng",
         "unknown system 'concur-trainer-decodng' (did you mean 'concur-trainer-decoding'?) in --systems; choose from ",
         "concur-stock-kernels, concur-cuda-graphs, concur-trainer-decoding"),
        ("--systems", " , ", "--systems names no system; choose from ", "concur-cuda-graphs, concur-trainer-decoding"),
        ("--sharing-systems", "concur-cuda-graph",
         "unknown system 'concur-cuda-graph' (did you mean 'concur-cuda-graphs'?) in --sharing-systems; choose from ",
         "choose from concur, concur-cuda-graphs"),
    ],
)  # fmt: skip
def test_speed_training_names_a_wrong_or_empty_system_list_in_one_line_before_any_work(tmp_path, option, systems, error, choices):
    ran = subprocess.run(
        [*_bench("speed_training"), option, systems, "--out", str(tmp_path / "out.json")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 1 and ran.stdout == "" and "Traceback" not in ran.stderr
    assert ran.stderr.startswith(error) and len(ran.stderr.strip().splitlines()) == 1
    assert ran.stderr.strip().endswith(choices)
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("script", ["speed_step", "speed_readers"])
def test_speed_scripts_name_an_unknown_reader_in_one_line_before_any_work(tmp_path, script):
    ran = subprocess.run(
        [*_bench(script), "--approaches", "bidaff", "--source-dir", str(tmp_path / "nothing")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 1 and "Traceback" not in ran.stderr and ran.stdout == ""
    assert ran.stderr.strip() == "--approaches: unknown approach 'bidaff'; did you mean 'bidaf'?"


def test_random_bert_base_has_bert_base_sizes_and_the_given_tokenizer(tmp_path, monkeypatch):
    from transformers import AutoConfig, AutoTokenizer

    speed_training = _module("speed_training")
    weights = speed_training._shipped_weights()
    directory = speed_training._random_bert_base(weights, tmp_path / "bert", seed=0)
    config = AutoConfig.from_pretrained(directory)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.intermediate_size) == (12, 768, 12, 3072)
    assert config.architectures == ["BertForQuestionAnswering"]
    assert AutoTokenizer.from_pretrained(directory).get_vocab() == AutoTokenizer.from_pretrained(weights).get_vocab()


def test_trainer_style_answers_pick_the_best_valid_span_over_a_questions_windows(monkeypatch):
    """The highest start lies in the question and the highest pair is too long; the best valid span wins, across windows."""
    from transformers import AutoTokenizer

    from concur.data.model import Passage, Question

    speed_training, trainer_script = _module("speed_training"), _module("trainer_script")
    tokenizer = AutoTokenizer.from_pretrained(speed_training._shipped_weights())
    context = "the red fox jumps over the lazy dog near the old mill"
    question = Question(qid="q1", question="who jumps?", answers=["the red fox"], detected_answers=[])
    pairs = [(Passage(context=context, qas=[question]), question)]
    hp = {"max_seq_length": 16, "doc_stride": 4, "n_best_size": 3, "max_answer_length": 3}
    encoded = trainer_script.encode_windows([question.question], [context], tokenizer, hp, False)
    assert len(encoded["input_ids"]) > 1  # 12 context tokens read through windows of 10
    sequence = encoded.sequence_ids(0)  # [CLS] who jumps ? [SEP] the red fox ... [SEP]
    first = sequence.index(1)
    starts = [np.zeros(len(ids)) for ids in encoded["input_ids"]]
    ends = [np.zeros(len(ids)) for ids in encoded["input_ids"]]
    starts[0][1] = 9.0  # "who": in the question, never a start
    starts[0][first] = 5.0  # "the"
    ends[0][first + 5] = 6.0  # "the red fox jumps over the": 6 tokens, over max_answer_length
    ends[0][first + 2] = 4.0  # "the red fox": 9.0 in all
    starts[1][sequence.index(1)] = 1.0  # another window's best valid span scores lower
    ends[1][sequence.index(1)] = 1.0
    assert trainer_script.trainer_style_answers(pairs, encoded, starts, ends, hp) == {"q1": "the red fox"}
    starts[1][sequence.index(1)] = 9.5  # now that window's one-token span scores 10.5
    (window_1_start,) = [offset for offset, part in zip(encoded["offset_mapping"][1], encoded.sequence_ids(1)) if part == 1][:1]
    assert trainer_script.trainer_style_answers(pairs, encoded, starts, ends, hp) == {"q1": context[window_1_start[0] : window_1_start[1]]}


@pytest.mark.slow
def test_trainer_style_decoding_finds_concurs_answers_where_each_question_has_one_window(monkeypatch, tmp_path):
    """Same model, same logits up to float noise: where a question's passage fits in one window the two decoders agree
    (concur's max-context rule and its stride only matter across windows), so the ablation measures decoding alone."""
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    speed_training, trainer_script = _module("speed_training"), _module("trainer_script")
    from concur.registry.registry import default_registry

    hparams = {**default_registry().approach("minilm-l6").hparams, "train_batch_size": 8, "epochs": 1.0}
    speed_training.benchmark_sides("squad-dev-carved", [SHARED_DATA], tmp_path / "data")
    config = speed_training.Config(
        "squad-dev-carved", str(tmp_path / "data"), str(speed_training._shipped_weights()), 16, 40, hparams, "fp32", "cpu", 2, 0
    )
    run = speed_training.train_and_predict(config)
    theirs = trainer_script.trainer_style_predict(run.model, run.tokenizer, run.test, config)
    pairs, encoded, _ = trainer_script.eval_windows(run.test, run.tokenizer, hparams, False)
    windows = np.bincount(encoded["overflow_to_sample_mapping"], minlength=len(pairs))
    single = [question.qid for (_, question), count in zip(pairs, windows) if count == 1]
    assert len(single) >= 30 and sorted(theirs) == sorted(run.predictions)
    assert {qid: theirs[qid] for qid in single} == {qid: run.predictions[qid] for qid in single}
    assert sum(1 for qid in single if run.predictions[qid]) == len(single)  # every answer found, not two empty strings agreeing


def test_speed_training_starts_concurs_clock_after_the_imports_a_forked_worker_finds_done():
    """transformers' modeling_utils, which the zygote imports for hf-span workers, is imported before the clock;
    the model family's own module, which from_pretrained imports for either system, is not."""
    probe = (
        "import sys; from bench import speed_training; speed_training.import_before_the_clock(); "
        "print('transformers.modeling_utils' in sys.modules, 'transformers.models.bert.modeling_bert' in sys.modules)"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["True", "False"]


def test_speed_training_setup_is_the_whole_run_less_training_and_prediction(monkeypatch):
    speed_training = _module("speed_training")
    run = speed_training.Measured("concur", 0, 160, 10, 4.0, 100, 0.5, 6.0, 1000.0, 50.0, 60.0)
    assert run.setup_seconds == 1.5
    summary = speed_training._summary([run, dataclasses.replace(run, round=1, total_seconds=7.0)], ["concur"])
    assert summary["medians"]["concur"]["setup_seconds"] == 2.0  # the median of 1.5 and 2.5
    assert "| concur | 40.0 | - | 200.0 | 6.5 | 2.0 | 1000 | 10 | 50.0 | 60.0 |" in speed_training._table(summary, ["concur"])
    steady = [dataclasses.replace(run, steady_train_rate=rate) for rate in (30.0, None, 50.0)]  # Trainer's runs have none
    assert speed_training._summary(steady, ["concur"])["medians"]["concur"]["steady_train_windows_per_s"] == 40.0


def test_speed_training_divides_concur_by_each_system_within_each_round_too(monkeypatch):
    """The machine slows by half in round 1: the ratio of medians (2.14x) mixes that in, the per-round ratios do not."""
    speed_training = _module("speed_training")
    run = speed_training.Measured("concur", 0, 160, 10, 4.0, 100, 0.5, 6.0, 1000.0, 50.0, 60.0)  # 40 windows/s, 200 q/s
    runs = [
        run,
        dataclasses.replace(run, round=1, train_seconds=8.0, eval_seconds=1.0, total_seconds=12.0),  # 20, 100
        dataclasses.replace(run, system="trainer-fast", train_seconds=8.0, eval_seconds=1.0, total_seconds=12.0),  # 20, 100
        dataclasses.replace(run, system="trainer-fast", round=1, train_seconds=20.0, eval_seconds=2.0, total_seconds=30.0),  # 8, 50
    ]
    summary = speed_training._summary(runs, ["concur", "trainer-fast"])
    ratios = summary["ratios"]["concur/trainer-fast"]
    assert ratios["train"] == 30 / 14
    assert ratios["by_round"]["train"] == {"median": 2.25, "min": 2.0, "max": 2.5, "ahead": 2, "rounds": 2}
    assert ratios["by_round"]["eval"]["median"] == 2.0 and ratios["by_round"]["whole run"]["median"] == 2.25
    assert speed_training._table(summary, ["concur", "trainer-fast"]).splitlines()[-1] == (
        "concur/trainer-fast round by round: train 2.25x (2.00-2.50), ahead in 2 of 2; eval 2.00x (2.00-2.00), ahead in 2 of 2; "
        "whole run 2.25x (2.00-2.50), ahead in 2 of 2"
    )


def test_speed_training_pairs_em_by_seed_when_each_round_has_its_own(monkeypatch):
    """Seeds 0 and 1: concur 50 and 54 EM, Trainer 51 and 52; parity is judged seed by seed."""
    speed_training = _module("speed_training")
    run = speed_training.Measured("concur", 0, 160, 10, 4.0, 100, 0.5, 6.0, 1000.0, 50.0, 60.0)
    runs = [
        run,
        dataclasses.replace(run, round=1, seed=1, em=54.0),
        dataclasses.replace(run, system="trainer-fast", em=51.0),
        dataclasses.replace(run, system="trainer-fast", round=1, seed=1, em=52.0),
    ]
    summary = speed_training._summary(runs, ["concur", "trainer-fast"])
    assert summary["medians"]["concur"]["em_by_seed"] == {0: 50.0, 1: 54.0}
    assert summary["ratios"]["concur/trainer-fast"]["em_difference_by_seed"]["by_seed"] == {0: -1.0, 1: 2.0}
    assert speed_training._table(summary, ["concur", "trainer-fast"]).splitlines()[-3:] == [
        "concur EM by seed: seed 0 50.0, seed 1 54.0; mean 52.00, sd 2.83",  # sd: sqrt(((-2)^2 + 2^2) / 1)
        "trainer-fast EM by seed: seed 0 51.0, seed 1 52.0; mean 51.50, sd 0.71",
        # differences -1 and +2: sd 2.12, standard error 1.5, t(0.975, 1 df) = 12.706, so +0.50 -+ 19.06
        "concur/trainer-fast EM difference by seed: seed 0 -1.0, seed 1 +2.0; mean +0.50, 95% interval -18.56 to +19.56",
    ]
    one_seed = speed_training._summary([run, dataclasses.replace(run, round=1)], ["concur"])  # rounds of one seed: no seed lines
    assert one_seed["medians"]["concur"]["em_by_seed"] == {0: 50.0}
    assert "by seed" not in speed_training._table(one_seed, ["concur"])


def test_speed_training_names_a_bad_sharing_list_before_any_work(tmp_path):
    ran = _refused(tmp_path, "speed_training", "--sharing", "2,x")
    assert ran.returncode == 2
    assert "argument --sharing: expected comma-separated job counts of at least 2, e.g. 2,4; got '2,x'" in ran.stderr


@pytest.mark.parametrize("option", ["--systems", "--sharing-systems"])
def test_speed_training_refuses_cuda_graphs_off_cuda_before_any_work(tmp_path, option):
    ran = _refused(tmp_path, "speed_training", option, "concur,concur-cuda-graphs", "--device", "cpu")
    assert ran.returncode == 1 and ran.stderr.strip() == "concur-cuda-graphs records CUDA graphs: it needs --device cuda, not cpu"


def test_speed_study_moves_every_seed_up_by_one_and_names_the_study_apart(monkeypatch):
    next_seeds = _module("speed_study").next_seeds
    text = 'name = "grid"\ndescription = "seeds = [9]"\nseeds = [0, 2]\n[budget]\nseed = 0\n'
    assert next_seeds(text, Path("grid.toml")) == 'name = "grid-next"\ndescription = "seeds = [9]"\nseeds = [1, 3]\n[budget]\nseed = 0\n'
    with pytest.raises(SystemExit, match=r"grid.toml: needs a `seeds = \[...\]` line"):
        next_seeds('name = "grid"\n', Path("grid.toml"))


def _speed_study(tmp_path, study: Path, out: Path, registry: Path, *options: str) -> str:
    """speed_study.py's output on `study` with the tiny registry and its data, one thread; it must succeed."""
    ran = subprocess.run(
        [*_bench("speed_study"), str(study), "--out-dir", str(out), "--registry", str(registry),
         "--source-dir", str(tmp_path / "data-root"), "--threads", "1", *options],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr + ran.stdout
    return ran.stdout


@pytest.mark.slow
def test_speed_study_times_a_study_then_plans_and_times_its_next_seeds(tmp_path, tiny_registry):
    study = tmp_path / "one.toml"
    study.write_text('name = "one"\napproaches = ["tiny-reader"]\nbenches = ["tiny-babi"]\nseeds = [0, 2]\n')
    out = tmp_path / "out"
    _speed_study(tmp_path, study, out, tiny_registry)
    result = json.loads((out / "speed-study.json").read_text())
    first, second = result["runs"]
    assert (first["study"], first["jobs"], second["study"], second["jobs"]) == ("one", 2, "one-next", 2)
    assert first["gpu_busy_percent"] is None and first["jobs_per_hour"] == pytest.approx(2 * 3600 / first["wall_seconds"])
    assert first["forked_jobs"] == 2 and second["forked_jobs"] == 2  # a grid's workers are forked from its zygote
    assert result["parallel"] == 1 and result["plan_estimate_seconds"] > 0
    assert result["plan_over_actual"] == pytest.approx(result["plan_estimate_seconds"] / second["wall_seconds"])
    assert "seeds = [1, 3]" in (out / "one-next.toml").read_text()
    assert "started tiny-reader on tiny-babi (hparams 0, seed 1) on CPU" in (out / "second.log").read_text()
    again = subprocess.run([*_bench("speed_study"), str(study), "--out-dir", str(out)],
                           capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert again.returncode == 1 and "exists: the first run must measure every job, so give a new --out-dir" in again.stderr


def test_speed_study_pilots_a_study_at_a_smaller_budget_in_place_of_the_studys_own_budget(monkeypatch):
    speed_study = _module("speed_study")
    pilot_budget, questions_pair = speed_study.pilot_budget, speed_study.questions_pair
    text = 'name = "grid"\nseeds = [0]\n[budget] # small\ntrain_questions = 300\nseed = 0\ntest_questions = 200\n[hparams]\ncount = 1\n'
    assert pilot_budget(text, Path("grid.toml"), 50, 40) == (
        'name = "grid-pilot"\nseeds = [0]\n[budget] # small\ntrain_questions = 50\ntest_questions = 40\nseed = 0\n[hparams]\ncount = 1\n'
    )
    appended = 'name = "full-pilot"\n\n[budget]\ntrain_questions = 5\ntest_questions = 6\n'
    assert pilot_budget('name = "full"\n', Path("full.toml"), 5, 6) == appended
    with pytest.raises(SystemExit, match=r"^inline.toml: could not set its \[budget\] to 5 training and 6 test questions for a pilot: "):
        pilot_budget('name = "x"\nbudget = {seed = 1}\n', Path("inline.toml"), 5, 6)
    assert questions_pair("100,50") == (100, 50)
    for bad in ("100", "100,0", "a,b", "1,2,3"):
        expected = f"expected TRAIN,TEST: two positive question counts, e.g. 100,100; got '{bad}'"
        with pytest.raises(argparse.ArgumentTypeError, match=expected):
            questions_pair(bad)


@pytest.mark.slow
def test_speed_study_plans_a_study_from_its_pilots_jobs_and_compares_each_approach(tmp_path, tiny_registry):
    study = tmp_path / "one.toml"
    study.write_text('name = "one"\napproaches = ["tiny-reader"]\nbenches = ["tiny-babi"]\nseeds = [0]\n[budget]\ntrain_questions = 30\n')
    out = tmp_path / "out"
    printed = _speed_study(tmp_path, study, out, tiny_registry, "--pilot", "10,5")
    result = json.loads((out / "speed-study.json").read_text())
    first, second = result["runs"]
    # the pilot's job, at 10 training questions, is not the study's: the study's own job still runs
    assert (first["study"], first["jobs"], second["study"], second["jobs"]) == ("one-pilot", 1, "one", 1)
    assert result["pilot"] == {"train_questions": 10, "test_questions": 5}
    assert "train_questions = 10\ntest_questions = 5\n" in (out / "one-pilot.toml").read_text()
    (measured,) = result["by_approach"].values()
    assert list(result["by_approach"]) == ["tiny-reader"] and measured["jobs"] == 1
    assert measured["estimate_over_actual"] == pytest.approx(measured["estimate_seconds"] / measured["actual_seconds"])
    assert "tiny-reader on tiny-babi (hparams 0, seed 0, 5 test questions, 10 train questions)" in (out / "first.log").read_text()
    assert "tiny-reader on tiny-babi (hparams 0, seed 0, 30 train questions)" in (out / "second.log").read_text()
    assert "tiny-reader" in printed.split("planned (s)")[1]


def test_speed_study_names_a_bad_study_in_concurs_one_line_before_any_job(tmp_path):
    study = tmp_path / "bad.toml"
    study.write_text('name = "bad"\nseeds = [0]\napproaches = ["bidaff"]\nbenches = ["babi-1"]\n')
    ran = subprocess.run([*_bench("speed_study"), str(study), "--out-dir", str(tmp_path / "out")],
                         capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert ran.stderr.strip() == (
        f"`concur study plan {study}` failed: error: {study}, field 'approaches': unknown approach 'bidaff'; did you mean 'bidaf'?"
    )
    assert not (tmp_path / "out" / "runs" / "concur.sqlite").exists() and not (tmp_path / "out" / "speed-study.json").exists()


def _job_row(approach: str, benchmark: str, *, device: float, wall: float, fit: float) -> dict:
    return {
        "approach": approach, "benchmark": benchmark, "implementation": "hf-span" if approach == "a" else "rasor", "status": "ok",
        "device_seconds": device, "wall_seconds": wall, "fit_seconds": fit, "eval_seconds": 10.0, "n_questions": 200,
        "train_questions": 300, "hparams": {"epochs": 1.0},
    }  # fmt: skip


def test_plan_holdout_estimates_each_cell_from_the_others_both_ways(monkeypatch):
    holdout = _module("plan_holdout")
    # a: 2 devices, 0.2 s per example on b, 0.8 on long; r: 1 device, 0.1 and 0.4 (the same 4x); fixed 20 and 60 s
    rows = [
        _job_row("a", "b", device=100.0, wall=50.0, fit=30.0), _job_row("a", "long", device=280.0, wall=140.0, fit=120.0),
        _job_row("r", "b", device=100.0, wall=100.0, fit=30.0), _job_row("r", "long", device=190.0, wall=190.0, fit=120.0),
    ]  # fmt: skip
    records = {(r["approach"], r["benchmark"]): r for r in holdout.held_out(rows)}
    assert len(records) == 4
    # r on long held out: its approach's medians are r on b's (60 + 0.1 x 300 + 0.05 x 200); the two-way model scales them 4x
    assert records["r", "long"]["measured_seconds"] == 190.0
    assert records["r", "long"]["approach_median_seconds"] == pytest.approx(100.0)
    assert records["r", "long"]["two_way_seconds"] == pytest.approx(190.0)
    assert records["a", "b"]["approach_median_seconds"] == pytest.approx(280.0)
    assert records["a", "b"]["two_way_seconds"] == pytest.approx(100.0)
    # approach-median errors 90/190, 180/280, 180/100, 90/100: median (0.643 + 0.9) / 2, largest 1.8; the two-way model's all 0
    summary = holdout.summary(list(records.values()), "approach_median_seconds")
    assert summary == pytest.approx({"median_abs_error": (180 / 280 + 0.9) / 2, "max_abs_error": 1.8})
    assert holdout.summary(list(records.values()), "two_way_seconds")["max_abs_error"] == pytest.approx(0.0, abs=1e-6)
    assert holdout.held_out([rows[0]]) == []  # one cell: nothing to estimate it from


def test_speed_step_times_an_hf_span_approach_on_fixed_batches_of_windows(monkeypatch, tiny_registry):
    """The same fixed-batch step for hf-span: its loop's `fit` is caught where hf-span's approach module finds it."""
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    step = _module("speed_step")
    from bench.speed_readers import squad_sample
    from concur.registry import default_registry

    args = argparse.Namespace(device="cpu", precision="fp32", threads=1, questions=30, source_dir=[str(SHARED_DATA)],
                              batches=2, steps=1, warmup_steps=0)  # fmt: skip
    spec = default_registry([tiny_registry]).approach("tiny-bert")
    result, lines = step.measure_reader(spec, squad_sample(args), args)
    name, batch, train_rate, predict_rate, _ = result.split()
    assert (name, int(batch)) == ("tiny-bert", 16) and float(train_rate) > 0 and float(predict_rate) > 0
    assert len(lines) == 2 and all(line.startswith("  tiny-bert batch 16x") and " ms, prediction " in line for line in lines)
    import concur.approaches.hf_span.approach as hf_span_approach
    from concur.approaches import training

    assert hf_span_approach.fit is training.fit  # put back after the capture


def _gpu_script(tmp_path, parts: str, seeds: str = "") -> subprocess.CompletedProcess[str]:
    """bench/speed_gpu.sh with `python3` and `nvidia-smi` stood in for by scripts that log their arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("python3", "nvidia-smi"):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> "{tmp_path}/calls.log"\n')
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PARTS": parts, **({"SEEDS": seeds} if seeds else {})}
    command = ["bash", str(REPO / "bench" / "speed_gpu.sh"), "DATA", "MINILM", str(tmp_path / "out")]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


def test_speed_gpu_runs_the_parts_asked_for_in_their_order(tmp_path):
    ran = _gpu_script(tmp_path, "parity epochs", seeds="1 2")
    assert ran.returncode == 0, ran.stderr
    calls = [line.split()[1:3] for line in (tmp_path / "calls.log").read_text().splitlines() if line.startswith("python3")]
    assert calls == [["-m", f"bench.{name}"] for name in ("speed_training", "speed_training", "speed_readers")]
    seeds = re.findall(r"--seed (\d+) --out \S+/parity-minilm-seed(\d+)\.json", (tmp_path / "calls.log").read_text())
    assert seeds == [("1", "1"), ("2", "2")]
    assert ran.stdout.splitlines()[0] == "== parity" and "== epochs" in ran.stdout


def test_speed_gpu_names_an_unknown_part_before_any_work(tmp_path):
    ran = _gpu_script(tmp_path, "training epoch")
    assert ran.returncode == 2
    assert ran.stderr.strip() == (
        "unknown part 'epoch' in PARTS; choose from: attention training readers epochs compile profile parity study"
    )
    assert not (tmp_path / "out").exists() and not (tmp_path / "calls.log").exists()


def _speed_training_json(
    path: Path, ems: dict[tuple[str, int], tuple[float, float]], test_questions: int = 2093, benchmark: str | None = None
) -> Path:
    """A bench.speed_training result holding only what bench.seed_parity reads: its config and each run's system, seed, EM, F1
    (without a benchmark, as results written before bench.speed_training recorded one)."""
    config = {"train_questions": 8414, "test_questions": test_questions, "hparams": {"epochs": 1.0}, "precision": "bf16", "device": "cpu"}
    if benchmark is not None:
        config["benchmark"] = benchmark
    runs = [{"system": system, "seed": seed, "em": em, "f1": f1} for (system, seed), (em, f1) in ems.items()]
    path.write_text(json.dumps({"machine": {"device": "AMD EPYC", "commit": "abc1234"}, "config": config, "runs": runs}))
    return path


def test_seed_parity_pools_the_seeds_of_two_runs_and_pairs_each_difference_with_a_t_interval(tmp_path):
    """EM differences -1, +2, +2: mean 1.00, sd sqrt(3), standard error 1.0, t(0.975, 2 df) = 4.3027, so 1.00 -+ 4.30.
    F1 differences -1, +2, 0: mean 0.33, sd 1.528, standard error 0.882, so 0.33 -+ 3.79."""
    first = _speed_training_json(
        tmp_path / "seeds01.json",
        {("concur", 0): (50.0, 60.0), ("trainer-fast", 0): (51.0, 61.0), ("concur", 1): (54.0, 63.0), ("trainer-fast", 1): (52.0, 61.0)},
    )
    second = _speed_training_json(tmp_path / "seed2.json", {("concur", 2): (55.0, 64.0), ("trainer-fast", 2): (53.0, 64.0)})
    out = tmp_path / "parity" / "summary.json"
    ran = subprocess.run(
        [*_bench("seed_parity"), str(first), str(second), "--out", str(out)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[:4] == [
        "concur EM by seed: seed 0 50.0, seed 1 54.0, seed 2 55.0; mean 53.00, sd 2.65",
        "trainer-fast EM by seed: seed 0 51.0, seed 1 52.0, seed 2 53.0; mean 52.00, sd 1.00",
        "concur/trainer-fast EM difference by seed: seed 0 -1.0, seed 1 +2.0, seed 2 +2.0; mean +1.00, 95% interval -3.30 to +5.30",
        "concur/trainer-fast F1 difference by seed: seed 0 -1.0, seed 1 +2.0, seed 2 +0.0; mean +0.33, 95% interval -3.46 to +4.13",
    ]
    written = json.loads(out.read_text())
    em = written["differences"]["concur/trainer-fast"]["em"]
    assert em["by_seed"] == {"0": -1.0, "1": 2.0, "2": 2.0} and em["sd"] == pytest.approx(3**0.5)
    assert em["interval"] == pytest.approx([1 - 4.302653, 1 + 4.302653], abs=1e-6)  # standard error sqrt(3) / sqrt(3)
    assert [machine["file"] for machine in written["machines"]] == [str(first), str(second)]


def test_seed_parity_refuses_to_pool_runs_of_different_settings_and_names_a_missing_system(tmp_path):
    first = _speed_training_json(tmp_path / "a.json", {("concur", 0): (50.0, 60.0), ("trainer-fast", 0): (51.0, 61.0)})
    other = _speed_training_json(tmp_path / "b.json", {("concur", 1): (52.0, 62.0)}, test_questions=500)
    script = _bench("seed_parity")
    out = tmp_path / "out.json"
    ran = subprocess.run([*script, str(first), str(other), "--out", str(out)], capture_output=True, text=True)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr and not out.exists()
    assert ran.stderr.strip() == (
        f"{other}: its runs differ from {first}'s in test_questions (500 against 2093); pool only runs of one setting"
    )
    ran = subprocess.run([*script, str(first), "--against", "trainer-fats"], capture_output=True, text=True)
    assert ran.returncode == 1
    assert ran.stderr.strip() == "no runs of 'trainer-fats' (did you mean 'trainer-fast'?); the runs hold concur, trainer-fast"
    (tmp_path / "broken.json").write_text("{")
    ran = subprocess.run([*script, str(tmp_path / "broken.json")], capture_output=True, text=True)
    assert ran.returncode == 1 and ran.stderr.startswith(f"{tmp_path / 'broken.json'}: not a bench.speed_training result (JSONDecodeError")
    no_em = _speed_training_json(tmp_path / "no-em.json", {("concur", 0): (50.0, 60.0)})
    no_em.write_text(no_em.read_text().replace('"em": 50.0, ', ""))
    ran = subprocess.run([*script, str(no_em), "--against", "concur"], capture_output=True, text=True)
    assert ran.returncode == 1 and ran.stderr.strip() == f"{no_em}: run 0: field 'em' is None"


def test_seed_parity_pools_results_without_a_benchmark_with_squad_dev_carveds_and_refuses_another_benchmark(tmp_path):
    """Results written before bench.speed_training took --benchmark were all of squad-dev-carved."""
    older = _speed_training_json(tmp_path / "older.json", {("concur", 0): (50.0, 60.0), ("trainer-fast", 0): (51.0, 61.0)})
    newer = _speed_training_json(
        tmp_path / "newer.json", {("concur", 1): (54.0, 63.0), ("trainer-fast", 1): (52.0, 61.0)}, benchmark="squad-dev-carved"
    )
    script = _bench("seed_parity")
    ran = subprocess.run([*script, str(older), str(newer)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[0] == "concur EM by seed: seed 0 50.0, seed 1 54.0; mean 52.00, sd 2.83"
    reddit = _speed_training_json(tmp_path / "reddit.json", {("concur", 2): (40.0, 50.0)}, benchmark="squadshifts-reddit-carved")
    ran = subprocess.run([*script, str(older), str(reddit)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1 and ran.stderr.strip() == (
        f"{reddit}: its runs differ from {older}'s in benchmark ('squadshifts-reddit-carved' against 'squad-dev-carved'); "
        "pool only runs of one setting"
    )


def test_benchmark_sides_prepares_a_benchmark_once_and_later_calls_only_read_it(monkeypatch, tmp_path):
    shared_file("squadshifts/new_wiki_v1.0.json.gz")
    sides = _module("benchmark_sides")
    train, test = sides.benchmark_sides("squadshifts-new-wiki-carved", [SHARED_DATA], tmp_path / "data")
    assert (train.n_questions, test.n_questions) == (6241, 1697)  # the carve's sizes its spec records
    assert not {question.qid for _, question in train.questions()} & {question.qid for _, question in test.questions()}
    monkeypatch.delenv("CONCUR_DATA_ROOT", raising=False)
    monkeypatch.setattr(sides, "prepare", lambda *args, **kwargs: pytest.fail("prepared a second time"))
    assert sides.benchmark_sides("squadshifts-new-wiki-carved", [], tmp_path / "data") == (train, test)  # no data root needed now
    with pytest.raises(SystemExit) as refused:
        sides.benchmark_sides("squadshifts-redit-carved", [], tmp_path / "data")
    assert str(refused.value) == (
        "benchmark 'squadshifts-redit-carved': unknown benchmark 'squadshifts-redit-carved'; did you mean 'squadshifts-reddit-carved'?"
    )


def test_speed_training_samples_each_system_its_questions_from_the_benchmark_it_is_given(monkeypatch, tmp_path):
    shared_file("squadshifts/new_wiki_v1.0.json.gz")
    speed_training = _module("speed_training")
    args = argparse.Namespace(
        benchmark="squadshifts-new-wiki-carved", source_dir=[SHARED_DATA], train_questions=40, test_questions=30, epochs=1.0,
        learning_rate=None, batch_size=None, model_path=Path("weights"), random_weights=False, precision="bf16", device="cpu",
        threads=2, seed=3,
    )  # fmt: skip
    config = speed_training.config_from_args(args, tmp_path)
    assert (config.benchmark, config.data_dir) == ("squadshifts-new-wiki-carved", str(tmp_path / "data"))
    train, test = speed_training.benchmark_splits(config)
    whole_train, whole_test = speed_training.benchmark_sides(config.benchmark, [], Path(config.data_dir))
    assert (train.n_questions, test.n_questions) == (40, 30)
    assert {q.qid for _, q in train.questions()} <= {q.qid for _, q in whole_train.questions()}
    assert {q.qid for _, q in test.questions()} <= {q.qid for _, q in whole_test.questions()}
    assert speed_training.benchmark_splits(config) == (train, test)  # the same seed, the same sample, in every system's process


@pytest.mark.parametrize(
    ("option", "count", "side"),
    [("--train-questions", "7000", "train"), ("--test-questions", "0", "test")],
)
def test_speed_training_refuses_more_questions_than_a_side_has_before_training_anything(tmp_path, option, count, side):
    shared_file("squadshifts/new_wiki_v1.0.json.gz")
    out = tmp_path / "result.json"
    ran = subprocess.run(
        [*_bench("speed_training"), "--benchmark", "squadshifts-new-wiki-carved",
         option, count, "--source-dir", str(SHARED_DATA), "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 1 and "Traceback" not in ran.stderr and not out.exists()
    size = {"train": "6,241", "test": "1,697"}[side]
    assert ran.stderr.strip() == f"{option} {count}: ask for 1 to {size} (squadshifts-new-wiki-carved's {side} side)"


TIMED_LINE = re.compile(r"^(kendall|pearson|ceilings|report) +(\S+) +median [0-9.]+ s  \(min [0-9.]+, max [0-9.]+, 1 runs\)$")


def test_speed_bootstrap_times_the_approach_only_bootstrap_and_with_questions_the_two_level_one_and_the_ceilings(tmp_path):
    timed = [("kendall", "percentile"), ("kendall", "bca"), ("pearson", "percentile"), ("pearson", "bca")]
    plain = subprocess.run(
        [*_bench("speed_bootstrap"), "--resamples", "20", "--repeats", "1"], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0].startswith("machine: ") and lines[1] == "table: 20 approaches x 44 benchmarks (liu2023), 20 resamples"
    assert [TIMED_LINE.match(line).groups() for line in lines[2:]] == timed
    questions = subprocess.run(
        [*_bench("speed_bootstrap"), "--resamples", "20", "--repeats", "1", "--questions", "30"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert questions.returncode == 0, questions.stderr
    lines = questions.stdout.splitlines()
    assert lines[1] == "table: 20 approaches x 44 benchmarks (simulated, 30 questions per benchmark), 20 resamples"
    noise_parts = [("ceilings", "kendall"), ("ceilings", "pearson"), ("report", "all")]
    assert [TIMED_LINE.match(line).groups() for line in lines[2:]] == [*timed, *noise_parts]
    wide, measurement = _module("speed_bootstrap").simulated_table(30)
    assert wide.shape == (20, 44) and all(measurement.benchmarks[bench].n_questions == 30 for bench in wide.columns)


def test_noise_simulation_writes_each_scenarios_coverage_and_reliability(tmp_path):
    simulation = _module("noise_simulation")
    out = tmp_path / "results" / "noise.json"
    ran = subprocess.run(
        [*_bench("noise_simulation"), "--studies", "2", "--resamples", "30", "--repeats", "2", "--pairs", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    payload = json.loads(out.read_text())
    assert (payload["studies"], payload["resamples"], payload["seed"]) == (2, 30, 0)
    assert list(payload["scenarios"]) == list(simulation.SCENARIOS)
    for name, row in payload["scenarios"].items():
        assert row["scenario"] == dataclasses.asdict(simulation.SCENARIOS[name])
        assert row["true tau"] == pytest.approx(2 / np.pi * np.arcsin(0.8))  # Greiner's relation at correlation 0.8
        for kind in ("two-level BCa", "two-level percentile", "approach-only BCa", "approach-only percentile"):
            assert row[f"coverage {kind}"] in (0.0, 0.5, 1.0) and row[f"mean width {kind}"] > 0  # 2 studies
        assert -1 <= row["mean estimate"] <= 1 and 0 <= row["mean reliability estimate"] <= 1
        assert row["bias"] == pytest.approx(row["mean reliability estimate"] - row["mean tau between test sets"])
    printed = [line for line in ran.stdout.splitlines() if "two-level BCa" in line]
    assert [line.split(" true tau")[0].strip() for line in printed] == list(simulation.SCENARIOS)
    assert ran.stdout.splitlines()[-1] == f"written: {out}"


@pytest.mark.slow
def test_budget_curves_runs_each_point_once_and_plots_em_against_training_seconds(tmp_path):
    for split in ("train", "test"):
        shared_file(f"babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_{split}.txt.gz")
    base = tmp_path / "base.toml"
    base.write_text(
        'name = "base"\napproaches = ["tiny-rasor", "tiny-bidaf"]\nbenches = ["babi-1"]\n[hparams.tiny-bidaf]\nbatch_size = 8\n'
    )
    out = tmp_path / "curves.json"
    options = ["--base", str(base), "--bench", "babi-1", "--test-questions", "30", "--registry", str(REPO / "bench" / "checks"),
               "--runs-dir", str(tmp_path / "runs"), "--out", str(out), "--points", "all:40x1", "--points", "tiny-rasor:40x2"]  # fmt: skip
    first = _script(tmp_path, "budget_curves", *options)
    assert "[1/2] tiny-rasor 40x1, tiny-bidaf 40x1" in first and "[2/2] tiny-rasor 40x2" in first
    result = json.loads(out.read_text())
    jobs = {(job["approach"], job["epochs"]): job for job in result["jobs"]}
    assert set(jobs) == {("tiny-rasor", 1.0), ("tiny-rasor", 2.0), ("tiny-bidaf", 1.0)}
    for job in jobs.values():
        assert job["questions"] == 40 and job["test_questions"] == 30 and job["train_seconds"] > 0
        assert job["em_lower"] <= job["em"] <= job["em_upper"]
    assert jobs[("tiny-rasor", 2.0)]["optimizer_steps"] == 2 * jobs[("tiny-rasor", 1.0)]["optimizer_steps"]
    assert "[hparams.tiny-bidaf]\nbatch_size = 8\nepochs = 1.0" in (tmp_path / "runs" / "studies" / "curves-40-round1.toml").read_text()
    assert out.with_suffix(".png").stat().st_size > 10_000
    again = _script(tmp_path, "budget_curves", *options)  # every point has its result: no job runs again
    assert "started" not in again and json.loads(out.read_text())["jobs"] == result["jobs"]


def test_budget_curves_names_a_bad_point_or_approach_in_one_line(tmp_path):
    for points, error in (("all:40", "a point is NxE"), ("rasr:40x1", "--points rasr: not an approach of the base study")):
        ran = subprocess.run([*_bench("budget_curves"), "--points", points], capture_output=True, text=True, cwd=REPO)
        assert ran.returncode == 2 if "NxE" in error else ran.returncode == 1, ran.stderr
        assert error in ran.stderr and "Traceback" not in ran.stderr


@pytest.fixture(scope="module")
def small_study_run(tmp_path_factory) -> dict[str, Path]:
    """A small study (3 tiny readers x the carved SQuAD and New Wiki and bAbI 1 and 2) run once, timed, by
    `bench.quickstart_readme`, which writes its README block; `bench.cpu_full_docs` then reads the same run."""
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    shared_file("squadshifts/new_wiki_v1.0.json.gz")
    for task in ("qa1_single-supporting-fact", "qa2_two-supporting-facts"):
        for split in ("train", "test"):
            shared_file(f"babi/tasks_1-20_v1-2/en/{task}_{split}.txt.gz")
    root = tmp_path_factory.mktemp("small-study")
    study = root / "small.toml"
    study.write_text(
        'name = "small"\napproaches = ["tiny-rasor", "tiny-bidaf", "tiny-docreader"]\nreference = "squad-dev-carved"\n'
        'benches = ["squad-dev-carved", "squadshifts-new-wiki-carved", "babi-1", "babi-2"]\n'
        "[budget]\ntrain_questions = 40\ntest_questions = 40\n[budget.babi-2]\ntest_questions = 30\n"
    )
    readme = root / "README.md"
    readme.write_text("# title\n\n<!-- quickstart-results:begin -->\nold\n<!-- quickstart-results:end -->\n\nafter\n")
    _script(root, "quickstart_readme", *_small_study_options(root, study), "--readme", str(readme))
    return {"root": root, "study": study, "readme": readme}


def _small_study_options(root: Path, study: Path) -> list[str]:
    return ["--study", str(study), "--runs-dir", str(root / "runs"), "--registry", str(REPO / "bench" / "checks")]


@pytest.mark.slow
def test_quickstart_readme_times_a_study_once_and_writes_its_block_with_the_study_files_hash(small_study_run):
    root, study, readme = small_study_run["root"], small_study_run["study"], small_study_run["readme"]
    text = readme.read_text()
    digest = hashlib.sha256(study.read_bytes()).hexdigest()
    assert text.startswith(f"# title\n\n<!-- quickstart-results:begin study={study.as_posix()} sha256={digest} -->\n")
    assert text.endswith("<!-- quickstart-results:end -->\n\nafter\n") and "\nold\n" not in text
    wall = json.loads((root / "runs" / "small-wall.json").read_text())
    assert wall["jobs"] == 12 and wall["seconds"] > 0 and wall["study_sha256"] == digest
    assert "for data preparation, 12 jobs and the report" in text
    for approach in ("tiny-rasor", "tiny-bidaf", "tiny-docreader"):
        assert re.search(rf"^\| {approach} \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|$", text, re.MULTILINE)
    assert "\nreliab. " in text and "over the 0 pairs of human-constructed sets" in text and "over the 0 human-bAbI pairs" in text
    assert "in the paper's own results (Liu et al., liu2023: 15 human pairs, 20 approaches) 0.84 against -0.13" in text
    options = [*_small_study_options(root, study), "--readme", str(readme)]
    _script(root, "quickstart_readme", *options)  # every job done: the recorded run's wall time, the same block
    assert readme.read_text() == text
    changed = root / "changed" / "small.toml"  # the same name, so the same wall record, for a different file
    changed.parent.mkdir()
    changed.write_text(study.read_text() + "# changed\n")
    ran = subprocess.run([*_bench("quickstart_readme"), *_small_study_options(root, changed), "--readme", str(readme)],
                         capture_output=True, text=True, cwd=root)  # fmt: skip
    assert ran.returncode == 1 and "small-wall.json: timed a different" in ran.stderr and "Traceback" not in ran.stderr


@pytest.mark.slow
def test_cpu_full_docs_sets_a_studys_pairs_beside_the_papers_and_names_each_by_the_papers_id(small_study_run):
    import pandas as pd
    from scipy.stats import kendalltau

    root, study = small_study_run["root"], small_study_run["study"]
    page = root / "running.md"
    page.write_text("# Running\n\n<!-- cpu-full-results:begin -->\n<!-- cpu-full-results:end -->\n")
    out = root / "out"
    options = [*_small_study_options(root, study), "--page", str(page), "--out-dir", str(out)]
    _script(root, "cpu_full_docs", *options)  # the run the fixture timed
    text = page.read_text()
    digest = hashlib.sha256(study.read_bytes()).hexdigest()
    assert text.startswith(f"# Running\n\n<!-- cpu-full-results:begin study={study.as_posix()} sha256={digest} -->\n")
    assert "for data preparation, 12 jobs and the report" in text
    em = pd.read_csv(out / "em.csv", index_col="benchmark")
    assert list(em.index) == ["squad-dev-carved", "squadshifts-new-wiki-carved", "babi-1", "babi-2"]
    assert sorted(em.columns) == ["reliability", "tiny-bidaf", "tiny-docreader", "tiny-rasor"]
    pairs = pd.read_csv(out / "pairs.csv").set_index(["first", "second"])
    assert len(pairs) == 6 and (out / "matrix.png").stat().st_size > 10_000
    # The paper's τ of a pair, by hand from the bundled table: its 20 approaches' EM on SQuAD and on bAbI 1.
    paper = pd.read_csv(REPO / "concur" / "analysis" / "data" / "liu2023_em.csv")
    paper = paper.pivot(index="approach_id", columns="benchmark_id", values="em")
    expected = kendalltau(paper["squad"], paper["babi-1"]).statistic
    row = pairs.loc[("squad-dev-carved", "babi-1")]
    assert row["paper_first"] == "squad" and row["paper_tau"] == pytest.approx(expected, abs=1e-4)
    assert np.isnan(pairs.loc[("squad-dev-carved", "squadshifts-new-wiki-carved"), "paper_tau"])  # no SQuADShifts in the paper
    assert pairs["paper_tau_shared"].isna().all()  # the tiny readers are none of the paper's approaches
    number, interval = r"-?[\d.]+", r"-?[\d.]+ \[-?[\d.]+, -?[\d.]+\]"
    # At 40 questions the tiny readers answer no SQuAD question: its τ are undefined, and say so.
    assert (em.loc["squad-dev-carved", ["tiny-bidaf", "tiny-docreader", "tiny-rasor"]] == 0).all()
    assert np.isnan(row["tau"]) and re.search(r"^\| babi-1 \| - \| - \| -0\.32 \| - \|$", text, re.MULTILINE)
    assert re.search(r"^\| human – bAbI 1k \| 0 \| - \| 2 \| -0\.17 \| - \| 66 \| -0\.14 \|$", text, re.MULTILINE)
    by_hand = kendalltau(em.loc["babi-1"].drop("reliability"), em.loc["babi-2"].drop("reliability")).statistic
    assert pairs.loc[("babi-1", "babi-2"), "tau"] == pytest.approx(by_hand, abs=1e-4)
    assert re.search(rf"^\| bAbI 1k \| 1 \| {interval} \| 1 \| 0\.45 \| - \| 55 \| {number} \|$", text, re.MULTILINE)
    assert "1 pairs have a τ in both matrices: too few to compare cell by cell." in text
    assert "over the 0 pairs of human-constructed sets against - over the 0 human-bAbI pairs" in text
    assert "In the paper, over all its pairs of those kinds: 0.84 against -0.1" in text
    _script(root, "cpu_full_docs", *options)
    assert page.read_text() == text


@pytest.mark.parametrize(("script", "page_option"), [("cpu_full_docs", "--page"), ("quickstart_readme", "--readme")])
def test_a_block_script_names_a_missing_study_or_marker_in_one_line_before_any_job_runs(tmp_path, script, page_option):
    page = tmp_path / "page.md"
    page.write_text("# no markers here\n")
    study = tmp_path / "small.toml"
    study.write_text('name = "small"\napproaches = ["tiny-rasor"]\nbenches = ["babi-1"]\n')
    runs = tmp_path / "runs"
    marked = tmp_path / "marked.md"
    name = "cpu-full-results" if script == "cpu_full_docs" else "quickstart-results"
    marked.write_text(f"<!-- {name}:begin -->\n<!-- {name}:end -->\n")
    for options, error in (
        (
            ["--study", str(tmp_path / "nope.toml"), page_option, str(marked)],
            "--study " + str(tmp_path / "nope.toml") + ": no such study file",
        ),
        (["--study", str(study), page_option, str(tmp_path / "absent.md")], f"{tmp_path / 'absent.md'}: no such page"),
        (["--study", str(study), page_option, str(page)], f"{page}: no generated block; add the two lines"),
    ):
        ran = subprocess.run([*_bench(script), *options, "--runs-dir", str(runs), "--registry", str(REPO / "bench" / "checks")],
                             capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
        assert ran.returncode == 1 and error in ran.stderr and "Traceback" not in ran.stderr, ran.stderr
        assert len(ran.stderr.strip().splitlines()) == 1
    assert not runs.exists()  # no job ran, nothing was prepared

"""Every bad input is one clear line (issue 27): the file, line, field or closest name, status 2, and nothing written.

Each case runs the real command line: `concur.cli.main` in this process (as `python -m concur`
calls it, with its error handling) or, for the crash log, `python -m concur` in a subprocess.
"""

from __future__ import annotations

import errno
import gzip
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from concur.cli import common, hoist_global_options
from tests.conftest import TINY_HPARAMS, Ran, toml_value
from tests.test_data_formats import SQUAD_FIXTURE

BINARY = b"\x89PNG\r\n\x1a\n\x00\xff\xfe"  # what a binary file starts with: not UTF-8 at its first byte


@pytest.fixture(autouse=True)
def crash_logs(monkeypatch, tmp_path) -> Path:
    """Crash logs of these tests go under tmp_path, and no debug setting leaks in."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("CONCUR_DEBUG", raising=False)
    return tmp_path / "state" / "concur" / "logs"


def one_error(ran: Ran, *pieces: str, code: int = 2) -> str:
    """The run failed with one line holding every piece, last on stderr (after any progress notes), and no traceback."""
    assert ran.returncode == code, (ran.returncode, ran.stdout, ran.stderr)
    assert "Traceback" not in ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len([line for line in lines if line.startswith(("error:", "concur:"))]) == 1, ran.stderr
    for piece in pieces:
        assert piece in lines[-1], (piece, lines[-1])
    return lines[-1]


def nothing_in(directory: Path) -> bool:
    return not directory.exists() or not any(directory.rglob("*"))


# --- selections: only `all` (or no option) means every approach or benchmark ---------------------

SELECTIONS = [
    (["run", "-a", "", "-b", "babi-1"], "empty approach selection ''", "known: albert-base-v1"),
    (["run", "-a", " , ", "-b", "babi-1"], "empty approach selection ' , '", "or 'all' for every approach"),
    (["run", "-a", "bidaff", "-b", "babi-1"], "unknown approach 'bidaff'", "did you mean 'bidaf'?"),
    (["run", "-a", "bidaf", "-b", ""], "empty benchmark selection ''", "families (human, downsampled, cloze, synthetic)"),
    (["run", "-a", "bidaf", "-b", " , "], "empty benchmark selection ' , '", "known: mrqa-bioasq, mrqa-drop, "),
    (["run", "-a", "bidaf", "-b", "babi-1x"], "unknown benchmark 'babi-1x'", "did you mean 'babi-1'?"),
    (["run", "--approach", "", "--bench", "babi-1"], "empty approach selection ''", "known: "),
    (["run", "-a", "", "-a", " ", "-b", "babi-1"], "empty approach selection ', '", "known: "),
    (["status", "-a", ""], "unknown approach ''", "known: albert-base-v1"),
    (["status", "-b", "babi-1x"], "unknown benchmark 'babi-1x'", "did you mean 'babi-1'?"),
    (["matrix", "-r", "liu2023", "-a", ""], "empty approach selection ''", "known: "),
    (["matrix", "-r", "liu2023", "-b", " , "], "empty benchmark selection ' , '", "known: "),
    (["matrix", "-r", "liu2023", "-b", "squadd"], "unknown benchmark (in these results) 'squadd'", "did you mean 'squad'?"),
    (["compare", "squad", "mrqa-newsqa", "-r", "liu2023", "-a", " , "], "empty approach selection ' , '", "known: "),
    (["report", "-r", "liu2023", "-o", "report", "-b", ""], "empty benchmark selection ''", "known: "),
    (["report", "-r", "liu2023", "-o", "report", "-a", "family:pretrainde"], "unknown approach family", "'pretrainde'"),
    (["data", "annotate", "babi-1", "-a", ""], "unknown approach ''", "known: "),
]


@pytest.mark.parametrize(("args", "problem", "hint"), SELECTIONS, ids=[" ".join(case[0]) for case in SELECTIONS])
def test_an_empty_or_unknown_selection_is_an_error_and_starts_nothing(concur, tmp_path, args, problem, hint):
    ran = concur("--runs-dir", str(tmp_path / "runs"), *args)
    one_error(ran, problem, hint)
    assert nothing_in(tmp_path / "runs") and not (tmp_path / "report").exists()


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("approaches", "[]", "field 'approaches': must be a comma-separated string or a list"),
        ("approaches", '[""]', "field 'approaches'"),
        ("approaches", '[" , "]', "field 'approaches'"),
        ("benches", '""', "field 'benches'"),
        ("benches", '" , "', "field 'benches'"),
        ("benches", '"babi-1x"', "field 'benches': unknown benchmark 'babi-1x'; did you mean 'babi-1'?"),
        ("approaches", '"family:pretrainde"', "field 'approaches': unknown approach family 'pretrainde'; did you mean 'pretrained'?"),
    ],
)
def test_a_study_file_that_selects_nothing_names_its_field(concur, tmp_path, field, value, problem):
    fields = {"approaches": '"bidaf"', "benches": '"babi-1"', field: value}
    study = tmp_path / "empty.toml"
    study.write_text("".join(f"{key} = {text}\n" for key, text in fields.items()))
    ran = concur("--runs-dir", str(tmp_path / "runs"), "study", "run", str(study))
    one_error(ran, problem)
    assert nothing_in(tmp_path / "runs")


def test_all_and_an_omitted_selection_still_mean_everything(concur):
    ran = concur("matrix", "-r", "liu2023", "-b", "squad,mrqa-newsqa,babi-1", "--format", "csv")
    assert ran.returncode == 0 and ran.stdout.count("\n") == 4  # header and three benchmarks, every approach
    assert concur("matrix", "-r", "liu2023", "-b", "squad,mrqa-newsqa", "-a", "all", "--format", "csv").stdout.count("\n") == 3


# --- spec ids: they name directories, so they are checked where specs are loaded ----------------

BAD_IDS = [(".", ".."), ("..", "..."), ("a/b", "ab"), ("a b", "a b"), ("-x", "-x"), ("", "empty")]  # (id field, file stem)


@pytest.mark.parametrize("kind", ["benchmarks", "approaches"])
@pytest.mark.parametrize(("spec_id", "stem"), BAD_IDS, ids=[repr(spec_id) for spec_id, _ in BAD_IDS])
def test_a_bad_spec_id_names_the_file_and_line(concur, tmp_path, kind, spec_id, stem):
    directory = tmp_path / "registry" / kind
    directory.mkdir(parents=True)
    (directory / f"{stem}.toml").write_text(f'# a spec someone wrote\n\nid = "{spec_id}"\nfamily = "human"\n')
    ran = concur("--registry", str(tmp_path / "registry"), "--runs-dir", str(tmp_path / "runs"), "run", "-a", "bidaf", "-b", "babi-1")
    one_error(ran, f"{stem}.toml, line 3, field 'id': {spec_id!r} is not a valid id", "starts with a letter or digit")
    assert nothing_in(tmp_path / "runs")


@pytest.mark.parametrize("stem", [".", "..", "-y", " spaced"])
def test_a_bad_id_from_the_file_name_names_the_file(concur, tmp_path, stem):
    directory = tmp_path / "registry" / "benchmarks"
    directory.mkdir(parents=True)
    (directory / f"{stem}.toml").write_text('family = "human"\n')
    ran = concur("--registry", str(tmp_path / "registry"), "benches")
    one_error(ran, f"{stem}.toml: the file name gives the id {stem!r}, which is not valid: rename the file")


@pytest.mark.parametrize("name", ["a/b", "..", "-x"])
def test_compare_refuses_ids_that_would_be_paths(concur, tmp_path, name):
    ran = concur("--runs-dir", str(tmp_path / "runs"), "compare", "-r", "liu2023", "--", name, "squad")
    one_error(ran, f"compare takes benchmark ids: {name!r} is not a valid id")
    assert nothing_in(tmp_path / "runs")


# --- TOML files: syntax errors with line and column, binary and compressed files -----------------

TOML_DAMAGE = {
    "syntax": (b'id = "x"\nfamily = \n', ", line 2 column 10: invalid TOML: Invalid value"),
    "unclosed": (b'approaches = [\n  "bidaf",\n', ", line 3 column 1: invalid TOML: "),
    "binary": (BINARY, ", line 1 column 1: not UTF-8 text (byte 0x89); TOML files must be UTF-8 (is this a binary file?)"),
    "binary-later": (b'id = "x"\nname = "caf\xe9"\n', ", line 2 column 12: not UTF-8 text (byte 0xe9)"),
    "gzip": (gzip.compress(b'id = "x"\n'), ": is gzip-compressed, not TOML text; decompress it first"),
}


def _toml_target(tmp_path: Path, where: str, content: bytes) -> tuple[Path, list[str]]:
    """Write a damaged TOML file where `where` reads one; the file and the command that reads it."""
    if where in ("benchmarks", "approaches"):
        path = tmp_path / "registry" / where / "mine.toml"
        args = ["--registry", str(tmp_path / "registry"), "benches" if where == "benchmarks" else "approaches"]
    elif where == "study":
        path, args = tmp_path / "study.toml", ["study", "plan", str(tmp_path / "study.toml")]
    else:  # a figure recipe
        path = tmp_path / "recipe.toml"
        args = ["report", "-r", "liu2023", "-o", str(tmp_path / "report"), "--recipes", str(path)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path, args


@pytest.mark.parametrize("where", ["benchmarks", "approaches", "study", "recipe"])
@pytest.mark.parametrize("damage", list(TOML_DAMAGE))
def test_a_damaged_toml_file_is_one_line_with_its_position(concur, tmp_path, where, damage):
    content, problem = TOML_DAMAGE[damage]
    path, args = _toml_target(tmp_path, where, content)
    ran = concur("--runs-dir", str(tmp_path / "runs"), *args)
    one_error(ran, f"{path}{problem}")
    assert nothing_in(tmp_path / "runs") and not (tmp_path / "report").exists()


# --- hyperparameter spaces --------------------------------------------------------------------------

SPACES = [
    ("learning_rate", "log_uniform = [-1e-3, 1e-2]", "draws on a log scale, so both bounds must be positive, got [-0.001, 0.01]"),
    ("learning_rate", "log_uniform = [0.0, 1e-2]", "both bounds must be positive, got [0.0, 0.01]"),
    ("learning_rate", "log_uniform = [1e-5, inf]", "must be [low, high], two finite numbers, got [1e-05, inf]"),
    ("learning_rate", "uniform = [nan, 1.0]", "two finite numbers"),
    ("learning_rate", 'uniform = ["a", 1.0]', "two finite numbers"),
    ("learning_rate", "uniform = [true, 1.0]", "two finite numbers"),
    ("learning_rate", "log_uniform = [1e-2, 1e-4]", "low < high"),
    ("train_batch_size", "int_uniform = [8.5, 32]", "two whole numbers, got [8.5, 32]"),
    ("epochs", "choice = []", "must list at least one value"),
]


@pytest.mark.parametrize(("name", "entry", "problem"), SPACES, ids=[entry for _, entry, _ in SPACES])
def test_a_bad_hyperparameter_space_names_its_field(concur, tmp_path, name, entry, problem):
    directory = tmp_path / "registry" / "approaches"
    directory.mkdir(parents=True)
    hparams = "\n".join(f"{key} = {toml_value(value)}" for key, value in TINY_HPARAMS.items())
    text = f'id = "tiny"\nfamily = "pretrained"\nimplementation = "hf-span"\n[model]\npath = "x"\n[hparams]\n{hparams}\n'
    (directory / "tiny.toml").write_text(text + f"[space]\n{name} = {{ {entry} }}\n")
    kind = entry.split(" ")[0]
    ran = concur("--registry", str(tmp_path / "registry"), "--runs-dir", str(tmp_path / "runs"), "run", "-a", "tiny", "-b", "babi-1")
    one_error(ran, f"tiny.toml, field 'space.{name}.{kind}': ", problem)
    assert nothing_in(tmp_path / "runs")


# --- results imports: JSON shape, EM and F1 on the percentage scale ----------------------------------

RESULTS = [
    (
        "nested.json",
        '[\n  {"approach": "a", "benchmark": "b", "em": 50},\n  {"approach": "a", "benchmark": "c", "em": {"value": 60}}\n]',
        ", line 3: entry 2, field 'em': must be a number, text or null, not a nested object ({'value': 60})",
    ),
    ("list.json", '[{"approach": "a", "benchmark": "b", "em": 50, "seed": [0, 1]}]', ", line 1: entry 1, field 'seed': must be"),
    ("flag.json", '[{"approach": "a", "benchmark": "b", "em": true}]', ", line 1: entry 1, field 'em': must be a number, text or null"),
    ("object.json", '{"approach": "a", "benchmark": "b", "em": 50}', ", line 1 column 1: expected a JSON array [...] of objects"),
    ("scalars.json", "[1, 2]", ", line 1: entry 1 must be an object like"),
    ("syntax.json", '[\n  {"approach": "a", "benchmark": "b", "em": 50,}\n]', ", line 2 column 48: invalid JSON: Expecting property name"),
    ("cut.json", '[{"approach": "a"', ", line 1 column 18: invalid JSON: Expecting ',' delimiter"),
    ("binary.json", BINARY, ", line 1 column 1: not UTF-8 text (byte 0x89); JSON files must be UTF-8"),
    (
        "fraction.json",
        '[\n{"approach": "a", "benchmark": "b", "em": 0.5},\n{"approach": "x", "benchmark": "b", "em": 0.75}\n]',
        ", line 2: column 'em' looks like a 0-1 scale: all 2 values lie within 0-1 (0.5, 0.75); scores are percentages",
    ),
    (
        "fraction.csv",
        "approach,benchmark,em,f1\na,b,0.5,61\nx,b,0.25,70\ny,b,1,80\n",
        ", line 2: column 'em' looks like a 0-1 scale: all 3 values lie within 0-1 (0.5, 0.25, 1)",
    ),
    ("f1-fraction.csv", "approach,benchmark,em,f1\na,b,50,0.61\nx,b,25,0.7\n", ", line 2: column 'f1' looks like a 0-1 scale"),
    (
        "over.csv",
        "approach,benchmark,em\na,b,50\nx,b,120\n",
        ", line 3: column 'em' must be a number from 0 to 100 (a percentage), got '120'",
    ),
    ("negative.json", '[{"approach": "a", "benchmark": "b", "em": -5}]', ", line 1: column 'em' must be a number from 0 to 100"),
    (
        "over-f1.json",
        '[\n{"approach": "a", "benchmark": "b", "em": 5, "f1": 101}\n]',
        ", line 2: column 'f1' must be a number from 0 to 100",
    ),
]


@pytest.mark.parametrize(("name", "content", "problem"), RESULTS, ids=[case[0] for case in RESULTS])
def test_a_bad_results_file_names_the_file_line_and_column(concur, tmp_path, name, content, problem):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    ran = concur("matrix", "-r", str(path), "--out", str(tmp_path / "matrix.csv"))
    one_error(ran, f"{path}{problem}")
    assert not (tmp_path / "matrix.csv").exists()


def test_scores_that_merely_include_small_values_still_import(concur, tmp_path):
    rows = [{"approach": a, "benchmark": b, "em": em} for a, b, em in [("p", "x", 0.5), ("p", "y", 80), ("q", "x", 0.25), ("q", "y", 70)]]
    rows += [{"approach": "r", "benchmark": b, "em": 0} for b in ("x", "y")]  # a column of zeros says nothing about the scale
    (tmp_path / "small.json").write_text(json.dumps(rows))
    ran = concur("matrix", "-r", str(tmp_path / "small.json"), "--format", "csv")
    assert ran.returncode == 0, ran.stderr


# --- gold without answers: refused when the benchmark is prepared (and scored) -----------------------

GOLD_BENCH = (
    'id = "gold"\nfamily = "human"\n'
    '[sources.train]\nreader = "{reader}"\npath = "mine/{train}"\n[sources.test]\nreader = "{reader}"\npath = "mine/{test}"\n'
)


def _squad_with(answers: list[dict]) -> dict:
    document = json.loads(json.dumps(SQUAD_FIXTURE))
    document["data"][0]["paragraphs"][0]["qas"][1]["answers"] = answers
    return document


def _mrqa_with(answers: list[str]) -> bytes:
    lines = [
        {"header": {"dataset": "Mine", "split": "dev"}},
        {"context": "Paris is in France.", "qas": [{"qid": "q1", "question": "Where?", "answers": ["France"]}]},
        {
            "context": "Rome is in Italy.",
            "qas": [{"qid": "q2", "question": "Where?", "answers": ["Italy"]}, {"qid": "q3", "question": "Who?", "answers": answers}],
        },
    ]
    return gzip.compress("".join(json.dumps(line) + "\n" for line in lines).encode())


GOLD = [
    ("squad", [], "data[0].paragraphs[0].qas[1] (question id 'b'): no answer text to score against (answers [])"),
    ("squad", [{"text": "", "answer_start": 0}], "(question id 'b'): no answer text to score against (answers [''])"),
    ("squad", [{"text": "  ", "answer_start": 3}], "(question id 'b'): no answer text to score against (answers ['  '])"),
    ("mrqa", [], ", line 3: qas[1] (qid q3): no answer text to score against (answers [])"),
    ("mrqa", ["", " "], ", line 3: qas[1] (qid q3): no answer text to score against (answers ['', ' '])"),
]


@pytest.mark.parametrize(("reader", "answers", "problem"), GOLD, ids=[f"{reader}-{answers}" for reader, answers, _ in GOLD])
def test_gold_without_answers_is_refused_at_prepare_and_score(concur, tmp_path, reader, answers, problem):
    data = tmp_path / "data-root" / "mine"
    data.mkdir(parents=True)
    if reader == "squad":
        train, test = "train.json", "dev.json"
        (data / train).write_text(json.dumps(SQUAD_FIXTURE))
        (data / test).write_text(json.dumps(_squad_with(answers), indent=1))
    else:
        train, test = "train.jsonl.gz", "dev.jsonl.gz"
        (data / train).write_bytes(_mrqa_with(["Italy"]))
        (data / test).write_bytes(_mrqa_with(answers))
    (tmp_path / "registry" / "benchmarks").mkdir(parents=True)
    (tmp_path / "registry" / "benchmarks" / "gold.toml").write_text(GOLD_BENCH.format(reader=reader, train=train, test=test))
    common_args = ["--registry", str(tmp_path / "registry"), "--runs-dir", str(tmp_path / "runs")]
    ran = concur(*common_args, "data", "prepare", "gold", "--source-dir", str(tmp_path / "data-root"))
    one_error(ran, f"{data / test}", problem)
    assert not (tmp_path / "runs" / "data" / "gold").exists()
    (tmp_path / "pred.json").write_text(json.dumps({"a": "Normandy", "q1": "France"}))
    one_error(concur("score", str(data / test), str(tmp_path / "pred.json")), f"{data / test}", problem)


# --- what is not the user's fault: one line, the traceback in a log ---------------------------------


def _boom(self):
    raise RuntimeError("boom\nsecond line")


def test_an_unexpected_error_is_one_line_naming_its_log(concur, monkeypatch, crash_logs):
    monkeypatch.setattr(common.Settings, "registry", _boom)
    line = one_error(concur("benches"), "concur: unexpected error: RuntimeError: boom; the traceback is in ", code=1)
    log = Path(re.fullmatch(r".*the traceback is in (\S+) \(rerun with --debug to print it\)", line)[1])
    assert log.parent == crash_logs and re.fullmatch(r"crash-\d{8}-\d{6}-\d+\.log", log.name)
    text = log.read_text()
    assert text.startswith("concur ") and "Traceback (most recent call last)" in text and "in _boom" in text
    assert "RuntimeError: boom\nsecond line" in text


@pytest.mark.parametrize("switch", ["--debug", "CONCUR_DEBUG=1"])
def test_debug_prints_the_traceback_instead(concur, monkeypatch, crash_logs, switch):
    monkeypatch.setattr(common.Settings, "registry", _boom)
    if switch.startswith("CONCUR_DEBUG"):
        monkeypatch.setenv("CONCUR_DEBUG", "1")
    ran = concur(*([switch] if switch.startswith("--") else []), "benches")
    assert ran.returncode == 1 and "Traceback (most recent call last)" in ran.stderr and "in _boom" in ran.stderr
    assert ran.stderr.strip().splitlines()[-1] == "concur: unexpected error: RuntimeError: boom; the traceback is above"
    assert not crash_logs.exists()


def test_the_log_falls_back_to_the_temp_dir(concur, monkeypatch, tmp_path):
    (tmp_path / "not-a-dir").write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "not-a-dir"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(common.Settings, "registry", _boom)
    line = one_error(concur("benches"), f"the traceback is in {tmp_path / 'concur-logs'}/crash-", code=1)
    assert "RuntimeError: boom" in Path(line.split(" is in ")[1].split(" ")[0]).read_text()


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (PermissionError(errno.EACCES, "Permission denied", "runs/x"), "error: cannot access runs/x: Permission denied"),
        (
            OSError(errno.ENOSPC, "No space left on device", "runs/x/result.json"),
            re.compile(
                r"error: cannot write runs/x/result\.json: No space left on device; [0-9.]+ [kMGT]?B free on \.: "
                r"free some space \(or fix the disk\), then run the same command again"
            ),
        ),
        (OSError(errno.EROFS, "Read-only file system"), "error: cannot write a file: Read-only file system"),
    ],
)
def test_an_os_error_is_one_line_naming_the_path(concur, monkeypatch, error, message):
    def fail(self):
        raise error

    monkeypatch.setattr(common.Settings, "registry", fail)
    line = one_error(concur("benches"))
    assert message.fullmatch(line) if isinstance(message, re.Pattern) else line == message


def test_a_real_unwritable_output_is_one_line(concur, tmp_path):
    (tmp_path / "blocker").write_text("a file where a directory should be")
    ran = concur("matrix", "-r", "liu2023", "-b", "squad,mrqa-newsqa", "--format", "csv", "--out", str(tmp_path / "blocker" / "m.csv"))
    one_error(ran, f"error: cannot access {tmp_path / 'blocker'}")


def test_no_raw_traceback_from_a_real_process(tmp_path):
    """`python -m concur` as a user runs it, with a bug planted: one line, the log holds the traceback."""
    plant = "from concur.cli import common, main; common.Settings.registry = lambda self: 1 / 0; main()"
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    ran = subprocess.run([sys.executable, "-c", plant, "benches"], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr and ran.stdout == ""
    (line,) = ran.stderr.strip().splitlines()
    assert line.startswith("concur: unexpected error: ZeroDivisionError: division by zero; the traceback is in ")
    (log,) = (tmp_path / "state" / "concur" / "logs").iterdir()
    assert str(log) in line and "ZeroDivisionError" in log.read_text()
    debug = subprocess.run(
        [sys.executable, "-c", plant, "--debug", "benches"], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path
    )
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr and "in <lambda>" in debug.stderr


# ---- the runs dir ----


@pytest.mark.parametrize(
    ("given", "hoisted"),
    [
        (["run", "-a", "x", "--runs-dir", "R"], ["--runs-dir", "R", "run", "-a", "x"]),
        (["study", "run", "F", "--runs-dir=R", "--registry", "G"], ["--runs-dir=R", "--registry", "G", "study", "run", "F"]),
        (["--registry", "G", "status", "--debug", "--runs-dir", "R"], ["--registry", "G", "--debug", "--runs-dir", "R", "status"]),
        (["score", "--", "--runs-dir", "R"], ["score", "--", "--runs-dir", "R"]),  # after --, an argument like any other
        (["status", "--runs-dir"], ["status", "--runs-dir"]),  # no value: left for the parser to name
    ],
)
def test_the_global_options_may_follow_the_command(given, hoisted):
    assert hoist_global_options(given) == hoisted


def test_a_runs_dir_after_the_command_is_the_runs_dir(concur, tmp_path):
    runs = tmp_path / "runs"
    (runs / "jobs").mkdir(parents=True)
    after = concur("status", "--format", "json", "--runs-dir", str(runs))
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["summary"] == {"done": 0, "failed": 0, "running": 0, "interrupted": 0, "pending": 0}


EMPTY_RUNS_DIR = "error: --runs-dir is empty; give a directory, e.g. --runs-dir runs (leave the option out for ./runs)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--runs-dir", "", "status"), EMPTY_RUNS_DIR),
        (("status", "--runs-dir", " "), EMPTY_RUNS_DIR),
        (("--registry", "", "benches"), "error: --registry is empty; give a spec directory (holding benchmarks/ and/or approaches/)"),
    ],
)
def test_an_empty_runs_dir_or_registry_is_refused(concur, tmp_path, args, message):
    assert one_error(concur(*args)) == message
    assert list(tmp_path.iterdir()) == []  # nothing written into the current directory


@pytest.mark.parametrize("command", [("status",), ("store", "check"), ("store", "rebuild"), ("results", "--results", "store")])
def test_a_read_command_on_a_missing_runs_dir_says_so_and_names_the_one_beside_it(concur, tmp_path, command):
    (tmp_path / "runs" / "jobs").mkdir(parents=True)
    typo = tmp_path / "runz"
    ran = concur("--runs-dir", str(typo), *command)
    if command[0] == "results":  # the analysis commands name the store they found missing
        one_error(ran, f"no results store at {typo / 'concur.sqlite'}")
    else:
        assert one_error(ran) == (
            f"error: no runs directory at {typo} (from --runs-dir): nothing has run there; did you mean {tmp_path / 'runs'}? "
            "(`concur run` and `concur study run` create one)"
        )
    assert not typo.exists()


def test_a_file_as_runs_dir_is_named_as_not_a_runs_directory(concur, tmp_path):
    (tmp_path / "results.txt").write_text("not a runs dir")
    for args in (("status",), ("run", "-a", "rasor", "-b", "babi-1", "--device", "cpu")):
        assert one_error(concur("--runs-dir", str(tmp_path / "results.txt"), *args)) == (
            f"error: {tmp_path / 'results.txt'} is a file, not a runs directory; give a directory with --runs-dir (or $CONCUR_RUNS)"
        )


def test_a_wrong_device_is_refused_before_any_data_is_prepared(concur, tmp_path):
    ran = concur("--runs-dir", str(tmp_path / "runs"), "run", "-a", "rasor", "-b", "babi-1", "--device", "cpux")
    assert one_error(ran) == "error: --device: unknown device 'cpux'; did you mean 'cpu'?"
    assert nothing_in(tmp_path / "runs")

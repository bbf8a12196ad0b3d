"""Cloze benchmarks to extractive QA: CBT, LAMBADA, CNN, ReCoRD, on fixtures in their upstream formats."""

import io
import json
import random
import tarfile

import pytest

from concur.data.cbt import read_cbt
from concur.data.cloze import EMPTY_PASSAGE, NO_ANSWER, NO_BLANK, NOT_IN_PASSAGE, first_token_span
from concur.data.cnn import read_cnn
from concur.data.lambada import read_lambada
from concur.data.prepare import prepare
from concur.data.record import read_record
from concur.data.sources import SourceLocator
from concur.errors import DataFormatError
from concur.registry import default_registry
from tests.conftest import user_benchmark

# --- the shared rule ---------------------------------------------------------------------


def test_first_token_span_is_whole_token_and_ignores_case():
    assert first_token_span("a cat sat on the cat", "cat") == (2, 4)
    assert first_token_span("concatenate cats cat", "cat") == (17, 19)  # not inside a longer token
    assert first_token_span("The Cat sat", "cat") == (4, 6)
    assert first_token_span("@entity12 met @entity1 .", "@entity1") == (14, 21)
    assert first_token_span("a cat", "dog") is None
    assert first_token_span("a cat", " ") is None


# --- CBT -----------------------------------------------------------------------------------

FIRST = "Maxwell came to the school in the spring ."  # 42 characters
FILLER = "The boys were loud ."


def _cbt_example(first: str, question: str, answer: str, candidates: str) -> str:
    """One example in CBTest's format: 20 numbered sentences, then `21 question<TAB>answer<TAB><TAB>candidates`."""
    lines = [f"1 {first}", *(f"{n} {FILLER}" for n in range(2, 21)), f"21 {question}\t{answer}\t\t{candidates}"]
    return "\n".join(lines) + "\n"


CBT_FILE = "\n".join(
    [
        _cbt_example(FIRST, "The XXXXX were quiet at last .", "boys", "boys|girls|school|spring"),
        _cbt_example("School was out for the summer .", "They left the XXXXX at noon .", "school", "boys|school|summer|noon"),
        _cbt_example(FIRST, "Every XXXXX was tired .", "boy", "boy|girl|school|spring"),
    ]
)


def test_cbt_passages_questions_and_spans(tmp_path):
    path = tmp_path / "cbtest_CN_test_2500ex.txt"
    path.write_text(CBT_FILE)
    split = read_cbt(path, "test")
    assert split.dataset == "CBT:cbtest_CN_test_2500ex"
    assert split.n_questions == 2
    assert split.dropped == {NOT_IN_PASSAGE: 1}  # "boy" occurs only inside the token "boys"
    boys, school = split.passages
    assert boys.context == " ".join([FIRST, *[FILLER] * 19])
    question = boys.qas[0]
    assert (question.qid, question.question, question.answers) == ("cbtest_CN_test_2500ex:0", "The XXXXX were quiet at last .", ["boys"])
    assert question.first_span == (47, 50)  # sentence 2 starts at 43, after "The "
    assert boys.context[47:51] == "boys"
    # the only occurrence is capitalised: the span keeps the passage's text, the label is accepted too
    assert school.qas[0].qid == "cbtest_CN_test_2500ex:1"
    assert school.qas[0].answers == ["School", "school"]
    assert school.qas[0].first_span == (0, 5)
    assert school.context.startswith("School was out for the summer . The boys were loud .")


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("1 One .\n3 Three .\n", 2, "line numbered 3 where 2 was expected"),
        ("1 One .\n2 Where is XXXXX ?\n", 1, "the file ends inside an example"),  # no tab fields: a sentence
        ("1 One .\n2 Two .\n\n1 Again .\n", 3, "ends without its question line"),
        ("1 One .\n2 XXXXX .\tone\t\tone|two\nOne more .\n", 3, "expected 'N sentence'"),
        ("1 One .\n2 XXXXX .\t \t\tone|two\n", 2, "question<TAB>answer"),
    ],
)
def test_cbt_malformed_files_name_the_line(tmp_path, text, line, problem):
    path = tmp_path / "cbtest_NE_valid_2000ex.txt"
    path.write_text(text)
    with pytest.raises(DataFormatError, match=rf"cbtest_NE_valid_2000ex.txt, line {line}: .*{problem}") as error:
        read_cbt(path)
    assert error.value.line == line


# --- LAMBADA -------------------------------------------------------------------------------

LAMBADA_LINES = [
    'he looked at the old dog . " you \'re a good boy , " he said . the dog wagged its tail and licked his hand . he patted the dog',
    "she opened the box . inside was a ring",
    "and then there was nothing left but the sea",
    '" where is sam ? " asked frodo . " i do n\'t know , " said pippin . " i have n\'t seen sam',
]


def test_lambada_context_question_and_drops(tmp_path):
    path = tmp_path / "lambada_test_plain_text.txt"
    path.write_text("\n".join(LAMBADA_LINES) + "\n\n")
    split = read_lambada(path, "test")
    assert split.n_questions == 2
    assert split.dropped == {NOT_IN_PASSAGE: 1, EMPTY_PASSAGE: 1}  # "ring" is not in the context; line 3 has no context
    dog, sam = split.passages
    assert dog.context == 'he looked at the old dog . " you \'re a good boy , " he said . the dog wagged its tail and licked his hand .'
    assert dog.qas[0].question == "he patted the XXXXX"
    assert (dog.qas[0].qid, dog.qas[0].answers, dog.qas[0].first_span) == ("lambada_test_plain_text:1", ["dog"], (21, 23))
    # the last sentence starts after the last sentence-final token: the opening quote belongs to the question
    assert sam.context == '" where is sam ? " asked frodo . " i do n\'t know , " said pippin .'
    assert sam.qas[0].question == "\" i have n't seen XXXXX"
    assert (sam.qas[0].qid, sam.qas[0].first_span) == ("lambada_test_plain_text:4", (11, 13))
    assert sam.context[11:14] == "sam"


def test_lambada_unreadable_file_is_an_error(tmp_path):
    # any line of text is a passage, so what can be malformed is the file itself
    path = tmp_path / "train.txt"
    path.write_bytes(("\n".join(LAMBADA_LINES[:2]) + "\n").encode() + b"caf\xe9 au lait\n")
    with pytest.raises(DataFormatError, match=r"train.txt: truncated, corrupt or not UTF-8"):
        read_lambada(path)


# --- CNN -----------------------------------------------------------------------------------


def _question_file(context: str, question: str, answer: str, entities: dict[str, str]) -> str:
    """A `.question` file as DeepMind's generate_questions.py writes it (no final newline)."""
    mapping = "\n".join(f"{key}:{value}" for key, value in entities.items())
    return f"http://web.archive.org/web/2015/http://www.cnn.com/2015/story.html\n\n{context}\n\n{question}\n\n{answer}\n\n{mapping}"


COACH = _question_file(
    "@entity0 ( @entity1 ) -- @entity2 was named the new coach of @entity3 on monday , @entity1 reported .",
    "@placeholder named new coach of @entity3",
    "@entity2",
    {"@entity0": "Madrid", "@entity1": "CNN", "@entity2": "Carlo Ancelotti", "@entity3": "Real Madrid"},
)
MET = _question_file("@entity12 met @entity1 .", "@entity12 met @placeholder", "@entity1", {"@entity1": "Obama", "@entity12": "Cameron"})
ABSENT = _question_file("@entity0 won .", "@placeholder lost", "@entity5", {"@entity0": "Spain"})
NO_PLACEHOLDER = _question_file("@entity0 won .", "@entity0 won", "@entity0", {"@entity0": "Spain"})


def _cnn_archive(path, members: dict[str, str]):
    """A gzip tar holding `members` (name -> text) plus their directories, as cnn.tgz does."""
    with tarfile.open(path, "w:gz") as tar:
        for directory in sorted({name.rsplit("/", 1)[0] for name in members}):
            info = tarfile.TarInfo(directory)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _coach_variant(number: int) -> str:
    return COACH.replace("on monday", f"on day {number}")


TRAINING = {f"cnn/questions/training/{number:040x}.question": _coach_variant(number) for number in range(1, 7)}
TEST = {
    "cnn/questions/test/" + "a" * 40 + ".question": MET,
    "cnn/questions/test/" + "b" * 40 + ".question": ABSENT,
    "cnn/questions/test/" + "c" * 40 + ".question": NO_PLACEHOLDER,
    "cnn/questions/test/" + "d" * 40 + ".question": COACH,
}


def test_cnn_questions_from_the_archive_stream(tmp_path):
    archive = _cnn_archive(tmp_path / "cnn.tgz", {**TRAINING, **TEST})
    split = read_cnn(archive, "test", directory="test")
    assert split.dataset == "CNN:test"
    assert split.n_questions == 2
    assert split.dropped == {NOT_IN_PASSAGE: 1, NO_BLANK: 1}
    met, coach = split.passages  # in member-name order
    assert met.qas[0].qid == "a" * 40
    assert (met.context, met.qas[0].question, met.qas[0].answers) == (
        "@entity12 met @entity1 .",
        "@entity12 met @placeholder",
        ["@entity1"],
    )
    assert met.qas[0].first_span == (14, 21)  # "@entity1", not the "@entity1" prefix of "@entity12"
    assert coach.qas[0].first_span == (25, 32)
    assert coach.context[25:33] == "@entity2"
    assert coach.article == "http://web.archive.org/web/2015/http://www.cnn.com/2015/story.html"
    assert read_cnn(archive, "train").n_questions == 6  # the default directory, every question


def test_cnn_seeded_sample_by_member_name(tmp_path):
    archive = _cnn_archive(tmp_path / "cnn.tgz", {**TEST, **TRAINING})
    first = read_cnn(archive, "train", directory="training", sample=4, seed=0)
    again = read_cnn(archive, "train", directory="training", sample=4, seed=0)
    qids = [question.qid for _, question in first.questions()]
    assert len(qids) == 4 and not first.dropped
    assert qids == [question.qid for _, question in again.questions()]
    names = sorted(name.split("/")[-1].removesuffix(".question") for name in TRAINING)
    assert qids == sorted(random.Random(0).sample(names, 4))  # the documented rule
    assert qids == [f"{number:040x}" for number in (1, 2, 4, 6)]
    reordered = _cnn_archive(tmp_path / "reordered.tgz", dict(reversed(list(TRAINING.items()))))
    assert [question.qid for _, question in read_cnn(reordered, "train", sample=4, seed=0).questions()] == qids
    other = read_cnn(archive, "train", directory="training", sample=4, seed=1)
    assert [question.qid for _, question in other.questions()] == sorted(random.Random(1).sample(names, 4))
    with pytest.raises(DataFormatError, match="a sample of 7 questions was asked for, but training/ holds 6"):
        read_cnn(archive, "train", sample=7)


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (COACH.replace("@entity2\n\n@entity0:", "obama\n\n@entity0:"), 7, "the answer must be one @entityN marker, got 'obama'"),
        (COACH.replace(" reported .\n\n", " reported .\n", 1), 4, "expected a blank line after the context"),
        (COACH.replace("\n@entity1:CNN", "\nCNN"), 10, "expected an '@entityN:Name' line"),
        ("http://x\n\n@entity0 won .\n\n@placeholder won", 6, "expected URL, context, question and answer"),
    ],
)
def test_cnn_malformed_question_names_member_and_line(tmp_path, text, line, problem):
    name = "cnn/questions/training/" + "e" * 40 + ".question"
    archive = _cnn_archive(tmp_path / "cnn.tgz", {name: text})
    with pytest.raises(DataFormatError, match=rf"cnn.tgz \({name}\), line {line}: {problem}"):
        read_cnn(archive)


def test_cnn_not_an_archive(tmp_path):
    path = tmp_path / "cnn.tgz"
    path.write_bytes(b"<html>quota exceeded</html>")
    with pytest.raises(DataFormatError, match="not a readable tar archive"):
        read_cnn(path)


# --- ReCoRD --------------------------------------------------------------------------------

RECORD_TEXT = "Tottenham beat Arsenal 2-1 on Sunday.\n@highlight\nHarry Kane scored twice for Tottenham\n@highlight\nArsenal remain fourth"
RECORD_QAS = [
    {
        "id": "q-spurs",
        "query": "@placeholder moved above their rivals",
        "answers": [{"start": 0, "end": 8, "text": "Tottenham"}, {"start": 77, "end": 85, "text": "Tottenham"}],
    },
    {"id": "q-arsenal", "query": "@placeholder lost the derby", "answers": [{"start": 3, "end": 9, "text": "Arsenal"}]},
    {"id": "q-chelsea", "query": "@placeholder were not playing", "answers": [{"start": 0, "end": 6, "text": "Chelsea"}]},
    {"id": "q-hidden", "query": "@placeholder scored twice", "answers": []},
]
RECORD_PASSAGE = {
    "id": "p-derby",
    "source": "Daily mail",
    "passage": {"text": RECORD_TEXT, "entities": [{"start": 0, "end": 8}]},
    "qas": RECORD_QAS,
}
RECORD_EMPTY = {"id": "p-empty", "source": "CNN", "passage": {"text": "", "entities": []}, "qas": [RECORD_QAS[0] | {"id": "q-empty"}]}


def _check_record(split, spurs_qid, arsenal_qid, article):
    assert split.n_questions == 2
    assert split.dropped == {NOT_IN_PASSAGE: 1, NO_ANSWER: 1, EMPTY_PASSAGE: 1}
    (passage,) = split.passages
    assert passage.context == RECORD_TEXT and passage.article == article
    spurs, arsenal = passage.qas
    assert (spurs.qid, spurs.question, spurs.answers) == (spurs_qid, "@placeholder moved above their rivals", ["Tottenham"])
    assert spurs.detected_answers[0].char_spans == ((0, 8), (77, 85))  # as annotated, end inclusive
    assert RECORD_TEXT[77:86] == "Tottenham"
    assert (arsenal.qid, arsenal.first_span) == (arsenal_qid, (15, 21))  # a misplaced span moves to the nearest occurrence
    assert RECORD_TEXT[15:22] == "Arsenal"


def test_record_official_json(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"version": "v1.0", "data": [RECORD_PASSAGE, RECORD_EMPTY]}, indent=2))
    _check_record(read_record(path, "test"), "q-spurs", "q-arsenal", "p-derby")


def test_record_superglue_json_lines(tmp_path):
    def superglue(record, idx):
        qas = [{key: value for key, value in qa.items() if key != "id"} | {"idx": number} for number, qa in enumerate(record["qas"])]
        return {"source": record["source"], "passage": record["passage"], "qas": qas, "idx": idx}

    path = tmp_path / "val.jsonl"
    path.write_text(json.dumps(superglue(RECORD_PASSAGE, 0)) + "\n" + json.dumps(superglue(RECORD_EMPTY, 1)) + "\n")
    _check_record(read_record(path, "test"), "0-0", "0-1", "0")


def test_record_malformed_input(tmp_path):
    lines = tmp_path / "train.jsonl"
    lines.write_text(json.dumps({"passage": {"text": "x"}, "qas": [], "idx": 0}) + "\n{not json\n")
    with pytest.raises(DataFormatError, match="train.jsonl, line 2 column 2: invalid JSON"):
        read_record(lines)
    document = tmp_path / "train.json"
    broken = json.loads(json.dumps(RECORD_PASSAGE))
    del broken["qas"][1]["query"]
    document.write_text(json.dumps({"version": "v1.0", "data": [broken]}))
    with pytest.raises(DataFormatError, match=r"train.json: data\[0\].qas\[1\]: missing or invalid field 'query'"):
        read_record(document)


# --- the registry and a prepared benchmark ---------------------------------------------------


def test_builtin_cloze_specs():
    registry = default_registry()
    specs = {spec_id: registry.benchmark(spec_id) for spec_id in ("cbt-cn", "cbt-ne", "lambada", "cnn-100k", "record")}
    assert {spec.family for spec in specs.values()} == {"cloze"}
    assert specs["cbt-ne"].sources["test"].member == "CBTest/data/cbtest_NE_test_2500ex.txt"
    assert specs["lambada"].sources["train"].member == "lambada-train-valid/train.txt"
    cnn = specs["cnn-100k"].sources
    assert cnn["train"].path == cnn["test"].path == "cnn/cnn.tgz"
    assert (cnn["train"].options, cnn["test"].options) == ({"directory": "training", "sample": 100_000, "seed": 0}, {"directory": "test"})
    assert specs["record"].sources["test"].path == "record/dev.json"
    assert all(source.origin for spec in specs.values() for source in spec.sources.values())


def test_prepare_cnn_fixture_benchmark(tmp_path):
    root = tmp_path / "root"
    (root / "cnn").mkdir(parents=True)
    _cnn_archive(root / "cnn" / "cnn.tgz", {**TRAINING, **TEST})
    spec = user_benchmark(
        tmp_path,
        "cnn-mini",
        """
            id = "cnn-mini"
            family = "cloze"
            [sources.train]
            reader = "cnn"
            path = "cnn/cnn.tgz"
            [sources.train.options]
            directory = "training"
            sample = 3
            seed = 0
            [sources.test]
            reader = "cnn"
            path = "cnn/cnn.tgz"
            [sources.test.options]
            directory = "test"
            """,
    )
    bench, did_work = prepare(spec, SourceLocator((root,), tmp_path / "cache"), tmp_path / "data")
    assert did_work
    splits = bench.manifest["splits"]
    assert (splits["train"]["questions"], splits["train"]["dropped"]) == (3, {})
    assert (splits["test"]["questions"], splits["test"]["contexts"]) == (2, 2)
    assert splits["test"]["dropped"] == {NOT_IN_PASSAGE: 1, NO_BLANK: 1}
    assert bench.manifest["sources"]["train"]["origin"] == "local"
    test = bench.load("test")
    for passage, question in test.questions():
        first, last = question.first_span
        assert passage.context[first : last + 1] == question.answers[0]

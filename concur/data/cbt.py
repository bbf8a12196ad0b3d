"""Convert the Children's Book Test (Hill et al. 2016) to extractive question answering.

Upstream format (`CBTest/data/cbtest_{CN,NE,V,P}_*.txt` in `CBTest.tgz`): examples of 21
numbered lines separated by a blank line; lines 1-20 are `N sentence`, line 21 is
`21 question<TAB>answer<TAB><TAB>candidate|candidate|...`, the question holding the blank
`XXXXX`. Text is tokenised with spaces.

Conversion (Liu et al.'s cloze benchmarks, no answer choices): the passage is the context
sentences joined by single spaces, the question is line 21's text with its blank, the
candidates are dropped, and the answer span is the answer's first whole-token occurrence
in the passage (see `concur.data.cloze`). Examples whose answer is not in the passage are
dropped and counted.
"""

from __future__ import annotations

from pathlib import Path

from concur.components import ReaderKind
from concur.data.cloze import BLANK, cloze_question
from concur.data.model import Passage, Split
from concur.data.textfile import numbered_lines
from concur.errors import DataFormatError

_LINE_FORMAT = "expected 'N sentence' or 'N question<TAB>answer<TAB><TAB>candidates'"


def read_cbt(path: Path, split_name: str = "") -> Split:
    """Read one CBT question file into the unified model (one passage per question)."""
    stem = path.name.split(".")[0]
    split = Split(dataset=f"CBT:{stem}", split=split_name, passages=[])
    sentences: list[str] = []
    first_line = 0  # where the example being read starts
    examples = 0
    for number, line in numbered_lines(path):
        if not line.strip():
            if sentences:
                raise DataFormatError(path, f"the example starting at line {first_line} ends without its question line", number)
            continue
        index_text, _, rest = line.partition(" ")
        if not index_text.isdigit():
            raise DataFormatError(path, _LINE_FORMAT, number)
        index = int(index_text)
        if index != len(sentences) + 1:
            raise DataFormatError(path, f"line numbered {index} where {len(sentences) + 1} was expected", number)
        if index == 1:
            first_line = number
        if "\t" not in rest:
            sentences.append(rest.strip())
            continue
        fields = rest.split("\t")
        if not sentences or len(fields) < 2 or not fields[1].strip():
            raise DataFormatError(path, "a question line needs context sentences before it and 'question<TAB>answer'", number)
        context = " ".join(sentence for sentence in sentences if sentence)
        qid = f"{stem}:{examples}"
        examples += 1
        question = cloze_question(split, qid, fields[0].strip(), BLANK, context, fields[1].strip())
        if question is not None:
            split.passages.append(Passage(context=context, qas=[question]))
        sentences = []
    if sentences:
        raise DataFormatError(path, "the file ends inside an example, before its question line", first_line)
    return split


READER = ReaderKind(read_cbt)

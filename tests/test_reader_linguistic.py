"""The spaCy tagger annotates exactly our tokens, with real values from a real (rule-based) pipeline."""

from __future__ import annotations

import re
import shutil
import sqlite3
import sys

import pytest

from concur.approaches.reader.annotation_cache import AnnotationCache, sequence_key
from concur.approaches.reader.linguistic import Annotation, Tagger, load_tagger
from concur.data.tokenize import tokenize
from concur.errors import ConcurError, ModelUnavailableError
from tests.spacy_pipeline import build_babi_pipeline

spacy = pytest.importorskip("spacy", reason="spaCy is not installed (pip install 'concur[features]'); the tagger tests need it")

T, F = True, False


@pytest.fixture(scope="module")
def babi_tagger(tmp_path_factory) -> Tagger:
    return load_tagger(str(build_babi_pipeline(tmp_path_factory.mktemp("babi_rules"))), "drqa")


def test_annotate_gives_the_rule_values_for_each_of_our_tokens(babi_tagger):
    [annotation] = babi_tagger.annotate([(["Mary", "moved", "to", "the", "bathroom", "."], [T, T, T, T, F, F])])
    assert annotation == Annotation(
        pos=("NNP", "VBD", "IN", "DT", "NN", "."),
        ner=("PERSON", "", "", "", "LOC", ""),
        lemma=("mary", "move", "to", "the", "bathroom", "."),
    )


def test_tokens_spacy_would_split_stay_whole_and_unknown_words_fall_back(babi_tagger):
    # spaCy's own tokenizer splits "Sandra's" into two tokens; we keep ours, and a word no rule covers
    # gets no tag, no entity and its lower-cased form as lemma
    [annotation] = babi_tagger.annotate([(["Where", "is", "Sandra's", "HALLWAY", "?"], [T, T, T, F, F])])
    assert annotation == Annotation(
        pos=("WRB", "VBZ", "", "NN", "."),
        ner=("", "", "", "LOC", ""),
        lemma=("where", "be", "sandra's", "hallway", "?"),
    )


def test_text_from_our_tokenizer(babi_tagger):
    text = "Daniel went back to the kitchen. John travelled to the office."
    tokens = tokenize(text)
    [annotation] = babi_tagger.annotate([(tokens.words, tokens.spaces(text))])
    assert annotation.pos == ("NNP", "VBD", "RB", "IN", "DT", "NN", ".", "NNP", "VBD", "IN", "DT", "NN", ".")
    assert annotation.ner == ("PERSON", "", "", "", "", "LOC", "", "PERSON", "", "", "", "LOC", "")
    assert annotation.lemma == ("daniel", "go", "back", "to", "the", "kitchen", ".", "john", "travel", "to", "the", "office", ".")


def test_a_batch_gives_one_annotation_per_sequence_in_order(babi_tagger):
    sequences = [
        (["John", "journeyed", "to", "the", "garden", "."], [T, T, T, T, F, F]),
        ([], []),
        (["Where", "is", "John", "?"], [T, T, F, F]),
        (["bedroom"], [F]),
        ([], []),
    ]
    annotations = babi_tagger.annotate(sequences, batch_size=2)
    assert [len(a.pos) for a in annotations] == [6, 0, 4, 1, 0]
    assert all(len(a.pos) == len(a.ner) == len(a.lemma) for a in annotations)
    assert annotations[1] == annotations[4] == Annotation((), (), ())
    assert annotations[0].lemma == ("john", "journey", "to", "the", "garden", ".")
    assert annotations[2].ner == ("", "", "PERSON", "")
    assert annotations[3] == Annotation(("NN",), ("LOC",), ("bedroom",))
    assert babi_tagger.annotate([]) == []


def test_name_records_the_pipeline_and_its_version(babi_tagger):
    assert babi_tagger.name == "en_babi_rules 1.0.0"


def test_pos_falls_back_to_the_coarse_tag_when_the_pipeline_has_no_fine_one(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("attribute_ruler").add([[{"LOWER": "mary"}]], {"POS": "PROPN"})
    nlp.to_disk(tmp_path / "coarse")
    [annotation] = Tagger(str(tmp_path / "coarse")).annotate([(["Mary", "left"], [T, F])])
    assert annotation == Annotation(pos=("PROPN", ""), ner=("", ""), lemma=("mary", "left"))


def test_a_pipeline_that_merges_tokens_is_refused(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "LOC", "pattern": "the garden"}])
    nlp.add_pipe("merge_entities")
    nlp.to_disk(tmp_path / "merging")
    tagger = Tagger(str(tmp_path / "merging"))
    with pytest.raises(ConcurError, match="changed the tokenisation"):
        tagger.annotate([(["to", "the", "garden"], [T, T, F])])


def test_a_missing_pipeline_package_says_how_to_install_it():
    with pytest.raises(ModelUnavailableError) as caught:
        load_tagger("en_core_web_nonexistent", "drqa")
    message = str(caught.value)
    assert "'drqa'" in message and "'en_core_web_nonexistent'" in message
    assert "python -m spacy download en_core_web_nonexistent" in message
    assert "spacy_pipeline" in message and "-nofeat" in message


def test_a_missing_pipeline_directory_is_named(tmp_path):
    missing = tmp_path / "no" / "such" / "pipeline"
    with pytest.raises(ModelUnavailableError) as caught:
        load_tagger(str(missing), "fusionnet")
    message = str(caught.value)
    assert "'fusionnet'" in message and str(missing) in message
    assert "nlp.to_disk" in message and "spacy download" in message and "-nofeat" in message


def test_without_spacy_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "spacy", None)
    with pytest.raises(ModelUnavailableError) as caught:
        load_tagger("en_core_web_sm", "mnemonic-reader")
    message = str(caught.value)
    assert "concur[features]" in message and "'mnemonic-reader'" in message and "-nofeat" in message


def test_the_cache_answers_later_taggers_without_spacy(tmp_path, monkeypatch):
    pipeline = str(build_babi_pipeline(tmp_path / "babi_rules"))
    sequences = [
        (["Mary", "moved", "to", "the", "bathroom", "."], [T, T, T, T, F, F]),
        (["Where", "is", "Mary", "?"], [T, T, F, F]),
        (["Mary", "moved", "to", "the", "bathroom", "."], [T, T, T, T, F, F]),  # the same sequence again
    ]
    first = load_tagger(pipeline, "drqa", tmp_path / "cache")
    tagged = first.annotate(sequences)
    cache = tmp_path / "cache" / "annotations" / "en_babi_rules-1.0.0.sqlite"
    assert cache.is_file()
    with sqlite3.connect(cache) as connection:
        assert connection.execute("SELECT COUNT(*) FROM annotations").fetchone() == (2,)
    monkeypatch.setitem(sys.modules, "spacy", None)  # a later job, on a machine without spaCy
    second = load_tagger(pipeline, "drqa", tmp_path / "cache")
    assert second.name == "en_babi_rules 1.0.0"
    assert second.annotate(sequences) == tagged
    assert (
        tagged[0]
        == tagged[2]
        == Annotation(
            pos=("NNP", "VBD", "IN", "DT", "NN", "."),
            ner=("PERSON", "", "", "", "LOC", ""),
            lemma=("mary", "move", "to", "the", "bathroom", "."),
        )
    )
    # a text the cache lacks needs spaCy, and the error says how to get it
    with pytest.raises(ModelUnavailableError, match=r"concur\[features\]"):
        second.annotate([(["John", "went", "to", "the", "garden", "."], [T, T, T, T, F, F])])


def test_the_cache_stands_in_for_a_pipeline_this_machine_lacks(tmp_path, monkeypatch):
    # named like an installed package: the directory is the pipeline's lang_name
    (tmp_path / "site-packages").mkdir()
    pipeline = build_babi_pipeline(tmp_path / "site-packages" / "en_babi_rules")
    sequence = (["Where", "is", "Mary", "?"], [T, T, F, F])
    tagged = load_tagger(str(pipeline), "drqa", tmp_path / "cache").annotate([sequence])
    shutil.rmtree(pipeline)  # a GPU node with the cache (copied or shared) and neither the pipeline nor spaCy
    monkeypatch.setitem(sys.modules, "spacy", None)
    for named in (str(pipeline), "en_babi_rules"):
        tagger = load_tagger(named, "drqa", tmp_path / "cache")
        assert tagger.name == "en_babi_rules 1.0.0"
        assert (
            tagger.annotate([sequence])
            == tagged
            == [Annotation(("WRB", "VBZ", "NNP", "."), ("", "", "PERSON", ""), ("where", "be", "mary", "?"))]
        )
        assert tagger.tagged == 0
    # a text the cache lacks: the error names the cache, how many texts it lacks and how to get the pipeline
    with pytest.raises(ModelUnavailableError) as caught:
        tagger.annotate([(["John", "went", "to", "the", "garden", "."], [T, T, T, T, F, F]), sequence])
    message = str(caught.value)
    assert str(tmp_path / "cache" / "annotations" / "en_babi_rules-1.0.0.sqlite") in message
    assert "lacks 1 of the texts" in message and "concur[features]" in message


def test_caches_of_several_versions_of_a_missing_pipeline_are_ambiguous(tmp_path):
    for version in ("1.0.0", "2.0.0"):
        AnnotationCache(tmp_path / "cache", f"en_babi_rules {version}")
    with pytest.raises(ConcurError) as caught:
        load_tagger("en_babi_rules", "drqa", tmp_path / "cache")
    message = str(caught.value)
    assert "'en_babi_rules 1.0.0'" in message and "'en_babi_rules 2.0.0'" in message and "install the pipeline" in message
    assert "pin one in the approach spec's [model] spacy_pipeline (e.g. 'en_babi_rules==2.0.0')" in message


def test_a_pinned_version_chooses_among_cached_versions(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "spacy", None)  # a GPU node: caches, no spaCy, no pipeline
    sequence = (["Where", "is", "Mary", "?"], [T, T, F, F])
    for version, lemma in (("1.0.0", "mary"), ("2.0.0", "Mary")):
        cache = AnnotationCache(tmp_path / "cache", f"en_babi_rules {version}")
        cache.store({sequence_key(*sequence): (("WRB", "VBZ", "NNP", "."), ("", "", "PERSON", ""), ("where", "be", lemma, "?"))})
    for version, lemma in (("1.0.0", "mary"), ("2.0.0", "Mary")):
        tagger = load_tagger(f"en_babi_rules=={version}", "drqa", tmp_path / "cache")
        assert tagger.name == f"en_babi_rules {version}"
        assert tagger.annotate([sequence])[0].lemma == ("where", "be", lemma, "?")
    # a version with no cache, on a machine without spaCy: the error names the extra
    with pytest.raises(ModelUnavailableError, match=r"concur\[features\]"):
        load_tagger("en_babi_rules==3.0.0", "drqa", tmp_path / "cache")


def test_a_pin_the_installed_pipeline_does_not_match_is_refused(tmp_path):
    pipeline = str(build_babi_pipeline(tmp_path / "babi_rules"))
    assert load_tagger(f"{pipeline}==1.0.0", "drqa", tmp_path / "cache").name == "en_babi_rules 1.0.0"
    with pytest.raises(ModelUnavailableError) as caught:
        load_tagger(f"{pipeline}==2.0.0", "drqa", tmp_path / "cache")
    assert str(caught.value) == (
        f"approach 'drqa': spacy_pipeline pins {pipeline!r} to version 2.0.0, but this machine has 'en_babi_rules 1.0.0'; "
        "install version 2.0.0, or pin '1.0.0' (features, and so results, depend on the version)"
    )
    for malformed in ("==1.0.0", "en_babi_rules=="):
        with pytest.raises(ConcurError, match="a pinned pipeline reads 'en_core_web_sm==2.2.5'"):
            load_tagger(malformed, "drqa", tmp_path / "cache")


def test_no_matching_cache_leaves_the_missing_pipeline_error(tmp_path):
    AnnotationCache(tmp_path / "cache", "en_other_rules 1.0.0")
    legacy = tmp_path / "cache" / "annotations" / "en_babi_rules-0.9.sqlite"  # records no pipeline name
    with sqlite3.connect(legacy) as connection:
        connection.execute("CREATE TABLE annotations (key BLOB PRIMARY KEY, value TEXT NOT NULL)")
    connection.close()
    with pytest.raises(ModelUnavailableError, match="python -m spacy download en_babi_rules"):
        load_tagger("en_babi_rules", "drqa", tmp_path / "cache")


def test_only_texts_missing_from_the_cache_are_tagged(tmp_path):
    pipeline = str(build_babi_pipeline(tmp_path / "babi_rules"))
    tagger = load_tagger(pipeline, "drqa", tmp_path / "cache")
    tagger.annotate([(["Where", "is", "John", "?"], [T, T, F, F])])
    tagged_texts = []
    original = tagger._tag

    def counting(sequences, batch_size):
        tagged_texts.extend(words for words, _ in sequences)
        return original(sequences, batch_size)

    tagger._tag = counting
    annotations = tagger.annotate([(["Where", "is", "John", "?"], [T, T, F, F]), (["bedroom"], [F]), (["bedroom"], [F])])
    assert tagged_texts == [["bedroom"]]
    assert annotations[0].ner == ("", "", "PERSON", "")
    assert annotations[1] == annotations[2] == Annotation(("NN",), ("LOC",), ("bedroom",))


def test_an_unreadable_cache_is_named(tmp_path):
    pipeline = str(build_babi_pipeline(tmp_path / "babi_rules"))
    broken = tmp_path / "cache" / "annotations" / "en_babi_rules-1.0.0.sqlite"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"this is not a database, it is a text file of sufficient length to be read " * 20)
    with pytest.raises(ConcurError, match=re.escape(str(broken))):
        load_tagger(pipeline, "drqa", tmp_path / "cache")


def test_spacy2_pronoun_lemmas_become_the_word(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("attribute_ruler").add([[{"LOWER": "she"}]], {"TAG": "PRP", "LEMMA": "-PRON-"})
    nlp.to_disk(tmp_path / "pron")
    [annotation] = Tagger(str(tmp_path / "pron")).annotate([(["She", "left"], [T, F])])
    assert annotation.lemma == ("she", "left")

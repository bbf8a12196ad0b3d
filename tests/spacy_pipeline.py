"""A real, rule-based spaCy English pipeline covering bAbI task 1, built offline.

spaCy's trained English pipelines (en_core_web_sm, ...) are not on PyPI and cannot be installed
here, yet the approaches that use POS, NER and lemma features need a pipeline. This one is a
genuine spaCy pipeline saved with `nlp.to_disk` and loaded with `spacy.load`: an attribute_ruler
sets tags, coarse POS and lemmas for every word of bAbI task 1 (statements such as "Mary moved to
the bathroom." and questions "Where is Mary?"), and an entity_ruler marks people and places. It is
how tests exercise the with-features approaches without a download.
"""

from __future__ import annotations

from pathlib import Path

NAME = "babi_rules"
VERSION = "1.0.0"

PEOPLE = ("Mary", "John", "Sandra", "Daniel")
PLACES = ("bathroom", "hallway", "garden", "office", "bedroom", "kitchen")

# lower-cased word -> (Penn Treebank tag, Universal POS, lemma), as en_core_web_sm tags these words
WORDS: dict[str, tuple[str, str, str]] = {
    **{person.lower(): ("NNP", "PROPN", person) for person in PEOPLE},
    **{place: ("NN", "NOUN", place) for place in PLACES},
    "moved": ("VBD", "VERB", "move"),
    "went": ("VBD", "VERB", "go"),
    "journeyed": ("VBD", "VERB", "journey"),
    "travelled": ("VBD", "VERB", "travel"),
    "back": ("RB", "ADV", "back"),
    "to": ("IN", "ADP", "to"),
    "the": ("DT", "DET", "the"),
    "where": ("WRB", "ADV", "where"),
    "is": ("VBZ", "AUX", "be"),
    ".": (".", "PUNCT", "."),
    "?": (".", "PUNCT", "?"),
}


def build_babi_pipeline(directory: Path) -> Path:
    """Build the pipeline and save it to `directory` (created); returns the directory, a valid `spacy.load` argument."""
    import spacy

    nlp = spacy.blank("en")
    nlp.meta["name"], nlp.meta["version"] = NAME, VERSION
    ruler = nlp.add_pipe("attribute_ruler")
    for word, (tag, pos, lemma) in WORDS.items():
        ruler.add([[{"LOWER": word}]], {"TAG": tag, "POS": pos, "LEMMA": lemma})
    entities = nlp.add_pipe("entity_ruler")
    entities.add_patterns(
        [{"label": "PERSON", "pattern": [{"LOWER": person.lower()}]} for person in PEOPLE]
        + [{"label": "LOC", "pattern": [{"LOWER": place}]} for place in PLACES]
    )
    nlp.to_disk(directory)
    return directory

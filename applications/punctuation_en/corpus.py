"""The training text of `punctuation_en`: nine kinds of English, split by document.

Each source is a loader of `keras_rnnattn.datasets` that returns documents
already split by document (`split_documents`, or the loader's canonical
split). A split of a source is its documents joined by newlines, read as
running text by `punctuation_tags`; large sources are capped so that no
style dominates the training words (the Bible is one part, not the whole).
The dialogue and FAQ sources bring the questions the others lack
(`question_share.py` counts them).
"""

from keras_rnnattn.datasets import (
    load_chatterbot_dialogues,
    load_debian_faq,
    load_fortunes,
    load_lee_news,
    load_libreoffice_help_en,
    load_movie_snippets,
    load_nyt_editorials,
    load_python_docs,
    load_world_english_bible,
)
from keras_rnnattn.text import punctuation_tags

# name: (loader of a split's documents, what it is, licence)
SOURCES = {
    "python_docs": (
        load_python_docs,
        "technical documentation: Python 3.11's tutorial, HOWTOs, FAQ, guides "
        "and language reference (python3.11-doc)",
        "PSF-2.0",
    ),
    "libreoffice_help": (
        load_libreoffice_help_en,
        "help pages: instructions and explanations of the English LibreOffice "
        "help (libreoffice-help-en-us)",
        "MPL-2.0",
    ),
    "fortunes": (
        load_fortunes,
        "short everyday text: quotations, jokes and dialogue (Debian fortunes)",
        "BSD-3-Clause",
    ),
    "lee_news": (
        load_lee_news,
        "news: Australian wire reports (gensim's lee_background.cor)",
        "LGPL-2.1 (gensim)",
    ),
    "nyt_editorials": (
        load_nyt_editorials,
        "opinion and news prose: NYT editorial snippets (vaderSentiment sdist)",
        "MIT",
    ),
    "movie_reviews": (
        lambda split: load_movie_snippets(split)[0],
        "reviews: one-sentence movie review snippets (vaderSentiment sdist)",
        "MIT",
    ),
    "bible": (
        lambda split: [load_world_english_bible(split)],
        "the World English Bible (sword-text-web)",
        "public domain",
    ),
    "chatterbot": (
        load_chatterbot_dialogues,
        "dialogue: a chat bot's small talk, trivia questions and answers "
        "(chatterbot-corpus wheel)",
        "BSD-3-Clause",
    ),
    "debian_faq": (
        load_debian_faq,
        "questions and answers: the Debian GNU/Linux FAQ (debian-faq)",
        "the Debian FAQ's permission notice (copies and modified versions "
        "under an identical notice)",
    ),
}
# The most training words taken from one source (its first documents).
MAX_TRAIN_WORDS = 400_000


def tagged_source(name, split, max_words=None):
    """`(words, tags)` of one split of one source (`punctuation_tags`)."""
    documents = SOURCES[name][0](split)
    words, tags = punctuation_tags("\n".join(documents))
    if max_words is not None:
        words, tags = words[:max_words], tags[:max_words]
    return words, tags


def tagged_splits(names=tuple(SOURCES), quick=False, max_train_words=MAX_TRAIN_WORDS):
    """`{split: {source: (words, tags)}}` of the training, validation and test splits."""
    cap = 3000 if quick else max_train_words
    held_out_cap = 500 if quick else None
    return {
        "train": {n: tagged_source(n, "train", cap) for n in names},
        "validation": {n: tagged_source(n, "validation", held_out_cap) for n in names},
        "test": {n: tagged_source(n, "test", held_out_cap) for n in names},
    }

"""New York Times editorial snippets of Hutto and Gilbert (2014; MIT), by article."""

from keras_rnnattn.datasets.documents import split_documents
from keras_rnnattn.datasets.movie_snippets import (
    locate_vader_file,
    read_vader_file,
)
from keras_rnnattn.datasets.sources import cached_rows, find_source

FILE_NAME = "nytEditorialSnippets_GroundTruth.txt"


def load_nyt_editorials(split="train", path=None):
    """Opinion-page news prose: the sentences of 5,190 NYT editorial snippets.

    `nytEditorialSnippets_GroundTruth.txt` inside the vaderSentiment 3.3.2
    sdist (MIT; Hutto and Gilbert, 2014): lines `<article>_<sentence> \\t
    score \\t text`. The sentences of one article are joined in order into
    one document (500 articles, 5,190 sentences); split by article with
    `split_documents`.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of the sdist, of `hutto_ICWSM_2014.tar.gz` or of
            the text file. By default `cache_dir()/vaderSentiment-3.3.2.tar.gz`
            (`fetch("movie_snippets")`).

    Returns:
        list of str, one per article.

    Raises:
        DatasetNotFoundError: the sdist is not there; the message gives the
            `pip download` command that puts it there.

    Example:

    >>> articles = load_nyt_editorials("test")  # doctest: +SKIP
    """
    source = locate_vader_file(find_source("movie_snippets", path), FILE_NAME)

    def parse():
        rows = []
        for line in read_vader_file(source, FILE_NAME).splitlines():
            fields = line.rstrip("\r").split("\t")
            if len(fields) == 3 and fields[2].strip():
                rows.append((fields[0].split("_")[0], " ".join(fields[2].split())))
        return rows

    articles = {}
    for key, sentence in cached_rows("nyt_editorials", [source], parse):
        articles.setdefault(key, []).append(sentence)
    keyed = [(key, " ".join(sentences)) for key, sentences in articles.items()]
    return split_documents(keyed, split)

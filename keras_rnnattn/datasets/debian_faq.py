"""The Debian GNU/Linux FAQ (Debian's `debian-faq`): questions and their answers.

The FAQ (© 1996-2021 Software in the Public Interest) may be copied and
distributed, modified versions included, under the terms of its permission
notice (`/usr/share/doc/debian-faq/copyright`: verbatim copies keep the
notice; modified versions are distributed under an identical notice). It is
read from the installed package, never shipped.
"""

import html.parser
import re
from pathlib import Path

from keras_rnnattn.datasets.documents import split_documents
from keras_rnnattn.datasets.sources import cached_rows, find_source

_NUMBER_RE = re.compile(r"^\d+(\.\d+)*\.\s+")
_SENTENCE_END = ".?!"


class _FaqPage(html.parser.HTMLParser):
    """Collects `(anchor, heading, paragraphs)` of each section of one page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections = []
        self._skip = 0  # depth inside the table of contents, navigation or <pre>
        self._divs = []  # for each open <div>: whether it is skipped
        self._heading = None  # the text of the open section heading
        self._paragraph = None  # the text of the open paragraph

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div":
            skipped = attrs.get("class") in ("toc", "navheader", "navfooter")
            self._divs.append(skipped)
            self._skip += skipped
        elif tag == "pre":
            self._skip += 1
        elif tag in ("h2", "h3", "h4") and attrs.get("class") == "title":
            self.sections.append([None, [], []])
            self._heading = []
        elif tag == "a" and self._heading is not None and "id" in attrs:
            self.sections[-1][0] = attrs["id"]
        elif tag == "p" and not self._skip and self.sections:
            self._paragraph = []

    def handle_endtag(self, tag):
        if tag == "div" and self._divs:
            self._skip -= self._divs.pop()
        elif tag == "pre":
            self._skip -= 1
        elif tag in ("h2", "h3", "h4") and self._heading is not None:
            self.sections[-1][1] = " ".join("".join(self._heading).split())
            self._heading = None
        elif tag == "p" and self._paragraph is not None:
            text = " ".join("".join(self._paragraph).split())
            if text:
                self.sections[-1][2].append(text)
            self._paragraph = None

    def handle_data(self, data):
        if self._heading is not None:
            self._heading.append(data)
        elif self._paragraph is not None and not self._skip:
            self._paragraph.append(data)


def parse_faq_page(markup):
    """The question-and-answer sections of one FAQ page (DocBook HTML).

    A section starts at an `<h2>`, `<h3>` or `<h4>` title; its text is the
    title without its number ("1.2. What is Debian?" gives "What is
    Debian?"), kept only where it ends in `.`, `?` or `!` (questions, not
    labels), then its paragraphs (`<p>`, tags dropped, white space
    collapsed), one a line. The table of contents, navigation and `<pre>`
    blocks (commands, file listings) are left out.

    Args:
        markup: str, the HTML of one page.

    Returns:
        list of `(anchor, text)` tuples of str, in page order; sections
        without text are left out.

    Example:

    >>> parse_faq_page('<h2 class="title"><a id="q"></a>1.1. What is it?</h2>'
    ...                '<p>A <em>free</em>\\n system.</p><pre>ls -l</pre>')
    [('q', 'What is it?\\nA free system.')]
    """
    page = _FaqPage()
    page.feed(markup)
    page.close()
    out = []
    for anchor, heading, paragraphs in page.sections:
        question = _NUMBER_RE.sub("", heading or "")
        lines = ([question] if question[-1:] in _SENTENCE_END else []) + paragraphs
        if lines:
            out.append((anchor or "", "\n".join(lines)))
    return out


def _parse(files):
    rows = []
    for path in files:
        for anchor, text in parse_faq_page(path.read_text(encoding="utf-8")):
            rows.append((f"{path.name.split('.')[0]}#{anchor}", text))
    return rows


def load_debian_faq(split="train", path=None):
    """The Debian FAQ, one document per question and its answer.

    The chapter pages of `/usr/share/doc/debian/FAQ/*.en.html` (`debian-faq`
    11.1; the title page `index` is left out) read with `parse_faq_page`:
    147 sections with text (most a question and its answer, some a topic
    under one), 21,873 words of questions, explanations and instructions.
    Split by section with `split_documents`, keyed `<chapter>#<anchor>`.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of the FAQ folder. By default
            `/usr/share/doc/debian/FAQ`, then the cache (`fetch("debian_faq")`).

    Returns:
        list of str, one per question.

    Raises:
        DatasetNotFoundError: the package is missing; the message names the
            command that installs it.

    Example:

    >>> answers = load_debian_faq("test")  # doctest: +SKIP
    """
    root = Path(find_source("debian_faq", path))
    files = [p for p in sorted(root.glob("*.en.html")) if p.name != "index.en.html"]
    rows = cached_rows("debian_faq", files, lambda: _parse(files))
    return split_documents(rows, split)

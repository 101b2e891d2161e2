"""The English dialogues of the ChatterBot corpus (BSD-3-Clause): questions and replies.

`chatterbot-corpus` 1.3.3 (PyPI wheel, Gunther Cox, BSD-3-Clause) holds short
conversations with a chat bot in YAML (`chatterbot_corpus/data/english/*.yml`):
small talk, trivia questions, jokes, tech support. The files are read with a
small parser of the YAML they use (`parse_chatterbot_yaml`), which never runs
code and needs no PyYAML.
"""

import re
import zipfile
from pathlib import Path

from keras_rnnattn.datasets.documents import split_documents
from keras_rnnattn.datasets.sources import cached_rows, find_source

MEMBER_PREFIX = "chatterbot_corpus/data/english/"
_ITEM_RE = re.compile(r"^( *)- (- )?(.*)$")
_KEY_RE = re.compile(r"^[A-Za-z_]+:\s*$")
_DOUBLE_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", " ": " "}
# An utterance kept as prose: a capital, digit or quote first, `.`, `?` or `!`
# last (a closing quote or bracket may follow).
_SENTENCE_RE = re.compile(r"^[\"'“(A-Z0-9].*[.?!][\"'”)]?$", re.S)


def _scalar(raw):
    """The value of one sequence item's text (its lines, indentation removed)."""
    head = raw[0].strip()
    if head in ("|", "|-", "|+", ">", ">-", ">+"):
        return "\n".join(raw[1:])
    text = " ".join(line.strip() for line in raw)
    if len(text) > 1 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) > 1 and text[0] == text[-1] == '"':
        return re.sub(r"\\(.)", lambda m: _DOUBLE_ESCAPES.get(m[1], m[0]), text[1:-1])
    return re.sub(r"\s+#.*$", "", text)


def parse_chatterbot_yaml(text):
    """The conversations of one ChatterBot corpus file, each a list of str.

    Reads the YAML subset the corpus uses: top-level keys, a `conversations`
    list of lists written `- - first line` / `  - next line`, plain, quoted
    and block (`|`) scalars that may continue on more-indented lines. White
    space inside a line is not normalized here.

    Args:
        text: str, the file.

    Returns:
        list of lists of str.

    Example:

    >>> parse_chatterbot_yaml("categories:\\n- greetings\\nconversations:\\n"
    ...                       "- - Hello, how are you?\\n  - 'I''m fine.'\\n")
    [['Hello, how are you?', "I'm fine."]]
    """
    conversations, key, item, item_indent = [], None, None, 0

    def close():
        if item is not None:
            conversations[-1].append(_scalar(item))

    for line in text.splitlines():
        if item is not None and (
            not line.strip() or len(line) - len(line.lstrip(" ")) > item_indent
        ):
            item.append(line[item_indent + 2 :] if line.strip() else "")
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if _KEY_RE.match(line):
            close()
            key, item = line.split(":")[0], None
            continue
        match = _ITEM_RE.match(line)
        if key != "conversations" or match is None:
            close()
            item = None
            continue
        close()
        indent, new, rest = match.groups()
        if new or not indent:  # `- text` at the top: a conversation of one line
            conversations.append([])
        item, item_indent = [rest], len(indent) + (2 if new else 0)
    close()
    return conversations


def _utterances(conversation):
    lines = [" ".join(str(x).split()) for x in conversation if "```" not in str(x)]
    return [x for x in lines if _SENTENCE_RE.match(x)]


def _read_files(source):
    source = Path(source)
    if source.suffix == ".whl":
        with zipfile.ZipFile(source) as wheel:
            names = sorted(
                n
                for n in wheel.namelist()
                if n.startswith(MEMBER_PREFIX) and n.endswith(".yml")
            )
            return [
                (Path(n).stem, wheel.read(n).decode("utf-8", "replace")) for n in names
            ]
    return [
        (p.stem, p.read_text(encoding="utf-8", errors="replace"))
        for p in sorted(source.glob("*.yml"))
    ]


def _parse(source):
    rows, seen = [], set()
    for name, text in _read_files(source):
        for i, conversation in enumerate(parse_chatterbot_yaml(text)):
            document = "\n".join(_utterances(conversation))
            if document and document not in seen:  # tech support repeats itself
                seen.add(document)
                rows.append((f"{name}/{i}", document))
    return rows


def load_chatterbot_dialogues(split="train", path=None):
    """The English conversations of the ChatterBot corpus, one document each.

    The 21 English files of `chatterbot-corpus` 1.3.3 (BSD-3-Clause) read
    with `parse_chatterbot_yaml`; a document is one conversation, its
    utterances on separate lines. Kept: the utterances that read as
    punctuated sentences (a capital, digit or quote first; `.`, `?` or `!`
    last; no code blocks), so questions written without their question mark
    ("What is your number") never teach a missing one; conversations left
    empty are dropped, each text once (tech support repeats its answers):
    622 conversations, 8,589 words, 460 question marks. Split by
    conversation with `split_documents`, keyed `<file>/<index>`.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of the wheel or of a folder of `.yml` files. By
            default the wheel in `cache_dir()` (`fetch("chatterbot_corpus")`).

    Returns:
        list of str, one per conversation.

    Raises:
        DatasetNotFoundError: the wheel is missing; the message names the
            command that downloads it.

    Example:

    >>> conversations = load_chatterbot_dialogues("test")  # doctest: +SKIP
    """
    source = find_source("chatterbot_corpus", path)
    files = [source] if source.is_file() else sorted(source.glob("*.yml"))
    rows = cached_rows("chatterbot_corpus", files, lambda: _parse(source))
    return split_documents(rows, split)

"""The question-rich loaders: parsers on small files, and the installed packages."""

import zipfile

import pytest

from keras_rnnattn.datasets import (
    DatasetNotFoundError,
    install_command,
    load_chatterbot_dialogues,
    load_debian_faq,
    parse_chatterbot_yaml,
    parse_faq_page,
    sources,
)
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

SPLITS = ("train", "validation", "test")
LOADERS = {
    "chatterbot_corpus": load_chatterbot_dialogues,
    "debian_faq": load_debian_faq,
}


def real_source(name):
    """The corpus as installed here, found before the tests isolate the cache."""
    try:
        return sources.find_source(name)
    except DatasetNotFoundError:
        return None


REAL = {name: real_source(name) for name in LOADERS}


def needs(name):
    return pytest.mark.skipif(
        REAL[name] is None, reason=f"corpus not installed: {install_command(name)}"
    )


YAML = """\
categories:
- greetings
conversations:
- - Good morning, how are you?
  - I am doing well, how about you?
  - 'I''m also good: "thanks".'
- - What is your number
  - "Forty-two, \\"of course\\"."
- - The Space Race was a competition between what two Cold War rivals,
    for supremacy in spaceflight capability?
  - The Soviet Union and the United States.
# a comment
- - Write a loop.
  - |
    Sure:

    ```
    for x in y: pass
    ```
- In a game of bingo, which number is "two little ducks"?
  - '22'
"""


def test_chatterbot_yaml_reads_quotes_continuations_and_block_scalars():
    conversations = parse_chatterbot_yaml(YAML)
    assert conversations[:3] == [
        [
            "Good morning, how are you?",
            "I am doing well, how about you?",
            'I\'m also good: "thanks".',
        ],
        ["What is your number", 'Forty-two, "of course".'],
        [
            "The Space Race was a competition between what two Cold War rivals, "
            "for supremacy in spaceflight capability?",
            "The Soviet Union and the United States.",
        ],
    ]
    assert conversations[3] == [
        "Write a loop.",
        "Sure:\n\n```\nfor x in y: pass\n```",
    ]
    # A malformed top-level item: one line, as YAML reads it.
    assert conversations[4] == [
        "In a game of bingo, which number is \"two little ducks\"? - '22'"
    ]
    assert len(conversations) == 5


def test_chatterbot_yaml_never_runs_code():
    text = "conversations:\n- - !!python/object/apply:os.system ['echo hi']\n"
    assert parse_chatterbot_yaml(text) == [
        ["!!python/object/apply:os.system ['echo hi']"]
    ]


def test_chatterbot_documents_keep_punctuated_utterances_of_wheel_or_folder(tmp_path):
    expected = [
        "Good morning, how are you?\nI am doing well, how about you?\n"
        'I\'m also good: "thanks".',
        'Forty-two, "of course".',  # the question without its mark is left out
        "The Space Race was a competition between what two Cold War rivals, "
        "for supremacy in spaceflight capability?\n"
        "The Soviet Union and the United States.",
        "Write a loop.",  # no code
    ]
    folder = tmp_path / "english"
    folder.mkdir()
    (folder / "greetings.yml").write_text(YAML, encoding="utf-8")
    (folder / "copy.yml").write_text(YAML, encoding="utf-8")  # each text once
    (folder / "notes.txt").write_text("- - Not a corpus file.\n", encoding="utf-8")
    assert load_chatterbot_dialogues("all", path=folder) == expected
    wheel = tmp_path / "chatterbot_corpus-1.3.3-py2.py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("chatterbot_corpus/data/english/greetings.yml", YAML)
        z.writestr("chatterbot_corpus/data/german/greetings.yml", "- - Hallo.\n")
    assert load_chatterbot_dialogues("all", path=wheel) == expected
    parts = [load_chatterbot_dialogues(s, path=wheel) for s in SPLITS]
    assert sorted(sum(parts, [])) == sorted(expected)


FAQ_PAGE = """\
<html><body><div class="navheader"><p>Prev</p></div>
<div class="chapter"><h1 class="title"><a id="ch"></a>Chapter 1. Basics</h1>
<div class="toc"><p><strong>Table of Contents</strong></p></div>
<div class="section"><h2 class="title"><a id="what"></a>1.1. What is
 <em>Debian</em>?</h2><p>An operating
 system &amp; a project.</p><pre>
<p>apt-get install x</p></pre><div class="itemizedlist"><ul><li><p>
<strong>free</strong>: to use.</p></li></ul></div></div>
<div class="section"><h3 class="title"><a id="feedback"></a>1.1.1. Feedback</h3>
<p>Send mail.</p></div>
<div class="section"><h2 class="title"><a id="empty"></a>1.2. Empty</h2></div>
</div><div class="navfooter"><p>Next</p></div></body></html>
"""


def test_faq_page_sections_are_questions_with_their_paragraphs():
    assert parse_faq_page(FAQ_PAGE) == [
        ("what", "What is Debian?\nAn operating system & a project.\nfree: to use."),
        ("feedback", "Send mail."),  # a heading that is no sentence is left out
    ]


def test_debian_faq_reads_the_chapter_pages_but_the_title_page(tmp_path):
    root = tmp_path / "FAQ"
    root.mkdir()
    (root / "basics.en.html").write_text(FAQ_PAGE, encoding="utf-8")
    (root / "basics.html").symlink_to("basics.en.html")
    (root / "index.en.html").write_text(FAQ_PAGE.replace("Send", "Mail"))
    assert load_debian_faq("all", path=root) == [
        "What is Debian?\nAn operating system & a project.\nfree: to use.",
        "Send mail.",
    ]


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_a_missing_question_corpus_names_the_command_that_installs_it(name):
    command = install_command(name)
    assert command.startswith(
        {"chatterbot_corpus": "pip download --no-deps chatterbot-corpus==1.3.3 -d ",
         "debian_faq": "apt-get install debian-faq"}[name]
    )  # fmt: skip
    with pytest.raises(DatasetNotFoundError, match=command.split(" -d ")[0]):
        LOADERS[name]("test")


@needs("chatterbot_corpus")
def test_installed_chatterbot_counts_and_split_by_conversation():
    docs = load_chatterbot_dialogues("all", path=REAL["chatterbot_corpus"])
    assert len(docs) == 622
    assert sum(len(d.split()) for d in docs) == 8589
    assert sum(d.count("?") for d in docs) == 460
    parts = [
        load_chatterbot_dialogues(s, path=REAL["chatterbot_corpus"]) for s in SPLITS
    ]
    assert [len(p) for p in parts] == [561, 23, 38]
    assert parts[2][0] == "Robots rule."
    assert set(parts[2]).isdisjoint(parts[0])


@needs("chatterbot_corpus")
def test_installed_chatterbot_yaml_reads_as_pyyaml_does():
    yaml = pytest.importorskip("yaml")
    with zipfile.ZipFile(REAL["chatterbot_corpus"]) as wheel:
        names = [n for n in wheel.namelist() if "/data/english/" in n]
        assert len(names) == 21
        for name in names:
            text = wheel.read(name).decode("utf-8")
            expected = yaml.safe_load(text)["conversations"]
            expected = [[c] if isinstance(c, str) else c for c in expected]
            got = parse_chatterbot_yaml(text)
            assert [[" ".join(str(x).split()) for x in c] for c in expected] == [
                [" ".join(x.split()) for x in c] for c in got
            ], name


@needs("debian_faq")
def test_installed_debian_faq_counts_and_split_by_section():
    docs = load_debian_faq("all", path=REAL["debian_faq"])
    assert len(docs) == 147
    assert sum(len(d.split()) for d in docs) == 21_873
    assert sum(d.count("?") for d in docs) == 167
    parts = [load_debian_faq(s, path=REAL["debian_faq"]) for s in SPLITS]
    assert [len(p) for p in parts] == [134, 4, 9]
    assert parts[2][0].startswith("What is this FAQ?\nThis document gives")
    assert set(parts[2]).isdisjoint(parts[0])

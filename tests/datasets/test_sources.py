"""Tests of the cache folder, install commands and `fetch` (with a stand-in runner)."""

import sys
from pathlib import Path

import pytest

from keras_rnnattn.datasets import cache_dir, fetch, install_command, sources
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_RNNATTN_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("KERAS_RNNATTN_CACHE")
    assert cache_dir() == Path.home() / ".cache" / "keras_rnnattn"


def test_install_commands():
    assert install_command("ding_de_en") == "apt-get install trans-de-en"
    assert install_command("wordnet_topics") == "apt-get install wordnet-base"
    assert install_command("world_english_bible") == "apt-get install sword-text-web"
    assert install_command("movie_snippets").startswith(
        "pip download --no-deps --no-binary :all: vaderSentiment==3.3.2 -d "
    )
    with pytest.raises(ValueError, match="name='imdb'"):
        install_command("imdb")


class FakeRunner:
    """Stands in for subprocess.run: records commands and makes their files."""

    def __init__(self):
        self.commands = []

    def __call__(self, command, check, cwd=None):
        assert check is True
        self.commands.append(command)
        if command[:2] == ["apt-get", "download"]:
            (Path(cwd) / f"{command[2]}_1.0-1_all.deb").write_bytes(b"")
        elif command[:2] == ["dpkg-deb", "-x"]:
            target = Path(command[3]) / "usr/share/trans/de-en"
            target.parent.mkdir(parents=True)
            target.write_text("x :: y\n")
        elif command[2:4] == ["pip", "download"]:
            (Path(command[-1]) / "vaderSentiment-3.3.2.tar.gz").write_bytes(b"")


def test_fetch_apt_package_into_the_cache(isolated_sources):
    runner = FakeRunner()
    path = fetch("ding_de_en", run=runner)
    cache = isolated_sources / "cache"
    assert path == cache / "trans-de-en" / "usr/share/trans/de-en"
    assert runner.commands[0] == ["apt-get", "download", "trans-de-en"]
    assert runner.commands[1][:2] == ["dpkg-deb", "-x"]
    assert runner.commands[1][2].endswith("trans-de-en_1.0-1_all.deb")
    assert runner.commands[1][3] == str(cache / "trans-de-en")
    # The loaders find the unpacked package in the cache afterwards.
    assert sources.find_source("ding_de_en") == path


def test_fetch_pip_sdist_into_the_cache(isolated_sources):
    runner = FakeRunner()
    path = fetch("movie_snippets", run=runner)
    cache = isolated_sources / "cache"
    assert path == cache / "vaderSentiment-3.3.2.tar.gz"
    assert runner.commands == [
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        + ["vaderSentiment==3.3.2", "-d", str(cache)]
    ]

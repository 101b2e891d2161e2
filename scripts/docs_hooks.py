"""MkDocs hooks: the repository's other Markdown files as pages of the site.

The model cards (`applications/<name>/README.md`), the preset format
(`saved_models/README.md`) and the benchmark pages (`benchmarks/README.md`,
`RESULTS.md` and their plots) live beside the code they describe. This hook
adds them to the site as they are, without copies in docs/ (`PAGES`, `IMAGES`),
and rewrites every relative link of every page, written for GitHub from the
file's place in the repository, to the page or image it names on the site.
A link to a repository file that is not on the site is logged as a warning,
which `mkdocs build --strict` turns into a failed build.

A page of docs/ may also hold `<!-- include: preset table -->`, which is
replaced by the README's preset table (the one that starts `| preset |`), so
that the table is written once. A model card the nav's "Presets" section does not
name is added to it (`on_config`), so a new recipe's card needs no edit here.
"""

import glob
import logging
import os
import posixpath
import re

from mkdocs.structure.files import File

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
log = logging.getLogger("mkdocs.hooks.docs_hooks")


def _pages():
    """`{repository path: site path}` of the Markdown files added as pages."""
    pages = {
        "saved_models/README.md": "presets/format.md",
        "benchmarks/README.md": "benchmarks/scripts.md",
        "benchmarks/RESULTS.md": "benchmarks/results.md",
    }
    for card in sorted(glob.glob(os.path.join(REPO, "applications/*/README.md"))):
        name = os.path.basename(os.path.dirname(card))
        pages[f"applications/{name}/README.md"] = f"presets/{name}.md"
    return pages


def _images():
    """`{repository path: site path}` of the images those pages show."""
    images = {}
    for path in sorted(glob.glob(os.path.join(REPO, "benchmarks/*.png"))):
        images[f"benchmarks/{os.path.basename(path)}"] = (
            f"benchmarks/{os.path.basename(path)}"
        )
    for path in sorted(glob.glob(os.path.join(REPO, "applications/*/*.png"))):
        rel = os.path.relpath(path, REPO).replace(os.sep, "/")
        name = rel.split("/")[1]
        images[rel] = f"presets/{name}/{os.path.basename(path)}"
    return images


PAGES = _pages()
IMAGES = _images()
SITE = {**PAGES, **IMAGES}  # repository path -> site path
REPO_PATH = {site: repo for repo, site in PAGES.items()}  # site page -> repository

LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")
PRESET_TABLE = "<!-- include: preset table -->"


def on_config(config):
    """Lists in the nav's "Presets" section every model card it does not name."""
    for section in config["nav"] or ():
        if isinstance(section, dict) and "Presets" in section:
            entries = section["Presets"]
            listed = {
                page
                for entry in entries
                for page in (entry.values() if isinstance(entry, dict) else [entry])
            }
            cards = [site for site in PAGES.values() if site.startswith("presets/")]
            for site in sorted(set(cards) - listed):
                name = site[len("presets/") : -len(".md")]
                entries.insert(
                    len(entries) - 1, {name: site}
                )  # before "The preset folder"
    return config


def on_files(files, config):
    """Adds the pages and images of `PAGES` and `IMAGES` to the site."""
    for repo_path, site_path in SITE.items():
        if files.get_file_from_path(site_path) is not None:
            log.warning(f"docs/{site_path} hides {repo_path}: remove one of them")
            continue
        with open(os.path.join(REPO, repo_path), "rb") as file:
            content = file.read()
        if repo_path.endswith(".md"):
            content = content.decode("utf-8")
        files.append(File.generated(config, site_path, content=content))
    return files


def _readme_preset_table():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as file:
        lines = file.read().split("\n")
    start = next(
        (i for i, line in enumerate(lines) if line.startswith("| preset |")), None
    )
    if start is None:
        log.warning("README.md has no preset table (a line starting '| preset |')")
        return ""
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end])


def _rewrite(markdown, page_repo_path, page_site_path):
    """The links of one page, from repository paths to site paths."""
    page_dir = posixpath.dirname(page_repo_path)
    site_dir = posixpath.dirname(page_site_path)

    def one(match):
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return match.group(0)  # a URL, an anchor on this page, or a site path
        path, hash_, anchor = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(page_dir, path))
        if repo_path.startswith("docs/"):
            site_path = repo_path[len("docs/") :]
        elif repo_path in SITE:
            site_path = SITE[repo_path]
        else:
            log.warning(
                f"{page_repo_path} links to {target} ({repo_path}), which is not "
                "part of the site: link a page of docs/ or add the file to "
                "scripts/docs_hooks.py"
            )
            return match.group(0)
        new = posixpath.relpath(site_path, site_dir or ".")
        return match.group(1) + new + hash_ + anchor + match.group(3)

    return LINK.sub(one, markdown)


def on_page_markdown(markdown, page, config, files):
    """Rewrites the page's links (and fills in the preset table)."""
    site_path = page.file.src_uri
    repo_path = REPO_PATH.get(site_path, f"docs/{site_path}")
    if PRESET_TABLE in markdown:
        # The table's links are written from the top of the repository.
        table = LINK.sub(
            lambda m: (
                m.group(0)
                if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", m.group(2))
                else m.group(1)
                + posixpath.relpath(m.group(2), posixpath.dirname(repo_path))
                + m.group(3)
            ),
            _readme_preset_table(),
        )
        markdown = markdown.replace(PRESET_TABLE, table)
    # Code blocks keep their text: only the prose between them is rewritten.
    parts = re.split(r"(^```.*?^```)", markdown, flags=re.MULTILINE | re.DOTALL)
    return "".join(
        part if part.startswith("```") else _rewrite(part, repo_path, site_path)
        for part in parts
    )

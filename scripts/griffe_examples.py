"""A griffe extension for the API pages: `Example:` sections read as `Examples:`.

The docstrings follow Keras's style: an `Example:` heading, then doctests and
prose at the heading's own indentation. griffe's Google parser knows only
`Examples:` with an indented body, and would render the doctests as prose
(their `>>>` as quotes, their output as Markdown links).
"""

import re

import griffe

HEADING = re.compile(r"^(\s*)Examples?:\s*$")
SECTION = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")  # the next section's heading


def examples_section(text):
    """`text` with its `Example:` section written as griffe reads one."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        match = HEADING.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent = match.group(1)
        out.append(f"{indent}Examples:")
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1  # no blank line between the heading and its body
        while i < len(lines):
            line = lines[i]
            body = line[len(indent) :] if line.startswith(indent) else line
            if SECTION.match(body) and not body.startswith(" "):
                break
            out.append(f"{indent}    {body}" if line.strip() else "")
            i += 1
    return "\n".join(out)


class ExampleSections(griffe.Extension):
    """Rewrites each docstring's `Example:` section as an `Examples:` one."""

    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = examples_section(obj.docstring.value)

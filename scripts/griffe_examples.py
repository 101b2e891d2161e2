"""A griffe extension for the API pages: Keras's docstring sections, read right.

The docstrings follow Keras's style: an `Example:` heading, then doctests and
prose at the heading's own indentation. griffe's Google parser knows only
`Examples:` with an indented body, and would render the doctests as prose
(their `>>>` as quotes, their output as Markdown links). `Call arguments:`,
a section griffe shows as a block of text, becomes a list, one item per
argument.
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


CALL = re.compile(r"^(\s*)Call arguments:\s*$")


def call_arguments_list(text):
    """`text` with the arguments of its `Call arguments:` section as list items."""
    lines = text.split("\n")
    out = []
    inside = None  # the indentation of the section's arguments, once in it
    for line in lines:
        match = CALL.match(line)
        if match:
            out.append(line)
            inside = match.group(1) + "    "
            continue
        if inside is not None and line.strip():
            if not line.startswith(inside):
                inside = None  # the next section
            elif line.startswith(inside) and not line[len(inside)].isspace():
                line = f"{inside}- {line[len(inside) :]}"
        out.append(line)
    return "\n".join(out)


class ExampleSections(griffe.Extension):
    """Rewrites `Example:` as `Examples:` and lists the call arguments."""

    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            text = examples_section(obj.docstring.value)
            obj.docstring.value = call_arguments_list(text)

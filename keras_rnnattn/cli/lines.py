"""The `keras-rnnattn` command's text streams: batches of lines, one error per bad line.

A line the model refuses (too long, nothing it can read) must not end a stream
of thousands: the batch it sits in is run again line by line, the bad line gets
one error line on stderr and an empty output line (so that output line i still
answers input line i), and the run goes on. Imports no Keras.
"""

import sys

# What a refused line gives in the results of `map_lines`.
FAILED = object()


def progress(done, total, what):
    """A one-line progress counter on stderr, only when stderr is a terminal."""
    if total > 0 and sys.stderr.isatty():
        end = "\n" if done >= total else ""
        print(f"\r{what}: {done}/{total}", end=end, file=sys.stderr, flush=True)


def report_error(prog, command, where, error):
    """Prints `PROG COMMAND: error: WHERE: message` on stderr, on one line."""
    message = " ".join(str(error).split()) or type(error).__name__
    print(f"{prog} {command}: error: {where}: {message}", file=sys.stderr, flush=True)


def map_lines(texts, function, batch_size, what, on_error):
    """`function(batch) -> list` over the non-blank texts, in batches.

    Blank texts give `None`. A batch that raises a `ValueError` (bad input) is
    run again one text at a time; each text that still raises gives `FAILED`
    and a call `on_error(index, error)`. Other exceptions propagate.

    Args:
        texts: list of str, the input lines.
        function: callable, a list of str to a list of results.
        batch_size: int, texts per call.
        what: str, the progress counter's word (`"translated"`).
        on_error: callable `(index, error)`, called once per refused text.

    Returns:
        `(results, failed)`: one result (or None, or `FAILED`) per text, and the
        number of refused texts.

    Example:

    >>> def shout(batch):
    ...     if any(len(t) > 5 for t in batch):
    ...         raise ValueError("too long")
    ...     return [t.upper() for t in batch]
    >>> errors = []
    >>> results, failed = map_lines(
    ...     ["ab", "", "abcdefgh", "cd"], shout, 8, "shouted",
    ...     lambda i, e: errors.append((i, str(e))),
    ... )
    >>> results[0], results[1], results[2] is FAILED, results[3], failed, errors
    ('AB', None, True, 'CD', 1, [(2, 'too long')])
    """
    keep = [i for i, text in enumerate(texts) if text.strip()]
    results = [None] * len(texts)
    failed = 0
    for start in range(0, len(keep), batch_size):
        chunk = keep[start : start + batch_size]
        try:
            outputs = list(function([texts[i] for i in chunk]))
        except ValueError:
            outputs = []
            for i in chunk:
                try:
                    outputs.extend(function([texts[i]]))
                except ValueError as error:
                    on_error(i, error)
                    outputs.append(FAILED)
                    failed += 1
        for i, output in zip(chunk, outputs):
            results[i] = output
        if len(keep) > batch_size:
            progress(min(start + batch_size, len(keep)), len(keep), what)
    return results, failed

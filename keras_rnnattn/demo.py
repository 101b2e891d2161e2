"""The README's demo: translate with the shipped model and draw its attention.

`python -m keras_rnnattn.demo` (or `make demo`) loads the pretrained German→English
preset when `saved_models/` has it. Where it does not, it trains the best end-to-end
example that needs no data: a character-level translator from human-written dates
("Tuesday, 3 March 1987", "3/3/87") to ISO dates ("1987-03-03"), a task where
attention visibly aligns each output digit with its source characters. No network.
"""

import argparse
import datetime
import sys
import time

import numpy as np

MONTHS = [datetime.date(2000, m, 1).strftime("%B") for m in range(1, 13)]
DAYS = [datetime.date(2001, 1, d).strftime("%A") for d in range(1, 8)]
PRESET = "ding_de_en_bahdanau"
GERMAN = [
    "Das Kind entwickelt sich normal.",
    "Ich habe keine Zeit.",
    "Wo ist der Bahnhof?",
    "Er spricht sehr gut Englisch.",
]


def human_date(date, rng):
    """One of several ways people write `date`."""
    month, weekday = MONTHS[date.month - 1], DAYS[date.weekday()]
    formats = [
        f"{date.day} {month} {date.year}",
        f"{month} {date.day}, {date.year}",
        f"{weekday}, {date.day} {month} {date.year}",
        f"{date.day} {month[:3]} {date.year}",
        f"{date.day:02d}.{date.month:02d}.{date.year}",
        f"{date.month}/{date.day}/{date.year % 100:02d}",
        f"{month[:3].lower()} {date.day} {date.year}",
        f"{date.day}. {month} {date.year}",
    ]
    return formats[rng.integers(len(formats))]


def date_pairs(n, seed):
    rng = np.random.default_rng(seed)
    start = datetime.date(1950, 1, 1).toordinal()
    end = datetime.date(2049, 12, 31).toordinal()
    dates = [datetime.date.fromordinal(int(o)) for o in rng.integers(start, end, n)]
    return [(human_date(d, rng), d.isoformat()) for d in dates]


def train_date_translator(seconds_budget=90, seed=0):
    """Trains the date translator within a time budget; returns (model, test pairs)."""
    import keras

    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import CharTokenizer

    keras.utils.set_random_seed(seed)
    train, test = date_pairs(6000, seed), date_pairs(200, seed + 1)
    source = CharTokenizer().fit([s for s, _ in train])
    target = CharTokenizer().fit([t for _, t in train])
    model = Translator(
        source,
        target,
        embedding_dim=32,
        units=64,
        attention="bahdanau",
        max_source_length=40,
        max_target_length=12,
    )
    model.compile(optimizer=keras.optimizers.Adam(0.005))
    x, y = model.encode_pairs([s for s, _ in train], [t for _, t in train])
    start = time.time()
    for epoch in range(1, 30):
        history = model.fit(x, y, batch_size=64, epochs=1, verbose=0)
        accuracy = history.history[[k for k in history.history if "acc" in k][0]][-1]
        print(
            f"  epoch {epoch}: token accuracy {accuracy:.3f} "
            f"({time.time() - start:.0f}s)",
            flush=True,
        )
        if accuracy > 0.995 or time.time() - start > seconds_budget:
            break
    return model, test


def run_pretrained(model, out):
    from keras_rnnattn.presets import preset_length_penalty

    alpha = preset_length_penalty(PRESET)
    print(f"Pretrained preset {PRESET!r}: German → English\n")
    greedy = model.translate(GERMAN)
    beam = model.translate(GERMAN, beam_size=4, length_penalty=alpha)
    for src, g, b in zip(GERMAN, greedy, beam):
        print(f"  {src}\n    greedy: {g}\n    beam 4 (α = {alpha}): {b}")
    figure = _plot(model, GERMAN[0], beam_size=4, length_penalty=alpha)
    return figure, out


def run_trained_demo(out):
    print(
        "No pretrained preset is shipped yet: training a character-level date "
        "translator\n(BiGRU encoder, Bahdanau attention decoder) for at most 90 s.\n"
    )
    model, test = train_date_translator()
    sources = [s for s, _ in test]
    greedy = model.translate(sources)
    beam = model.translate(sources[:5], beam_size=4)
    exact = np.mean([g == t for g, (_, t) in zip(greedy, test)])
    print(f"\nExact match on {len(test)} unseen dates (greedy): {exact:.1%}\n")
    for (src, ref), g, b in zip(test[:5], greedy, beam):
        print(f"  {src!r:34} → greedy {g!r}, beam 4 {b!r} (reference {ref})")
    return _plot(model, sources[0]), out


def _plot(model, text, **kwargs):
    """The attention heat map of `text`, or None (and one line saying what to
    install) without matplotlib."""
    from keras_rnnattn._extras import installed, pip_extra

    if not installed("matplotlib"):
        print(f"\nAttention heat map skipped: it needs matplotlib, {pip_extra('plot')}")
        return None
    return model.plot_attention(text, **kwargs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", default="attention.png", help="where to write the heat map"
    )
    args = parser.parse_args(argv)
    from keras_rnnattn.cli.backend import CommandError, import_backend

    try:  # without TensorFlow's native log lines; a missing backend in one line
        import_backend()
    except CommandError as error:
        print(f"keras_rnnattn.demo: error: {error}", file=sys.stderr)
        return 1
    import keras

    # The backend is printed, not branched on.
    print(f"keras {keras.__version__}, backend {keras.backend.backend()}\n")
    model = None
    try:
        from keras_rnnattn.models import Translator

        if hasattr(Translator, "from_preset"):
            model = Translator.from_preset(PRESET)
    except (ValueError, FileNotFoundError, ImportError):
        model = None
    if model is not None:
        figure, out = run_pretrained(model, args.out)
    else:
        figure, out = run_trained_demo(args.out)
    if figure is not None:
        figure.savefig(out, dpi=120)
        print(f"\nAttention heat map written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

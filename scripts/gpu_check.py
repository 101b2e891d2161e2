"""The GPU check: numerics against CPU reference values, decoding, bfloat16, speed.

`scripts/gpu_check.sh` runs this once on a GPU machine; it runs on a CPU too (the
test suite runs it with `--quick`). One worker process per Keras backend:

1. Numerics. The attention layers, `AttentionDecoder` (a whole sequence, three
   `step` calls, the LSTM fast path) and one SGD train step of two small
   Translators, from the weights stored in `gpu_check_reference.npz` (made on
   CPU by `--make-reference`), against the outputs stored there: the largest
   absolute difference, at the backend's default float32 matmul precision
   (TF32 on NVIDIA GPUs under JAX) and at the highest.
2. Decoding. The shipped `ding_de_en_bahdanau` preset's greedy and beam-4 tokens
   for a few German sentences against the CPU's.
3. Mixed bfloat16. A Translator trained for a few steps under
   `mixed_bfloat16`: finite, falling losses and a translation.
4. Speed. The Translator's fast path (LSTM, Luong dot attention, no input
   feeding) and input-feeding path (GRU, Bahdanau attention) beside plain
   PyTorch models of the same architecture (`benchmarks/seq2seq_train.py`) on
   the same device, target tokens/s in alternating windows; and the preset's
   greedy and beam-4 sentences/s. The torch backend runs both again with
   `compile(jit_compile=True)` (Keras's `torch.compile` of the train step;
   the decoding loops' steps compiled the same way).

Exit status 1 if a numerics or decoding check failed (the table is written
either way).

    python scripts/gpu_check.py --backends jax torch --out gpu_check.md
    python scripts/gpu_check.py --quick --backends jax   # small sizes (CPU smoke)
    python scripts/gpu_check.py --make-reference         # on CPU: rewrite the file
"""

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# The checkout's package and benchmarks, whether or not the package is installed (on
# the GPU machine it is not).
sys.path[:0] = [REPO, os.path.join(REPO, "benchmarks")]

# The driver imports no Keras (it has no backend of its own): only the workers do.
from seq2seq_train import CONFIGS, keras_trainer, pytorch_trainer  # noqa: E402

REFERENCE = os.path.join(HERE, "gpu_check_reference.npz")
# float32 through a few layers, summed in another order on another device.
TOLERANCE = 1e-4
PRESET = "ding_de_en_bahdanau"  # the demo's
LONGER = [
    "Wir fahren morgen mit dem Zug nach Berlin.",
    "Das Wetter ist heute schön.",
    "Kannst du mir bitte helfen?",
    "Sie hat das Buch gestern gelesen.",
]
SPEED_SIZES = {
    "full": dict(batch=128, length=30, vocab=8000, embedding=512, units=1024),
    "quick": dict(batch=8, length=6, vocab=60, embedding=16, units=32),
}
SPEED_PATHS = CONFIGS  # seq2seq_train's fast and input-feeding Translators
PAIRS = [
    ("a small cat", "eine kleine Katze"),
    ("the red house", "das rote Haus"),
    ("we go home", "wir gehen heim"),
    ("a big dog sleeps", "ein großer Hund schläft"),
]


# The numerics cases: each builds its layer or model (under the seed `run_case`
# sets) and returns `(model, outputs)`, `outputs()` a dict of tensors.


def _inputs(seed, *shapes):
    import numpy as np

    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype("float32") for shape in shapes]


def _mask(lengths, width):
    import numpy as np

    return np.arange(width)[None, :] < np.asarray(lengths)[:, None]  # (B, S)


def attention_case(name):
    """An attention layer over masked memory: context and weights."""
    from keras_rnnattn.layers import BahdanauAttention, LuongAttention

    layers = {
        "bahdanau": lambda: BahdanauAttention(16),
        "bahdanau_normalized": lambda: BahdanauAttention(16, normalize=True),
        "luong_dot": lambda: LuongAttention("dot", scale=True),
        "luong_general": lambda: LuongAttention("general"),
        "luong_concat": lambda: LuongAttention("concat", units=16),
    }
    layer = layers[name]()
    query, value = _inputs(1, (3, 5, 12), (3, 7, 12))
    mask = _mask([7, 4, 1], 7)
    layer(query, value, value_mask=mask)  # builds

    def outputs():
        context, weights = layer(
            query, value, value_mask=mask, return_attention_scores=True
        )
        return {"context": context, "weights": weights}

    return layer, outputs


def decoder_case(name):
    """`AttentionDecoder` over a whole sequence, or three `step` calls."""
    from keras_rnnattn.layers import AttentionDecoder

    kwargs = {
        "decoder_scan": dict(cell="gru", attention="bahdanau"),
        "decoder_step": dict(cell="gru", attention="bahdanau"),
        "decoder_fast_lstm": dict(
            cell="lstm", attention="luong_general", input_feeding=False
        ),
    }[name]
    decoder = AttentionDecoder(units=16, **kwargs)
    inputs, memory = _inputs(2, (3, 4, 8), (3, 7, 10))
    mask = _mask([7, 4, 1], 7)
    decoder(inputs, memory, memory_mask=mask)  # builds

    def outputs():
        if name != "decoder_step":
            out, alignments = decoder(inputs, memory, memory_mask=mask)
            return {"outputs": out, "alignments": alignments}
        mem = decoder.prepare_memory(memory, mask)
        states = decoder.get_initial_state(3)
        result = {}
        for t in range(3):
            out, states, alignment = decoder.step(inputs[:, t], states, mem)
            result[f"outputs_{t}"], result[f"alignment_{t}"] = out, alignment
        for i, state in enumerate(states):
            result[f"state_{i}"] = state
        return result

    return decoder, outputs


def translator_case(name):
    """One SGD train step of a small Translator: loss, logits, new weights."""
    import keras

    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import CharTokenizer

    kwargs = {
        "translator_train_step": dict(),
        "translator_fast_lstm_train_step": dict(
            cell="lstm", attention="luong_dot", input_feeding=False, bidirectional=False
        ),
    }[name]
    source = CharTokenizer().fit([s for s, _ in PAIRS])
    target = CharTokenizer().fit([t for _, t in PAIRS])
    model = Translator(source, target, embedding_dim=8, units=16, **kwargs)
    x, y = model.encode_pairs([s for s, _ in PAIRS], [t for _, t in PAIRS])
    model(x)  # builds
    model.compile(optimizer=keras.optimizers.SGD(0.5), metrics=[])

    def outputs():
        logits = model(x)
        loss = model.train_on_batch(x, y)
        loss = loss[0] if isinstance(loss, (list, tuple)) else loss
        result = {"loss": loss, "logits": logits}
        for i, weight in enumerate(model.weights):
            result[f"weight_{i}"] = weight
        return result

    return model, outputs


CASES = {
    **{
        name: attention_case
        for name in (
            "bahdanau",
            "bahdanau_normalized",
            "luong_dot",
            "luong_general",
            "luong_concat",
        )
    },
    **{
        name: decoder_case
        for name in ("decoder_scan", "decoder_step", "decoder_fast_lstm")
    },
    "translator_train_step": translator_case,
    "translator_fast_lstm_train_step": translator_case,
}


def run_case(name, weights=None):
    """`(weights, outputs)` of a case as NumPy arrays, from `weights` if given."""
    import keras
    from keras import ops

    keras.utils.clear_session()
    keras.utils.set_random_seed(0)
    model, outputs = CASES[name](name)
    if weights is not None:
        model.set_weights(weights)
    start = [ops.convert_to_numpy(w) for w in model.weights]
    result = {k: ops.convert_to_numpy(v) for k, v in outputs().items()}
    return start, result


def make_reference(path):
    import numpy as np

    arrays = {}
    for name in CASES:
        weights, outputs = run_case(name)
        for i, weight in enumerate(weights):
            arrays[f"{name}/w/{i}"] = weight
        for key, value in outputs.items():
            arrays[f"{name}/out/{key}"] = value
    model = load_preset()
    greedy, beam = preset_tokens(model, german())
    arrays["preset/greedy"], arrays["preset/beam4"] = greedy, beam
    np.savez_compressed(path, **arrays)
    print(f"wrote {path}: {len(arrays)} arrays, {os.path.getsize(path)} bytes")


def check_numerics(reference, names=None):
    """The largest absolute difference of each case's outputs from the reference.

    Args:
        reference: the arrays of `gpu_check_reference.npz`.
        names: the cases to run; None runs all of `CASES`.

    Returns:
        A list of `{"check", "max_abs_diff", "ok"}` dicts.
    """
    import numpy as np

    rows = []
    for name in names or CASES:
        count = sum(1 for key in reference if key.startswith(f"{name}/w/"))
        weights = [reference[f"{name}/w/{i}"] for i in range(count)]
        _, outputs = run_case(name, weights)
        worst = 0.0
        for key, value in outputs.items():
            expected = reference[f"{name}/out/{key}"]
            if value.shape != expected.shape:
                raise ValueError(
                    f"{name}/{key}: shape {value.shape} against the reference's "
                    f"{expected.shape}"
                )
            diff = np.max(np.abs(value.astype("float64") - expected), initial=0.0)
            worst = max(worst, float(diff))
        rows.append({"check": name, "max_abs_diff": worst, "ok": worst <= TOLERANCE})
    return rows


# Decoding with the shipped preset.


def german():
    """The demo's sentences and a few longer ones."""
    from keras_rnnattn.demo import GERMAN

    return GERMAN + LONGER


def load_preset():
    from keras_rnnattn.models import Translator

    return Translator.from_preset(PRESET)


def preset_tokens(model, texts):
    """Greedy and beam-4 token ids up to the end token, padded with 0 to 64."""
    import numpy as np

    from keras_rnnattn.presets import preset_length_penalty

    source = model.encode_source(texts)
    greedy, _ = model.generate_ids(source)
    beam, _ = model.generate_ids(
        source, beam_size=4, length_penalty=preset_length_penalty(PRESET)
    )
    eos = model.target_tokenizer.eos_id

    def fixed(tokens):
        out = np.zeros((len(texts), 64), "int32")
        for i, row in enumerate(tokens.tolist()):
            row = row[: row.index(eos) + 1] if eos in row else row
            out[i, : len(row)] = row[:64]
        return out

    return fixed(greedy), fixed(beam)


def check_decoding(model, reference, quick):
    texts = german()[:2] if quick else german()
    greedy, beam = preset_tokens(model, texts)
    rows = []
    for name, got in (("greedy", greedy), ("beam4", beam)):
        expected = reference[f"preset/{name}"][: len(texts)]
        same = int((got == expected).all(axis=1).sum())
        rows.append(
            {"check": f"{PRESET} {name}", "same": same, "of": len(texts)}
            | {"ok": same == len(texts)}
        )
    return rows


def preset_throughput(model, quick):
    """Greedy and beam-4 sentences/s of `translate` on a batch, after a warm-up."""
    from keras_rnnattn.presets import preset_length_penalty

    texts = (german() * (1 if quick else 16))[: 4 if quick else 128]
    alpha = preset_length_penalty(PRESET)
    result = {"sentences": len(texts)}
    for name, kwargs in (
        ("greedy", {}),
        ("beam4", dict(beam_size=4, length_penalty=alpha)),
    ):
        model.translate(texts, **kwargs)  # compiles
        start = time.perf_counter()
        model.translate(texts, **kwargs)
        result[name] = len(texts) / (time.perf_counter() - start)
    return result


# Mixed bfloat16.


def check_bfloat16(quick):
    import keras
    import numpy as np

    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import CharTokenizer

    keras.utils.clear_session()
    keras.utils.set_random_seed(0)
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        source = CharTokenizer().fit([s for s, _ in PAIRS])
        target = CharTokenizer().fit([t for _, t in PAIRS])
        model = Translator(source, target, embedding_dim=16, units=32 if quick else 256)
        model.compile(optimizer=keras.optimizers.Adam(0.01), metrics=[])
        x, y = model.encode_pairs([s for s, _ in PAIRS], [t for _, t in PAIRS])
        steps = 10 if quick else 30
        losses = [float(np.asarray(model.train_on_batch(x, y))) for _ in range(steps)]
        translation = model.translate(PAIRS[0][0])
    finally:
        keras.config.set_dtype_policy("float32")
    finite = bool(np.all(np.isfinite(losses)))
    return {
        "check": "mixed_bfloat16 Translator",
        "steps": steps,
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "translation": translation,
        "ok": finite and losses[-1] < losses[0] and isinstance(translation, str),
    }


# Speed beside plain PyTorch.


def jit_throughput(model, quick, captured=False):
    """`preset_throughput` with the model compiled with `jit_compile=True`
    (and, where `captured`, its decoding loops' blocks replayed from CUDA
    graphs: `torch_options(cuda_graphs=True)`)."""
    with compiled_decoding(model, captured):
        return preset_throughput(model, quick)


@contextlib.contextmanager
def compiled_decoding(model, captured):
    from keras_rnnattn._backend import torch_options

    model.compile(jit_compile=True)
    try:
        with torch_options(cuda_graphs=captured):
            yield
    finally:
        model.compile(jit_compile=False)


def check_captured_decoding(model, reference, quick):
    """Torch: the compiled decoding loops with their blocks of steps replayed
    from CUDA graphs give the tokens of the compiled loops without them (the
    same kernels), and those of the CPU."""
    texts = german()[:2] if quick else german()
    with compiled_decoding(model, False):
        stepped = preset_tokens(model, texts)
    with compiled_decoding(model, True):
        captured = preset_tokens(model, texts)
    rows = []
    for name, got, want in zip(("greedy", "beam4"), captured, stepped):
        expected = reference[f"preset/{name}"][: len(texts)]
        same = int((got == want).all(axis=1).sum())
        rows.append(
            {
                "check": f"{PRESET} {name}",
                "same": same,
                "of": len(texts),
                "same_as_cpu": int((got == expected).all(axis=1).sum()),
                "ok": same == len(texts),
            }
        )
    return rows


def check_speed(quick, steps, windows, jit_compile=False, as_operator=False):
    """Training speed rows; `as_operator`: torch's large recurrent layers as
    operators of the compiled step's graph rather than at graph breaks."""
    from keras_rnnattn._backend import torch_options

    if as_operator:
        from keras_rnnattn._backend.experimental import torch_rnn_op

        torch_rnn_op._operators()  # defined before the step is traced
    with torch_options(rnn_operator=as_operator):
        return speed_rows(quick, steps, windows, jit_compile, as_operator)


def speed_rows(quick, steps, windows, jit_compile, as_operator):
    """`check_speed`'s rows under the torch options in force."""
    import keras
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    size = SPEED_SIZES["quick" if quick else "full"]
    rows = []
    for path, config in SPEED_PATHS.items():
        keras.utils.clear_session()
        trainers = {
            "keras": keras_trainer(
                config, size, steps, True if jit_compile else "auto"
            ),
            "pytorch": pytorch_trainer(config, size, steps, device=device),
        }
        seconds = {name: [] for name in trainers}
        for window in range(windows + 1):  # the first window compiles, warms up
            for name, trainer in trainers.items():
                start = time.perf_counter()
                trainer.train()
                if window:
                    seconds[name].append(time.perf_counter() - start)
        tokens = steps * size["batch"] * size["length"]
        rate = {
            name: tokens / sorted(values)[len(values) // 2]
            for name, values in seconds.items()
        }
        rows.append(
            {
                "path": path,
                "size": size,
                "torch_device": device,
                "translator": rate["keras"],
                "pytorch": rate["pytorch"],
                "ratio": rate["keras"] / rate["pytorch"],
                "params": trainers["keras"].params,
                "jit_compile": bool(jit_compile),
                "as_operator": as_operator,
            }
        )
        del trainers
    return rows


# One backend's worker.


def check_fused_rnn():
    """Torch: the fused GRU/LSTM operator of compiled train steps on the device
    (`torch_rnn_op.fused_rnn`, compiled with inductor, no graph break) against
    eager `torch.gru`/`torch.lstm` there: the largest absolute difference of
    the output and of every gradient, at the highest precision."""
    import numpy as np
    import torch

    from keras_rnnattn._backend.experimental.torch_rnn_op import _operators, fused_rnn

    _operators()  # defined at import on a GPU; here for the CPU fallback

    device = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator().manual_seed(0)
    rows = []
    for kind in ("lstm", "gru"):
        gates = (4 if kind == "lstm" else 3) * 32
        shapes = [(8, 12, 16)] + [(1, 8, 32)] * (2 if kind == "lstm" else 1)
        shapes += [(gates, 16), (gates, 32), (gates,), (gates,)]
        values = [(torch.randn(s, generator=g) / 2).to(device) for s in shapes]
        n = len(shapes) - 5  # states

        def eager(kind, x, states, params):
            if kind == "lstm":
                args = (x, tuple(states), params, True, 1, 0.0, True, False, True)
                return torch.lstm(*args)[0]
            return torch.gru(x, states[0], params, True, 1, 0.0, True, False, True)[0]

        results = []
        for fn in (eager, torch.compile(fused_rnn, fullgraph=True)):
            leaves = [v.clone().requires_grad_() for v in values]
            y = fn(kind, leaves[0], leaves[1 : 1 + n], leaves[1 + n :])
            grads = torch.autograd.grad(torch.sin(y).sum(), leaves)
            results.append([t.detach().cpu().numpy() for t in (y, *grads)])
        worst = max(
            float(np.max(np.abs(a.astype("float64") - b))) for a, b in zip(*results)
        )
        rows.append({"check": kind, "max_abs_diff": worst, "ok": worst <= TOLERANCE})
    return rows


def set_highest_precision(highest=True):
    """float32 matmuls and convolutions without TF32 (or back to the backend's
    default with `highest=False`): the one backend branch."""
    import keras
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = not highest  # PyTorch's defaults otherwise
    torch.set_float32_matmul_precision("highest")
    if keras.backend.backend() == "jax":
        import jax

        jax.config.update(
            "jax_default_matmul_precision", "highest" if highest else None
        )
    elif keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(not highest)


def device_info():
    import keras

    backend = keras.backend.backend()
    info = {"backend": backend, "keras": keras.__version__}
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        info |= {
            "version": jax.__version__,
            "device": getattr(device, "device_kind", device.platform),
            "platform": device.platform,
        }
    elif backend == "torch":
        import torch

        gpu = torch.cuda.is_available()
        info |= {
            "version": torch.__version__,
            "device": torch.cuda.get_device_name(0) if gpu else "CPU",
            "platform": "gpu" if gpu else "cpu",
            "cudnn": torch.backends.cudnn.version() if gpu else None,
        }
    else:
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        info |= {
            "version": tf.__version__,
            "device": gpus[0].name if gpus else "CPU",
            "platform": "gpu" if gpus else "cpu",
        }
    if info["platform"] == "cpu":
        info["device"] = f"CPU ({platform.processor() or platform.machine()})"
    return info


def worker(args):
    import numpy as np

    reference = dict(np.load(REFERENCE))
    report = {"info": device_info(), "errors": []}

    def section(name, fn, *fn_args):
        start = time.perf_counter()
        try:
            report[name] = fn(*fn_args)
        except Exception as error:  # one section's failure must not hide the rest
            report["errors"].append(f"{name}: {type(error).__name__}: {error}")
        report.setdefault("seconds", {})[name] = time.perf_counter() - start
        print(f"[{report['info']['backend']}] {name} done", file=sys.stderr)
        with open(args.report, "w", encoding="utf-8") as file:  # kept on a timeout
            json.dump(report, file, default=float)

    # The checks first, the timings after them: a worker that runs out of time
    # loses speed rows, never a numerics or decoding verdict.
    section("numerics_default", check_numerics, reference)
    set_highest_precision()
    section("numerics_highest", check_numerics, reference)
    set_highest_precision(False)
    model = None
    try:
        model = load_preset()
    except Exception as error:
        report["errors"].append(f"preset: {type(error).__name__}: {error}")
    if model is not None:
        section("decoding", check_decoding, model, reference, args.quick)
        if not all(r["ok"] for r in report.get("decoding", [])):
            set_highest_precision()
            section("decoding_highest", check_decoding, model, reference, args.quick)
            set_highest_precision(False)
    section("bfloat16", check_bfloat16, args.quick)
    if report["info"]["backend"] == "torch":
        set_highest_precision()
        section("fused_rnn", check_fused_rnn)
        set_highest_precision(False)
        if model is not None:
            captured = (check_captured_decoding, model, reference, args.quick)
            section("decoding_captured", *captured)
    if model is not None:
        section("throughput", preset_throughput, model, args.quick)
        if report["info"]["backend"] == "torch":
            section("throughput_jit", jit_throughput, model, args.quick)
            section("throughput_captured", jit_throughput, model, args.quick, True)
    section("speed", check_speed, args.quick, args.steps, args.windows)
    if report["info"]["backend"] == "torch":
        section("speed_jit", check_speed, args.quick, args.steps, args.windows, True)
        if args.operator_ab:
            section(
                "speed_jit_operator",
                check_speed,
                *(args.quick, args.steps, args.windows, True, True),
            )


# The driver: one worker per backend, then the table.


def run_worker(backend, args):
    """One backend's report; what it finished if it fails or runs out of time."""
    import tempfile

    env = dict(
        os.environ,
        KERAS_BACKEND=backend,
        TF_CPP_MIN_LOG_LEVEL="3",
        XLA_PYTHON_CLIENT_PREALLOCATE="false",
        PYTHONPATH=os.pathsep.join(
            [REPO]
            + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    )
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "report.json")
        argv = [sys.executable, os.path.abspath(__file__), "--worker", "--report", path]
        argv += ["--steps", str(args.steps), "--windows", str(args.windows)]
        argv += ["--quick"] * args.quick
        argv += ["--operator-ab"] * args.operator_ab
        start = time.perf_counter()
        error = None
        try:
            result = subprocess.run(
                argv, env=env, capture_output=True, text=True, timeout=args.timeout
            )
            if result.returncode != 0:
                error = f"exited {result.returncode}: {result.stderr[-2000:].strip()}"
        except subprocess.TimeoutExpired:
            error = f"stopped after its {args.timeout} s"
        report = {"info": {"backend": backend}, "errors": []}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as file:
                report = json.load(file)
    if error:
        report["errors"].append(f"worker {error}")
    report["wall"] = time.perf_counter() - start
    return report


def fmt(value, digits=0):
    return f"{value:,.{digits}f}"


def table(reports, args):
    lines = ["## GPU check (`scripts/gpu_check.sh`)", ""]
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for report in reports:
        info = report["info"]
        extra = f", cuDNN {info['cudnn']}" if info.get("cudnn") else ""
        lines.append(
            f"- {info['backend']}: {info.get('device', '?')} "
            f"({info.get('platform', '?')}), {info['backend']} "
            f"{info.get('version', '?')}, keras {info.get('keras', '?')}{extra}; "
            f"worker {fmt(report.get('wall', 0))} s"
        )
    lines += [f"- measured {stamp}" + (" with `--quick` sizes" if args.quick else "")]
    lines += [
        "",
        f"Numerics: the largest absolute difference from the CPU reference values "
        f"(`scripts/gpu_check_reference.npz`), tolerance {TOLERANCE:g}; `default` is "
        "the backend's own float32 matmul precision (TF32 on NVIDIA GPUs under JAX, "
        "and in cuDNN's LSTM under PyTorch), `highest` without TF32; only "
        "`highest` must be within the tolerance.",
        "",
        "| check | "
        + " | ".join(
            f"{r['info']['backend']} {p}"
            for r in reports
            for p in ("default", "highest")
        )
        + " |",
        "|---|" + "---|" * (2 * len(reports)),
    ]
    for name in CASES:
        cells = []
        for report in reports:
            for key in ("numerics_default", "numerics_highest"):
                row = next((r for r in report.get(key, []) if r["check"] == name), None)
                # Over the tolerance fails at the highest precision only; at the
                # default one (TF32) it is what the backend chose.
                mark = " FAIL" if key == "numerics_highest" else " (over)"
                cells.append(
                    "n/a"
                    if row is None
                    else f"{row['max_abs_diff']:.1e}" + ("" if row["ok"] else mark)
                )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| decoding and bfloat16 | "
        + " | ".join(r["info"]["backend"] for r in reports)
        + " |",
        "|---|" + "---|" * len(reports),
    ]
    for name in (f"{PRESET} greedy", f"{PRESET} beam4"):
        cells = []
        for report in reports:
            row = next(
                (r for r in report.get("decoding", []) if r["check"] == name), None
            )
            cells.append(
                "n/a"
                if row is None
                else f"{row['same']}/{row['of']} sentences the same tokens"
                + ("" if row["ok"] else " FAIL")
            )
        lines.append(f"| {name} (against CPU) | " + " | ".join(cells) + " |")
    cells = []
    for report in reports:
        row = report.get("bfloat16")
        cells.append(
            "n/a"
            if row is None
            else f"loss {row['first_loss']:.2f} → {row['last_loss']:.2f} in "
            f"{row['steps']} steps, " + ("ok" if row["ok"] else "FAIL")
        )
    lines.append("| mixed_bfloat16 Translator | " + " | ".join(cells) + " |")
    for name in (f"{PRESET} greedy", f"{PRESET} beam4"):
        cells = []
        for report in reports:
            rows = report.get("decoding_captured")
            row = next((r for r in rows or [] if r["check"] == name), None)
            cells.append(
                "n/a"
                if row is None
                else f"{row['same']}/{row['of']} the same tokens "
                f"({row['same_as_cpu']}/{row['of']} as the CPU's)"
                + ("" if row["ok"] else " FAIL")
            )
        lines.append(
            f"| {name}, compiled, CUDA graphs (against compiled step by step) | "
            + " | ".join(cells)
            + " |"
        )
    cells = []
    for report in reports:
        rows = report.get("fused_rnn")
        cells.append(
            "n/a"
            if rows is None
            else ", ".join(
                f"{r['check']} {r['max_abs_diff']:.1e}" + ("" if r["ok"] else " FAIL")
                for r in rows
            )
        )
    lines.append(
        "| fused RNN operator, compiled (against eager, output and gradients) | "
        + " | ".join(cells)
        + " |"
    )
    size = SPEED_SIZES["quick" if args.quick else "full"]
    lines += [
        "",
        "Training speed, target tokens/s (median of "
        f"{args.windows} windows of {args.steps} steps after a warm-up window; "
        f"batch {size['batch']}, length {size['length']}, vocabulary "
        f"{size['vocab']}, embedding {size['embedding']}, {size['units']} units; "
        "Adam, clipping at 5): the Translator beside a plain PyTorch model of the "
        "same architecture on the same device (`nn.LSTM` on cuDNN + `bmm` attention "
        "for the fast path, an `nn.GRUCell` loop for input feeding).",
        "",
        "| path | Keras backend | PyTorch device | Translator | plain PyTorch | "
        "Translator / PyTorch |",
        "|---|---|---|---|---|---|",
    ]
    for report in reports:
        keys = ("speed", "speed_jit", "speed_jit_operator")
        rows = [report.get(k, []) for k in keys]
        for row in sum(rows, []):
            backend = report["info"]["backend"]
            backend += ", `jit_compile=True`" if row.get("jit_compile") else ""
            backend += ", RNN operator" if row.get("as_operator") else ""
            lines.append(
                f"| {row['path']} | {backend} | "
                f"{row['torch_device']} | {fmt(row['translator'])} | "
                f"{fmt(row['pytorch'])} | {row['ratio']:.2f}x |"
            )
    lines += [
        "",
        f"`{PRESET}` (an ensemble of two Translators) translating a batch, "
        "sentences/s after a warm-up call:",
        "",
        "| Keras backend | sentences | greedy | beam 4 |",
        "|---|---|---|---|",
    ]
    for report in reports:
        for key, suffix in (
            ("throughput", ""),
            ("throughput_jit", ", `jit_compile=True`"),
            ("throughput_captured", ", `jit_compile=True`, CUDA graphs"),
        ):
            row = report.get(key)
            if row:
                lines.append(
                    f"| {report['info']['backend']}{suffix} | {row['sentences']} | "
                    f"{fmt(row['greedy'], 1)} | {fmt(row['beam4'], 1)} |"
                )
    errors = [f"{r['info']['backend']}: {e}" for r in reports for e in r["errors"]]
    if errors:
        lines += ["", "Errors:", ""] + [f"- {e}" for e in errors]
    return "\n".join(lines) + "\n"


def failed(reports):
    """Whether a check failed: numerics at the highest precision, decoding (at
    the highest precision where the default one differed), bfloat16, torch's
    fused RNN operator and captured decoding loops, errors."""
    for report in reports:
        decoding = report.get("decoding_highest", report.get("decoding", []))
        checks = report.get("numerics_highest", []) + decoding
        checks.append(report.get("bfloat16", {"ok": False}))
        if report["info"]["backend"] == "torch":
            checks += report.get("fused_rnn", [{"ok": False}])
            checks += report.get("decoding_captured", [{"ok": False}])
        if report["errors"] or not decoding or not all(r["ok"] for r in checks):
            return True
    return False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["jax", "torch"])
    parser.add_argument("--out", help="also write the markdown table here")
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--steps", type=int, default=None, help="steps per window")
    parser.add_argument("--windows", type=int, default=None, help="timed windows")
    parser.add_argument("--timeout", type=int, default=420, help="per worker, s")
    parser.add_argument(
        "--operator-ab",
        action="store_true",
        help="torch: time the compiled train steps again with the large recurrent "
        "layers as operators of the graph (torch_options(rnn_operator=True))",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    parser.add_argument("--make-reference", action="store_true")
    args = parser.parse_args(argv)
    if args.steps is None:
        args.steps = 2 if args.quick else 8
    if args.windows is None:
        args.windows = 1 if args.quick else 3
    if args.make_reference:
        make_reference(REFERENCE)
        return 0
    if args.worker:
        worker(args)
        return 0
    reports = [run_worker(backend, args) for backend in args.backends]
    text = table(reports, args)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as file:
            file.write(text)
        with open(os.path.splitext(args.out)[0] + ".json", "w") as file:
            json.dump(reports, file, indent=1, default=float)
    return 1 if failed(reports) else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The beam's penalties as tensors: read when the search runs, so one compiled
search serves every length penalty α and every coverage penalty β > 0."""

import keras
import numpy as np
import pytest
from decoding_helpers import StepTableModel, brute_force_beams, jit
from keras import ops

import keras_rnnattn.decoding as decoding
from keras_rnnattn.decoding import SearchSettings, beam_search
from keras_rnnattn.models import Translator
from keras_rnnattn.text import WordTokenizer

END = 0
# Negative, zero and positive α: the early stop's bound differs in each.
ALPHAS = (-0.5, 0.0, 0.6, 1.4)


def search_against_brute_force(model, penalties):
    """One compiled search of two rows, 8 beams, 3 returned, run at each
    `(alpha, beta)` of `penalties` (beta None: no coverage penalty) and
    checked against the enumeration in NumPy. Returns the top tokens of
    each run and how many times the search was traced."""
    starts = np.array([1, 2])
    traces = []

    def decode(starts, alpha, beta=None):
        traces.append(alpha)
        return beam_search(
            model.next_fn,
            model.initial_state(2),
            starts,
            END,
            model.max_length,
            beam_size=8,
            num_return_sequences=3,
            length_penalty=alpha,
            coverage_penalty=0.0 if beta is None else beta,
        )

    compiled = jit(decode)
    best = []
    for alpha, beta in penalties:
        tensors = [ops.convert_to_tensor(p) for p in (alpha, beta) if p is not None]
        tokens, scores = compiled(ops.convert_to_tensor(starts, "int32"), *tensors)
        tokens, scores = ops.convert_to_numpy(tokens), ops.convert_to_numpy(scores)
        for b, start in enumerate(starts):
            want, want_scores = brute_force_beams(
                model, start, END, 3, alpha=alpha, beta=beta or 0.0
            )
            np.testing.assert_array_equal(tokens[b], want)
            np.testing.assert_allclose(scores[b], want_scores, rtol=1e-5, atol=1e-5)
        best.append(tuple(tokens[:, 0].ravel()))
    return best, len(traces)


def test_one_compiled_search_matches_brute_force_at_every_alpha():
    # 2 tokens besides the end over 4 steps: 8 beams keep every hypothesis,
    # so the search is exact and equals the enumeration.
    model = StepTableModel.random(10, max_length=4, vocab_size=3)
    best, traces = search_against_brute_force(model, [(a, None) for a in ALPHAS])
    assert len(set(best)) > 1  # α changes which hypothesis wins
    if keras.backend.backend() != "torch":  # torch runs the search eagerly
        assert traces == 1


def test_one_compiled_search_matches_brute_force_at_every_beta():
    # The table of test_beam_search's coverage test: 3 tokens, 4 steps, an
    # attention over 4 source positions whose last one is padding.
    rng = np.random.default_rng(7)
    log_probs = StepTableModel.random(7, max_length=4, vocab_size=3).table
    alignments = rng.dirichlet(np.ones(3), size=(4, 3))
    alignments = np.concatenate([alignments, np.zeros((4, 3, 1))], axis=-1)
    model = StepTableModel(log_probs, alignments.astype("float32"))
    _, traces = search_against_brute_force(model, [(0.0, 0.4), (0.7, 0.2), (0.7, 0.0)])
    if keras.backend.backend() != "torch":
        assert traces == 1


def test_a_tensor_penalty_with_settings_gets_one_clear_error():
    model = StepTableModel.random(0, max_length=3, vocab_size=3)
    with pytest.raises(ValueError, match="tensor penalties without `settings`"):
        beam_search(
            model.next_fn,
            model.initial_state(1),
            np.array([1]),
            END,
            3,
            length_penalty=ops.convert_to_tensor(0.6),
            settings=SearchSettings("beam", beam_size=2),
        )


def small_translator():
    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    keras.utils.set_random_seed(0)
    model = Translator(
        tokenizer, tokenizer, embedding_dim=8, units=8, attention="bahdanau"
    )
    return model, model.encode_source(["a b c", "d e f g h", "h g"])


def alpha_baked_in(model, source, alpha, beta=0.0, max_length=None):
    """The search with α and β constants of its trace (as export traces
    them), run without compiling: the reference of `generate_ids`."""
    per_row = max_length is None
    if per_row:
        max_length = min(model.max_target_length, 2 * source.shape[1] + 10)
    run = model.search_fn(
        beam_size=3,
        max_length=max_length,
        per_row=per_row,
        length_penalty=alpha,
        coverage_penalty=beta,
    )
    return tuple(ops.convert_to_numpy(x) for x in run(source))


def test_a_translator_compiles_one_beam_search_for_every_alpha(monkeypatch):
    model, source = small_translator()
    # Without a coverage penalty, then with one: a search of each kind. Four
    # tokens leave some source positions with less than 1 in all, where β counts.
    settings = [(alpha, 0.0) for alpha in ALPHAS] + [(0.6, 0.2), (0.6, 0.5)]
    want = {ab: alpha_baked_in(model, source, *ab, max_length=4) for ab in settings}
    traces = []
    search = decoding.beam_search

    def traced(*args, **kwargs):
        traces.append(kwargs["length_penalty"])
        return search(*args, **kwargs)

    monkeypatch.setattr(decoding, "beam_search", traced)
    for alpha, beta in settings:
        tokens, scores = model.generate_ids(
            source, 3, 4, length_penalty=alpha, coverage_penalty=beta
        )
        np.testing.assert_array_equal(tokens, want[alpha, beta][0])
        np.testing.assert_allclose(scores, want[alpha, beta][1], rtol=1e-6, atol=1e-6)
    # The scores tell the settings apart: a search that kept the first fails.
    assert len({tuple(np.round(w[1], 4)) for w in want.values()}) == len(settings)
    if keras.backend.backend() != "torch":  # compiled once, then reused
        assert len(traces) == 2
    assert len(model._compiled_fns) == 2


def test_a_coverage_penalty_without_attention_gets_one_clear_error():
    tokenizer = WordTokenizer().fit(["a b c d"])
    model = Translator(tokenizer, tokenizer, embedding_dim=8, units=8, attention="none")
    with pytest.raises(ValueError, match=r"no attention.*give coverage_penalty=0"):
        model.translate("a b", beam_size=2, coverage_penalty=0.2)


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="torch.compile")
def test_the_torch_beam_step_is_traced_once_for_every_alpha():
    # Dynamo guards on the Python constants a step reads: an α read as a
    # float would trace the step again for each value. Its "eager" backend
    # traces without generating code, as the steps of `jit_compile=True` are
    # traced (`benchmarks/preset_decode.py` times those).
    import torch
    from torch._dynamo.utils import counters

    from keras_rnnattn._backend.decoding.loops import step_wrapper

    model, source = small_translator()
    want = {alpha: alpha_baked_in(model, source, alpha) for alpha in ALPHAS}
    torch._dynamo.reset()
    counters.clear()

    def compile_step(body):
        return torch.compile(body, fullgraph=True, dynamic=False, backend="eager")

    graphs = []
    with step_wrapper(compile_step):
        for alpha in ALPHAS:
            tokens, scores = model.generate_ids(
                source, beam_size=3, length_penalty=alpha
            )
            graphs.append(counters["stats"]["unique_graphs"])
            np.testing.assert_array_equal(tokens, want[alpha][0])
            np.testing.assert_allclose(scores, want[alpha][1], rtol=1e-5, atol=1e-6)
    # The encoder, beam search's first `next_fn` and its step, on the first α.
    assert graphs == [3] * len(ALPHAS)

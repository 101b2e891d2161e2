"""The beam's length penalty as a tensor: read when the search runs, so one
compiled search serves every α."""

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


def test_one_compiled_search_matches_brute_force_at_every_alpha():
    # 2 tokens besides the end over 4 steps: 8 beams keep every hypothesis,
    # so the search is exact and equals the enumeration in NumPy.
    model = StepTableModel.random(10, max_length=4, vocab_size=3)
    starts = np.array([1, 2])
    traces = []

    def decode(starts, alpha):
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
        )

    compiled = jit(decode)
    best = set()
    for alpha in ALPHAS:
        tokens, scores = compiled(
            ops.convert_to_tensor(starts, "int32"), ops.convert_to_tensor(alpha)
        )
        tokens, scores = ops.convert_to_numpy(tokens), ops.convert_to_numpy(scores)
        for b, start in enumerate(starts):
            want, want_scores = brute_force_beams(model, start, END, 3, alpha=alpha)
            np.testing.assert_array_equal(tokens[b], want)
            np.testing.assert_allclose(scores[b], want_scores, rtol=1e-5, atol=1e-6)
        best.add(tuple(tokens[:, 0].ravel()))
    assert len(best) > 1  # α changes which hypothesis wins
    if keras.backend.backend() != "torch":  # torch runs `decode` eagerly
        assert len(traces) == 1


def test_a_tensor_alpha_with_settings_gets_one_clear_error():
    model = StepTableModel.random(0, max_length=3, vocab_size=3)
    with pytest.raises(ValueError, match="without `settings`"):
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


def alpha_baked_in(model, source, alpha):
    """The search with α a constant of its trace (as export traces it), run
    without compiling: the reference of `generate_ids`."""
    max_length = min(model.max_target_length, 2 * source.shape[1] + 10)
    run = model.search_fn(
        beam_size=3, max_length=max_length, per_row=True, length_penalty=alpha
    )
    return tuple(ops.convert_to_numpy(x) for x in run(source))


def test_a_translator_compiles_one_beam_search_for_every_alpha(monkeypatch):
    model, source = small_translator()
    want = {alpha: alpha_baked_in(model, source, alpha) for alpha in ALPHAS}
    traces = []
    search = decoding.beam_search

    def traced(*args, **kwargs):
        traces.append(kwargs["length_penalty"])
        return search(*args, **kwargs)

    monkeypatch.setattr(decoding, "beam_search", traced)
    for alpha in ALPHAS:
        tokens, scores = model.generate_ids(source, beam_size=3, length_penalty=alpha)
        np.testing.assert_array_equal(tokens, want[alpha][0])
        np.testing.assert_allclose(scores, want[alpha][1], rtol=1e-6, atol=1e-6)
    # The scores tell the α apart: a search that kept the first one fails.
    assert len({tuple(np.round(want[a][1], 4)) for a in ALPHAS}) == len(ALPHAS)
    if keras.backend.backend() != "torch":  # compiled once, then reused
        assert len(traces) == 1
    assert len(model._compiled_fns) == 1


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="torch.compile")
def test_the_torch_beam_step_is_traced_once_for_every_alpha():
    # Dynamo guards on the Python constants a step reads: an α read as a
    # float would trace the step again for each value. Its "eager" backend
    # traces without generating code, as the steps of `jit_compile=True` are
    # traced (`benchmarks/preset_decode.py` times those).
    import torch
    from torch._dynamo.utils import counters

    from keras_rnnattn._backend.loops import step_wrapper

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

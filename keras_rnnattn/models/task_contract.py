"""`TaskContract`: what an application model declares about its text methods."""

import dataclasses
import types


@dataclasses.dataclass(frozen=True)
class TaskContract:
    """What a task class declares, for the CLI, export and test harnesses.

    Each application model class sets `task_contract`, so a reader needs no
    probing of methods and signatures: the method that turns text into
    output, the tokenizer that reads its input, the string-level methods and
    their keyword options, and the export options that apply to it.

    Args:
        text_method: str, the method that turns texts into output
            (`"translate"`, `"classify"`, `"tag"`, `"generate"`).
        input_tokenizer: str, the attribute holding the tokenizer that reads
            the input texts (`"tokenizer"`, `"source_tokenizer"`).
        methods: dict `{method: (keyword option, ...)}` of the string-level
            methods (`text_method` among them) and the options a caller (the
            CLI) may pass each.
        export_options: tuple of the `keras_rnnattn.export.export_model`
            options that apply beyond `batch_size` and `sequence_length`:
            `"max_length"`, and the fields of its `search` settings that the
            export signatures fix (`"beam_size"`, `"length_penalty"`, ...).

    Example:

    >>> contract = TaskContract(
    ...     "classify", methods={"classify": ("threshold", "batch_size")})
    >>> contract.options("classify"), contract.has("tag")
    (('threshold', 'batch_size'), False)
    """

    text_method: str
    input_tokenizer: str = "tokenizer"
    methods: dict = dataclasses.field(default_factory=dict)
    export_options: tuple = ()

    def __post_init__(self):
        methods = dict(self.methods)
        methods.setdefault(self.text_method, ())
        frozen = {name: tuple(options) for name, options in methods.items()}
        object.__setattr__(self, "methods", types.MappingProxyType(frozen))
        object.__setattr__(self, "export_options", tuple(self.export_options))

    def has(self, method):
        """Whether the task has the string-level method `method`."""
        return method in self.methods

    def options(self, method):
        """The keyword options of `method` a caller may pass (a tuple)."""
        if method not in self.methods:
            raise ValueError(
                f"The task has no method {method!r}; it has {sorted(self.methods)}. "
                f"Received: method={method!r}"
            )
        return self.methods[method]

    def input_tokenizer_of(self, model):
        """The tokenizer of `model` that reads its input texts."""
        return getattr(model, self.input_tokenizer)

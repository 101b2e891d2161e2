"""`SearchSettings`: how a model searches for its output, one checked value.

Pure Python: presets, the CLI, export, the models and
`keras_rnnattn.decoding.beam_search` all read it, so a setting such as the
length penalty has one name from a preset's metadata.json to the search.
"""

import dataclasses
import math

from keras_rnnattn._checks import is_int, is_real

METHODS = ("greedy", "beam", "sample")
# keras-hub's sampler names and their settings: TopKSampler(k=5),
# TopPSampler(p=0.1), BeamSampler(num_beams=5).
SAMPLER_NAMES = ("greedy", "beam", "top_k", "top_p", "random")
_NAMED = {
    "greedy": {"method": "greedy", "beam_size": 1, "num_return_sequences": 1},
    "beam": {"method": "beam", "beam_size": 5},
    "top_k": {"method": "sample", "top_k": 5, "top_p": None},
    "top_p": {"method": "sample", "top_k": None, "top_p": 0.1},
    "random": {"method": "sample", "top_k": None, "top_p": None},
}


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """The settings of a search: greedy, beam search or sampling.

    Immutable and checked when made: a bad value raises one `ValueError` that
    names the setting, what it must be and the value received. It is what
    `compile(sampler=...)` keeps (as keras-hub's `CausalLM` keeps its
    sampler), what a preset records (`"search"` in metadata.json) and what
    `keras_rnnattn.decoding.beam_search` takes as `settings`.

    Args:
        method: `"greedy"`, `"beam"` or `"sample"`.
        beam_size: int >= 1, the beam of `"beam"`; None gives 4 for `"beam"`
            and 1 otherwise (greedy search and sampling keep one sequence).
        length_penalty: float α of the beam's GNMT length penalty
            ((5 + |Y|) / 6)^α; larger values favour longer outputs, 0 ranks
            by log-probability (negative values favour shorter outputs).
        coverage_penalty: float β >= 0 of the beam's coverage penalty (Wu et
            al. 2016), which rewards attending to every source token.
        temperature: float > 0 of sampling.
        top_k: None or int >= 1: sample among the k most likely tokens.
        top_p: None or float in (0, 1]: nucleus sampling.
        num_return_sequences: int in [1, beam_size], the hypotheses a beam
            search returns per row.

    The penalties are the beam's and the temperature, `top_k` and `top_p`
    sampling's; the other methods keep them unused, so a model's defaults
    (a preset's recorded length penalty) hold whichever method is asked for.

    Example:

    >>> settings = SearchSettings("beam", length_penalty=1.2)
    >>> settings.beam_size, settings.length_penalty
    (4, 1.2)
    >>> settings.replace(beam_size=2).beam_size
    2
    >>> SearchSettings.from_sampler("top_k").top_k
    5
    >>> SearchSettings(top_p=2.0)
    Traceback (most recent call last):
    ...
    ValueError: SearchSettings: `top_p` must be None or a float in (0, 1]. Received: top_p=2.0
    """

    method: str = "greedy"
    beam_size: int = None
    length_penalty: float = 0.0
    coverage_penalty: float = 0.0
    temperature: float = 1.0
    top_k: int = None
    top_p: float = None
    num_return_sequences: int = 1

    def __post_init__(self):
        def fail(name, what):
            value = getattr(self, name)
            raise ValueError(
                f"SearchSettings: `{name}` must be {what}. Received: {name}={value!r}"
            )

        def put(name, value):
            object.__setattr__(self, name, value)

        if self.method not in METHODS:
            fail("method", f"one of {METHODS}")
        if self.beam_size is None:
            put("beam_size", 4 if self.method == "beam" else 1)
        if not is_int(self.beam_size) or self.beam_size < 1:
            fail("beam_size", "an int >= 1")
        put("beam_size", int(self.beam_size))
        if self.method != "beam" and self.beam_size != 1:
            fail("beam_size", f"1 with method={self.method!r} (use method='beam')")
        for name in ("length_penalty", "coverage_penalty"):
            value = getattr(self, name)
            if not is_real(value) or not math.isfinite(value):
                fail(name, "a finite float (0 turns it off)")
            put(name, float(value))
        if self.coverage_penalty < 0:
            fail("coverage_penalty", "a float >= 0 (0 turns it off)")
        if not is_real(self.temperature) or not self.temperature > 0:
            fail("temperature", "a float > 0 (method='greedy' is the limit of 0)")
        put("temperature", float(self.temperature))
        if self.top_k is not None:
            if not is_int(self.top_k) or self.top_k < 1:
                fail("top_k", "None or an int >= 1")
            put("top_k", int(self.top_k))
        if self.top_p is not None:
            if not is_real(self.top_p) or not 0.0 < self.top_p <= 1.0:
                fail("top_p", "None or a float in (0, 1]")
            put("top_p", float(self.top_p))
        n = self.num_return_sequences
        if not is_int(n) or not 1 <= n <= self.beam_size:
            fail(
                "num_return_sequences",
                f"an int in [1, beam_size={self.beam_size}] (raise `beam_size` "
                "to get more hypotheses)",
            )
        put("num_return_sequences", int(n))

    def replace(self, **changes):
        """A copy with `changes` (checked again); `beam_size` follows a new
        `method` unless given."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise ValueError(
                f"SearchSettings has no setting {', '.join(map(repr, unknown))}; "
                f"the settings are {self.names()}. Received: {changes}"
            )
        if changes.get("method", self.method) != self.method:
            changes.setdefault("beam_size", None)
            if changes["method"] != "beam":
                changes.setdefault("num_return_sequences", 1)
        return dataclasses.replace(self, **changes)

    @classmethod
    def names(cls):
        """The setting names, in order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def get_config(self):
        """The settings as a dict of plain JSON values."""
        return dataclasses.asdict(self)

    @classmethod
    def from_config(cls, config):
        return cls().replace(**dict(config))

    @classmethod
    def from_sampler(cls, sampler, base=None, owner="compile"):
        """The settings of `compile(sampler=...)`, over `base`.

        Args:
            sampler: None (`base` itself), a name of `SAMPLER_NAMES`
                (keras-hub's, with its defaults), a dict of settings (as
                `{"method": "beam", "beam_size": 5}`; `{}` is `base`), or a
                `SearchSettings`.
            base: the settings a name or a dict changes (a model's defaults,
                such as a preset's recorded length penalty); None:
                `SearchSettings()`.
            owner: str, the caller named in errors.

        Returns:
            A `SearchSettings`.
        """
        base = cls() if base is None else base
        if sampler is None:
            return base
        if isinstance(sampler, cls):
            return sampler
        if isinstance(sampler, str):
            if sampler not in _NAMED:
                raise ValueError(
                    f"{owner}: `sampler` must be one of {SAMPLER_NAMES}, a "
                    "SearchSettings or a keras_hub.samplers.Sampler. Received: "
                    f"sampler={sampler!r}"
                )
            return base.replace(**_NAMED[sampler])
        if isinstance(sampler, dict):
            return base.replace(**sampler)
        raise ValueError(
            f"{owner}: `sampler` must be one of {SAMPLER_NAMES}, a SearchSettings "
            'or a keras_hub.samplers.Sampler (pip install ".[hub]"). '
            f"Received: sampler of type {type(sampler).__name__}"
        )

    @classmethod
    def from_metadata(cls, metadata, base=None):
        """The search settings a preset's recipe chose, over `base`.

        Reads metadata.json's `"search"`: a dict of these settings, such as
        `{"length_penalty": 1.2}`, the beam's α a translator's recipe chose
        on its validation split.

        Args:
            metadata: dict, a preset's metadata.json.
            base: the settings without the preset's (None: `SearchSettings()`).

        Returns:
            A `SearchSettings`.

        Example:

        >>> SearchSettings.from_metadata({"search": {"length_penalty": 1.2}})
        ... # doctest: +NORMALIZE_WHITESPACE
        SearchSettings(method='greedy', beam_size=1, length_penalty=1.2,
            coverage_penalty=0.0, temperature=1.0, top_k=None, top_p=None,
            num_return_sequences=1)
        """
        base = cls() if base is None else base
        metadata = metadata if isinstance(metadata, dict) else {}
        search = metadata.get("search")
        return base.replace(**search) if isinstance(search, dict) else base

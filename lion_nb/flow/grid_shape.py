"""What a ``Grid`` is made of, checked before anything runs: its verb, its prompts (rows), its
models (columns), its template and its baseline. Each refusal says what was wrong and what to
write instead (``GridShapeError``: a ``ValueError`` and a ``ConfigurationError``)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lion_nb.flow.errors import GridFailed, GridIndexError, GridShapeError
from lion_nb.operations.verbs import VERBS

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel
    from lion_nb.session.branch import Branch

__all__ = [
    "Column",
    "GridFailed",
    "GridIndexError",
    "GridShapeError",
    "check_baseline",
    "check_prompts",
    "check_run",
    "check_template",
    "check_verb",
    "columns_of",
    "prompt_line",
]

# Arguments a row may not set: the column decides them.
_COLUMN_DECIDES = {"chat_model": "the column's model", "branch": "the cell's own branch"}
# A verb whose extra keywords go on to another function's named parameters.
_PASSED_ON = {"ReAct": ("lion_nb.operations.react", "ReActStream")}


@dataclass(frozen=True, slots=True)
class Column:
    label: str
    model: iModel
    system: str | None = None


def check_verb(verb: str) -> str:
    if verb not in VERBS:
        raise GridShapeError(f"verb={verb!r}: a grid runs one of {', '.join(VERBS)}")
    return verb


def verb_arguments(verb: str) -> frozenset[str]:
    """The keyword arguments a row may give ``verb`` (its named parameters)."""
    from lion_nb.session.branch import Branch  # lazy: the facade, read for its signatures

    names = _named(getattr(Branch, verb))
    if verb in _PASSED_ON:
        module, func = _PASSED_ON[verb]
        names |= _named(getattr(importlib.import_module(module), func))
    return frozenset(names - {"self", "branch"} - set(_COLUMN_DECIDES))


def _named(func: Any) -> set[str]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name for p in inspect.signature(func).parameters.values() if p.kind in kinds}


def check_prompts(prompts: Iterable[Any], verb: str) -> list[str | dict[str, Any]]:
    if isinstance(prompts, str | bytes | Mapping):
        raise GridShapeError(
            'prompts= takes a list of prompts (one per row), e.g. ["Name a colour."], '
            f"not one {type(prompts).__name__}"
        )
    rows = list(prompts)
    if not rows:
        raise GridShapeError("a grid needs at least one prompt (prompts= is empty)")
    allowed: frozenset[str] | None = None
    out: list[str | dict[str, Any]] = []
    for i, prompt in enumerate(rows):
        if isinstance(prompt, str):
            out.append(prompt)
            continue
        if not isinstance(prompt, Mapping):
            raise GridShapeError(
                f"prompt {i} is a {type(prompt).__name__}; a prompt is a string or a dict of "
                f"{verb}'s arguments, e.g. {{'instruction': ..., 'context': ...}}"
            )
        allowed = allowed if allowed is not None else verb_arguments(verb)
        _check_keys(i, dict(prompt), verb, allowed)
        out.append(dict(prompt))
    return out


def _check_keys(i: int, prompt: dict[str, Any], verb: str, allowed: frozenset[str]) -> None:
    for key, who in _COLUMN_DECIDES.items():
        if key in prompt:
            raise GridShapeError(f"prompt {i} sets {key!r}; in a grid {who} decides it")
    unknown = [k for k in prompt if k not in allowed]
    if unknown:
        listed = ", ".join(repr(k) for k in unknown)
        raise GridShapeError(
            f"prompt {i} has {listed}, which {verb} does not take. It takes: "
            f"{', '.join(sorted(allowed))}. Model settings (temperature, max_tokens) belong "
            "to a column's iModel"
        )


def columns_of(models: Any) -> list[Column]:
    """The columns: a list of ``iModel``s (labelled by their names) or a dict ``{label:
    iModel}`` / ``{label: (iModel, system)}``."""
    if isinstance(models, Mapping):
        items = list(models.items())
        columns = [_column(str(label), value) for label, value in items]
    elif _is_model(models):
        raise GridShapeError("models= takes a list of models (one per column), not one iModel")
    elif isinstance(models, Iterable) and not isinstance(models, str | bytes):
        given = list(models)
        names = _unique([_model_name(m) for m in given])
        columns = [_column(label, m) for label, m in zip(names, given, strict=True)]
    else:
        raise GridShapeError(
            f"models= takes a list of iModels or a dict {{label: iModel}}, not "
            f"{type(models).__name__}"
        )
    if not columns:
        raise GridShapeError("a grid needs at least one model (models= is empty)")
    return columns


def _column(label: str, value: Any) -> Column:
    system = None
    if isinstance(value, tuple):
        if len(value) != 2 or not (value[1] is None or isinstance(value[1], str)):
            raise GridShapeError(
                f"column {label!r}: a tuple is (iModel, system prompt), not {value!r}"
            )
        value, system = value
    if not _is_model(value):
        raise GridShapeError(
            f"column {label!r} is a {type(value).__name__}; a column is an iModel or "
            "(iModel, system prompt)"
        )
    return Column(label, value, system)


def _is_model(value: Any) -> bool:
    from lion_nb.models.imodel import iModel  # lazy: the model layer, as Branch loads it

    return isinstance(value, iModel)


def _model_name(model: Any) -> str:
    if not _is_model(model):
        raise GridShapeError(
            f"models= holds a {type(model).__name__}; each column is an iModel (or use a "
            "dict {label: (iModel, system prompt)})"
        )
    return f"{model.provider_name}/{model.model}" if model.model else model.provider_name


def _unique(names: list[str]) -> list[str]:
    """Two columns of the same model (other settings) are told apart: "m", "m (2)"."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def check_template(template: Branch | None, system: str | None, columns: list[Column]) -> None:
    if template is None:
        return
    from lion_nb.session.branch import Branch  # lazy: as above

    if not isinstance(template, Branch):
        raise GridShapeError(f"template= takes a Branch, not {type(template).__name__}")
    with_system = [c.label for c in columns if c.system is not None]
    if system is not None or with_system:
        whose = f"column(s) {', '.join(with_system)}" if with_system else "system="
        raise GridShapeError(
            f"{whose} and template= both give a system prompt; each cell forks the template, "
            "whose system message it keeps: put the system in the template, or drop template="
        )


def check_baseline(baseline: int | str, labels: list[str]) -> int:
    if isinstance(baseline, str):
        if baseline not in labels:
            raise GridShapeError(
                f"baseline={baseline!r} is not a column; the columns are {', '.join(labels)}"
            )
        return labels.index(baseline)
    if isinstance(baseline, bool) or not isinstance(baseline, int):
        raise GridShapeError(f"baseline= takes a column's index or label, not {baseline!r}")
    if not 0 <= baseline < len(labels):
        raise GridShapeError(
            f"baseline={baseline} is out of range: the grid has {len(labels)} column(s) "
            f"(0 to {len(labels) - 1})"
        )
    return baseline


def prompt_line(prompt: str | Mapping[str, Any], limit: int | None = None) -> str:
    """A prompt on one line: its text, or a dict's instruction (else its first value)."""
    if isinstance(prompt, Mapping):
        value = prompt.get("instruction", next(iter(prompt.values()), ""))
    else:
        value = prompt
    text = " ".join(str(value if value is not None else "").split())
    if limit is not None and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def check_run(max_concurrent: int, engine: str) -> None:
    """A run's options, checked before any cell changes (a flow would check them only once
    the cells it runs had new forks)."""
    if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int):
        raise GridShapeError(f"max_concurrent= takes a whole number, not {max_concurrent!r}")
    if max_concurrent < 1:
        raise GridShapeError(f"max_concurrent must be at least 1, not {max_concurrent}")
    if engine not in ("local", "ray"):
        raise GridShapeError(f"engine={engine!r}: a grid runs on 'local' or 'ray'")

"""``parse``: text -> a structured value, recording nothing (ADR D3/D1).

Local extraction first (JSON found in the text, keys fuzzy-matched to the model's fields,
validated). When that fails, up to ``max_retries`` unrecorded repair turns ask the parse model
to restate the text as JSON matching the schema. Each attempt is announced as a ``ParseAttempt``
signal so a view can show the rounds that led to the result.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from lion_nb.errors import ParseError
from lion_nb.operations.chat import chat
from lion_nb.operations.instruction import check_response_format
from lion_nb.operations.jsonx import extract_json, fuzzy_keys
from lion_nb.operations.types import ChatParam, ParseParam
from lion_nb.port.branch_port import BranchPort
from lion_nb.signals import ParseAttempt


def _type_name(fmt: Any) -> str:
    return getattr(fmt, "__name__", None) or "the requested schema"


def parse_locally(text: str, fmt: Any, param: ParseParam) -> Any:
    """One local attempt. Raises ValueError (ValidationError is one) on failure."""
    data = extract_json(text)
    if isinstance(fmt, type) and issubclass(fmt, BaseModel):
        if isinstance(data, dict) and param.fuzzy_match:
            data = fuzzy_keys(data, list(fmt.model_fields), param.similarity_threshold)
        return fmt.model_validate(data)
    if isinstance(fmt, dict):  # a JSON schema: check required keys only
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        props = list(fmt.get("properties", {}))
        if param.fuzzy_match and props:
            data = fuzzy_keys(data, props, param.similarity_threshold)
        missing = [k for k in fmt.get("required", []) if k not in data]
        if missing:
            raise ValueError(f"missing required fields: {missing}")
        return data
    return data


def _errors_of(exc: Exception) -> list[dict[str, Any]]:
    if isinstance(exc, ValidationError):
        return [
            {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False)
        ]
    return [{"loc": [], "msg": str(exc), "type": type(exc).__name__}]


async def parse(branch: BranchPort, text: str, parse_param: ParseParam) -> Any:
    port = BranchPort.of(branch)
    fmt = parse_param.response_format
    if fmt is None:
        raise ValueError("parse needs a response_format (a pydantic model or a JSON schema)")
    if isinstance(fmt, dict | str):  # a malformed schema or a model's name: say so now
        check_response_format(fmt)
    attempts = max(0, parse_param.max_retries)
    candidate = text
    last_error: Exception | None = None
    for attempt in range(attempts + 1):
        error: ValueError | None = None
        value: Any = None
        try:
            value = parse_locally(candidate, fmt, parse_param)
        except ValueError as exc:
            error = last_error = exc
        port.emit(
            ParseAttempt(
                branch_id=port.id,
                attempt=attempt,
                raw=candidate,
                ok=error is None,
                errors=[] if error is None else _errors_of(error),
                target=_type_name(fmt),
                final=error is None or attempt == attempts,
                value=value,
            )
        )
        if error is None:
            return value
        if attempt == attempts:
            break
        repair = ChatParam(
            guidance="Restate the text below as JSON that matches the schema. Reply with the "
            "JSON only. Previous error: " + str(last_error)[:500],
            context=[text],
            response_format=fmt,
            progression=[],
            imodel=parse_param.imodel or port.parse_model,
            imodel_kw=parse_param.imodel_kw,
        )
        candidate = await chat(port, "Convert to the requested JSON.", repair)
    if parse_param.handle_validation == "return_value":
        return text
    if parse_param.handle_validation == "return_none":
        return None
    raise ParseError(
        f"could not parse the response into {_type_name(fmt)}: {last_error}", target=fmt, raw=text
    ) from last_error

"""The fields ``operate`` adds to a response schema, and the composition of that schema.

``operate(response_format=M, reason=True, actions=True)`` asks the model for ``M``'s fields plus
``reason`` and ``action_requests``, and returns ``M``'s fields plus ``reason``,
``action_requests`` and ``action_responses``. Two classes are built per combination (and
cached): the *request* type, whose JSON schema the model sees and the reply is parsed into, and
the *response* type (a subclass of the request type) that the caller gets back. Both subclass
``M``, so ``isinstance(result, M)`` holds. The field names and shapes are lionagi's, so existing
prompts and scripted replies keep working.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any

from pydantic import AliasChoices, BaseModel, Field, create_model, field_validator

from lion_nb.operations.instruction import check_response_format


class Reason(BaseModel):
    """Why the model answered as it did (``reason=True``)."""

    title: str | None = None
    content: str | None = None
    confidence_score: float | None = Field(
        None, description="How sure you are that the answer meets the request, 0.0 to 1.0."
    )


class ActionRequestModel(BaseModel):
    """One tool call the model asks for in its structured reply."""

    function: str | None = Field(
        None,
        validation_alias=AliasChoices("function", "name", "tool"),
        description="Name of a function from the offered tools. Never invent a name.",
    )
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="Arguments for the function, using only the parameter names it declares.",
    )

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_as_dict(cls, value: Any) -> Any:
        # Models often send arguments as a JSON string (the native tool-call wire form).
        if value is None or value == "":
            return {}
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"arguments is not a JSON object: {exc}") from None
        return value


class ActionResponseModel(BaseModel):
    """What a requested tool call returned. ``is_error``: the call failed and ``output`` holds
    the error text. ``call_id`` is the provider's id when the model called the tool natively."""

    function: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    is_error: bool = False
    call_id: str | None = None


_REASON_DESC = "Your reasoning: why this answer, alternatives considered, and your confidence."
_REQUESTS_DESC = (
    "Tool calls to run now, each a function from the offered tools with its arguments. "
    "Leave empty when no tool is needed."
)


@lru_cache(maxsize=256)
def _compose_model(
    base: type[BaseModel] | None, reason: bool, actions: bool
) -> tuple[type[BaseModel], type[BaseModel]]:
    name = base.__name__ if base is not None else "OperateResponse"
    extra: dict[str, Any] = {}
    if reason:
        extra["reason"] = (Reason | None, Field(None, description=_REASON_DESC))
    if actions:
        extra["action_requests"] = (
            list[ActionRequestModel],
            Field(default_factory=list, description=_REQUESTS_DESC),
        )
    request = create_model(name, __base__=base or BaseModel, **extra)
    if not actions:
        return request, request
    response = create_model(
        name,
        __base__=request,
        action_responses=(list[ActionResponseModel], Field(default_factory=list)),
    )
    return request, response


def _compose_schema(schema: dict[str, Any], reason: bool, actions: bool) -> dict[str, Any]:
    composed = copy.deepcopy(schema)
    props = composed.setdefault("properties", {})
    composed.setdefault("type", "object")
    if reason:
        props["reason"] = {**Reason.model_json_schema(), "description": _REASON_DESC}
    if actions:
        item = ActionRequestModel.model_json_schema()
        item.pop("title", None)
        props["action_requests"] = {"type": "array", "items": item, "description": _REQUESTS_DESC}
    return composed


def compose(
    response_format: type[BaseModel] | BaseModel | dict | None, *, reason: bool, actions: bool
) -> tuple[Any, Any]:
    """``(request_format, response_format)`` for ``operate``. Without ``reason``/``actions`` the
    caller's format is used unchanged; a JSON-schema dict is extended with the same properties."""
    response_format = check_response_format(response_format)  # before anything is sent
    if isinstance(response_format, BaseModel):
        response_format = type(response_format)
    if not reason and not actions:
        return response_format, response_format
    if isinstance(response_format, dict):
        composed = _compose_schema(response_format, reason, actions)
        return composed, composed
    if response_format is not None and not (
        isinstance(response_format, type) and issubclass(response_format, BaseModel)
    ):
        raise TypeError(
            f"response_format must be a pydantic model or a JSON schema dict, not {response_format!r}"
        )
    return _compose_model(response_format, reason, actions)


def with_action_responses(
    result: BaseModel, response_type: type[BaseModel], responses: list[ActionResponseModel]
) -> BaseModel:
    """``result`` (an instance of the request type, already validated) as the response type,
    carrying ``responses``. Built without re-validation so the caller's validators run once."""
    values = {name: getattr(result, name) for name in type(result).model_fields}
    values["action_responses"] = responses
    fields_set = set(result.model_fields_set) | {"action_responses"}
    return response_type.model_construct(_fields_set=fields_set, **values)

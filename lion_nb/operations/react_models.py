"""The structured replies of ReAct rounds (field names compatible with lionagi's, so existing
prompts and scripted replies keep working).

An analysis round answers ``ReActAnalysis`` (``operate`` adds ``action_requests`` when tools are
offered and ``action_responses`` to what it returns); the final round answers ``Analysis``
unless the caller gave a ``response_format``; a model that ignores native tools (its answer
constrained by the schema, see ``operations.own_actions``) is asked for ``AnswerRequired``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator


class ReActAnalysis(BaseModel):
    """One reason-act round."""

    FIRST_EXT_PROMPT: ClassVar[str] = (
        "This is a multi-step task. You have room for up to {extensions} more reason-act "
        "rounds after this one: headroom to do the job well, not a target to fill. In each round "
        "request every independent tool call together. Set extension_needed to true while the "
        "task is unfinished, and to false only once the work is done and verified."
    )
    CONTINUE_EXT_PROMPT: ClassVar[str] = (
        "Continue: about {extensions} rounds of headroom remain. Review the tool results, take "
        "the next actions the task needs, and set extension_needed to false only once the work "
        "is done and verified."
    )
    ANSWER_PROMPT: ClassVar[str] = (
        "Given your reasoning and actions, now give the final answer to the user's request:"
        "\n\n{instruction}"
    )

    analysis: str = Field(
        "",
        description="Your reasoning for this round: what you know, what is missing, the plan.",
    )
    extension_needed: bool = Field(
        False,
        description=(
            "True while the task is still in progress and another round is needed; false only "
            "when the work is complete and verified."
        ),
    )
    action_strategy: Literal["sequential", "concurrent"] = Field(
        "concurrent",
        description="How to run this round's tool calls: all at once, or one after another.",
    )


class Analysis(BaseModel):
    """The final answer of a ReAct run."""

    answer: str | None = None

    @field_validator("answer", mode="before")
    @classmethod
    def _as_text(cls, value: object) -> object:
        # Models sometimes answer a number or an object; the answer is text either way.
        if value is None or isinstance(value, str):
            return value.strip() or None if isinstance(value, str) else None
        if isinstance(value, bool | int | float):
            return str(value)
        return json.dumps(value, ensure_ascii=False, default=str)


ANSWER_MAX_LENGTH = 200  # characters: room for a sentence or two, a bound for a small model
# Where a grammar enforces it: words, not JSON (a small model under a grammar otherwise starts
# its answer with "{"); a positive class, so the string never holds a quote or backslash.
ANSWER_PATTERN = "^[A-Za-z0-9][A-Za-z0-9 .,:;!?'+*/=()%-]{0," + str(ANSWER_MAX_LENGTH - 1) + "}$"


def _answer_required(schema: dict[str, Any]) -> None:
    # no descriptions: a small model echoes them back as its "answer" (measured on SmolLM2)
    schema.pop("description", None)
    schema["required"] = ["answer"]
    schema["properties"]["answer"].pop("default", None)


class AnswerRequired(Analysis):
    """The final answer of a ReAct run, as a schema-constrained model is asked for it: the
    ``answer`` is a required string of words (``ANSWER_PATTERN``: a grammar can produce
    neither ``{"answer": null}`` nor ``{"answer": "{"}``). Validation stays ``Analysis``'s, so
    a reply is read the same way."""

    model_config = ConfigDict(title="Analysis", json_schema_extra=_answer_required)

    answer: Annotated[
        str | None,
        WithJsonSchema({"type": "string", "pattern": ANSWER_PATTERN}),
    ] = None

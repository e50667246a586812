"""The offline scripted model: replies given in advance, every request recorded.

``iModel(provider="scripted", replies=[...])``. A reply is:

* a ``str`` - streamed as word-sized deltas;
* a ``dict`` with any of ``text``, ``chunks`` (explicit text deltas), ``thinking``,
  ``tool_calls`` (``[{"name", "arguments", "id"?, "output"?, "is_error"?}]``; ``output`` is used
  on the CLI path, where the agent runs its own tools), ``json`` (any value, sent as JSON text),
  ``usage`` (``{"input_tokens", "output_tokens", "total_cost_usd"}``), ``delay`` (seconds between
  deltas), ``error`` (an exception, or a message for a ServerError) raised after the text;
* a ``dict`` with ``tokens``: the reply token by token with its log-probabilities,
  ``[{"text", "logprob", "top": [[text, logprob], ...]}, ...]`` (the text is their join; one
  delta per token). They are returned as ``ModelResponse.tokens`` (``top`` cut to ``K`` when
  ``logprobs=K`` is asked for); a reply without them, asked for ``logprobs``, gets one certain
  token (logprob 0) per delta. A request with a ``prefix`` (``fork_at_token``) is answered by
  the reply as the continuation of the prefix;
* a ``dict`` with ``events``: CLI chunks given exactly (``[{"type": "text", "text": ...},
  {"type": "tool_use", "tool_id", "name", "arguments"}, ...]``), yielded in order on the CLI
  path (used to replay recorded sessions and in benchmarks);
* a pydantic model instance - sent as its JSON (structured replies work on API and CLI paths);
* an exception instance - raised;
* a callable ``f(request) -> reply`` - computed per request.

With ``cli=True`` the model behaves as a CLI agent: ``stream()`` yields typed chunks, so
``Branch.run`` works offline; ``session_id`` is reported and ``resume`` is recorded.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncGenerator, Iterable
from typing import Any

from pydantic import BaseModel

from lion_nb.errors import ExecutionError, ServerError
from lion_nb.messages import TokenChoice
from lion_nb.models.base import (
    Chunk,
    CLIRequest,
    DeltaSink,
    ModelRequest,
    ModelResponse,
    ToolCall,
)
from lion_nb.models.logprobs import check_logprobs
from lion_nb.tokens import encode_tokens_delta, token_choice
from lion_nb.usage import Usage

_WORDS = re.compile(r"\S+\s*|\s+")


def _split(text: str) -> list[str]:
    return _WORDS.findall(text) or ([text] if text else [])


def _normalise(reply: Any, request: Any) -> dict[str, Any]:
    if callable(reply) and not isinstance(reply, BaseModel | BaseException | type):
        reply = reply(request)
    if isinstance(reply, BaseException):
        return {"error": reply}
    if isinstance(reply, BaseModel):
        return {"text": reply.model_dump_json()}
    if isinstance(reply, str):
        return {"text": reply}
    if isinstance(reply, dict):
        out = dict(reply)
        if "json" in out:
            # non-ASCII text stays readable in the transcript (no \u00e8 escapes)
            out["text"] = json.dumps(out.pop("json"), ensure_ascii=False)
        return out
    raise TypeError(f"unsupported scripted reply: {reply!r}")


class ScriptedProvider:
    name = "scripted"

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        *,
        replies: Iterable[Any] = (),
        default_reply: Any = None,
        cli: bool = False,
        delay: float = 0.0,
        **options: Any,
    ) -> None:
        self.model = model or "scripted"
        self.replies: list[Any] = list(replies)
        self.default_reply = default_reply
        self.is_cli = cli
        self.delay = delay
        self.options = options
        self.requests: list[ModelRequest | CLIRequest] = []
        self.session_id: str | None = None

    def add_replies(self, *replies: Any) -> None:
        self.replies.extend(replies)

    def _next(self, request: Any) -> dict[str, Any]:
        self.requests.append(request)
        if self.replies:
            return _normalise(self.replies.pop(0), request)
        if self.default_reply is not None:
            return _normalise(self.default_reply, request)
        raise ExecutionError("the scripted model has no reply left for this request")

    @staticmethod
    def _error(reply: dict[str, Any]) -> BaseException | None:
        err = reply.get("error")
        if err is None:
            return None
        return err if isinstance(err, BaseException) else ServerError(str(err), provider="scripted")

    def _usage(self, reply: dict[str, Any], prompt: str, text: str) -> Usage:
        if "usage" in reply:
            return Usage.from_dict(reply["usage"])
        return Usage(input_tokens=(len(prompt) + 3) // 4, output_tokens=(len(text) + 3) // 4)

    def _tokens(self, reply: dict[str, Any], request: ModelRequest) -> list[TokenChoice] | None:
        """The reply's tokens (see the module), or None when it has none and none are asked."""
        asked = check_logprobs(request.options.get("logprobs", self.options.get("logprobs")))
        given = reply.get("tokens")
        if given is None:
            if asked is None:
                return None
            text = reply.get("text", "")
            chunks = reply.get("chunks") or _split(text)
            return [token_choice(piece, 0.0, [(piece, 0.0)][:asked]) for piece in chunks]
        tokens = [t if isinstance(t, TokenChoice) else TokenChoice.model_validate(t) for t in given]
        if asked is not None:
            tokens = [t.model_copy(update={"top": t.top[:asked]}) for t in tokens]
        return tokens

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        reply = self._next(request)
        delay = reply.get("delay", self.delay)
        tokens = self._tokens(reply, request)
        text = reply.get("text", "")
        chunks = reply.get("chunks") or _split(text)
        if "chunks" in reply:
            text = "".join(chunks)
        if "tokens" in reply and tokens is not None:
            chunks = [t.text for t in tokens]
            text = "".join(chunks)
        if reply.get("thinking") and on_delta is not None:
            on_delta("thinking", reply["thinking"])
        sent: list[str] = []
        for i, piece in enumerate(chunks):
            if delay:
                await asyncio.sleep(delay)
            sent.append(piece)
            if on_delta is not None:
                on_delta("text", piece)
                if tokens is not None and i < len(tokens):
                    on_delta("tokens", encode_tokens_delta(tokens[i : i + 1]))
        error = self._error(reply)
        if error is not None:
            if hasattr(error, "__dict__"):
                error.partial_text = "".join(sent)  # type: ignore[attr-defined]  # tagged onto any scripted error
            raise error
        calls = []
        for i, call in enumerate(reply.get("tool_calls") or []):
            cid = call.get("id") or f"call_scripted_{len(self.requests)}_{i}"
            args = call.get("arguments") or {}
            if on_delta is not None:
                on_delta("tool_args", json.dumps(args), name=call["name"], call_id=cid)
            calls.append(ToolCall(id=cid, name=call["name"], arguments=args))
        prompt = json.dumps(request.messages, default=str)
        return ModelResponse(
            text=text,
            tool_calls=calls,
            thinking=reply.get("thinking"),
            usage=self._usage(reply, prompt, text),
            model=self.model,
            finish_reason="tool_calls" if calls else "stop",
            tokens=tokens,
        )

    async def stream(self, request: CLIRequest) -> AsyncGenerator[Chunk, None]:
        reply = self._next(request)
        delay = reply.get("delay", self.delay)
        if self.session_id is None:
            self.session_id = f"scripted-{uuid.uuid4()}"
        yield Chunk(type="system", session_id=self.session_id, metadata={"model": self.model})
        if "events" in reply:
            for event in reply["events"]:
                if delay:
                    await asyncio.sleep(delay)
                yield event if isinstance(event, Chunk) else Chunk(**event)
            return
        if reply.get("thinking"):
            yield Chunk(type="thinking", text=reply["thinking"])
        text = reply.get("text", "")
        chunks = reply.get("chunks") or _split(text)
        for piece in chunks:
            if delay:
                await asyncio.sleep(delay)
            yield Chunk(type="text", text=piece)
        for i, call in enumerate(reply.get("tool_calls") or []):
            cid = call.get("id") or f"toolu_scripted_{len(self.requests)}_{i}"
            yield Chunk(
                type="tool_use",
                tool_id=cid,
                name=call["name"],
                arguments=call.get("arguments") or {},
            )
            if "output" in call:
                if delay:
                    await asyncio.sleep(delay)
                yield Chunk(
                    type="tool_result",
                    tool_id=cid,
                    output=call["output"],
                    is_error=bool(call.get("is_error")),
                )
            if call.get("text_after"):
                for piece in _split(call["text_after"]):
                    yield Chunk(type="text", text=piece)
        error = self._error(reply)
        if error is not None:
            yield Chunk(
                type="error",
                text=str(error) or "(empty error)",
                error=error if isinstance(error, Exception) else None,
            )
            return
        usage = self._usage(reply, request.prompt, text)
        yield Chunk(
            type="result",
            session_id=self.session_id,
            metadata={
                "usage": usage.as_dict(),
                "num_turns": 1,
                "total_cost_usd": usage.total_cost_usd,
            },
        )

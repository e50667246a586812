"""Learning what a model's server can do (``models/capabilities.py``), once per server.

* **llama.cpp's ``llama-server``** says it in ``GET /props``: ``total_slots`` (``--parallel``),
  each slot's window (``default_generation_settings.n_ctx``: ``-c`` divided among the slots)
  and whether the chat template takes tools (``chat_template_caps``: SmolLM2's declares none,
  and then the server ignores ``tools`` and ``tool_choice``).
* **llama-cpp-python's ``llama_cpp.server``** has no ``/props``; it is recognised by its
  OpenAPI title. It runs one generation at a time (a second request cuts the running stream
  short) and refuses ``json_schema``.
* Any other server (Ollama, vLLM, LM Studio) is asked once and stays unknown: today's
  behaviour. A refusal teaches the rest (``refuses_json_schema``).

Asked only where it can be a local server: an OpenAI-compatible or Anthropic-format
``base_url`` that is not a vendor cloud's, and never while a cassette is in force (a replay
must not touch the network, and a recording must fit its requests as its replay will). The
embedded model's facts are known without asking (``local_capabilities``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from lion_nb.cassettes.active import current as current_cassette
from lion_nb.errors import ProviderError
from lion_nb.models.capabilities import Capabilities, remember, remembered, server_root

if TYPE_CHECKING:
    from collections.abc import Mapping

    from lion_nb.models.registry import ProviderSpec

__all__ = [
    "VENDOR_HOSTS",
    "capabilities_of",
    "concurrency_limit",
    "probeable",
    "props_facts",
    "refuses_json_schema",
    "server_url",
]

log = logging.getLogger(__name__)

VENDOR_HOSTS = frozenset(
    {
        "api.openai.com",
        "api.anthropic.com",
        "generativelanguage.googleapis.com",
        "openrouter.ai",
    }
)
"""Vendor clouds: never probed (they do what lion_nb asks, and ``/props`` is not theirs)."""

# The wire formats a llama.cpp server speaks (chat completions, Responses, Anthropic Messages).
_PROBED_MODULES = frozenset(
    {"lion_nb.models.openai", "lion_nb.models.openai_responses", "lion_nb.models.anthropic"}
)
_PROBE_TIMEOUT = 10.0  # /props is answered by the HTTP thread, not a slot: quick when alive
_LLAMA_CPP_PYTHON_TITLE = "llama.cpp Python API"  # FastAPI(title="🦙 llama.cpp Python API")


class Served(Protocol):
    """What ``server_url`` reads of a model (``iModel``, or ``models.facts.Described``)."""

    @property
    def base_url(self) -> str | None: ...

    @property
    def spec(self) -> ProviderSpec: ...


class Probed(Served, Protocol):
    """What the probe reads of a model (``iModel`` is one; ``models/imodel.py`` builds on this
    module, never the other way round)."""

    @property
    def model(self) -> str | None: ...

    @property
    def provider_name(self) -> str: ...

    @property
    def api(self) -> str | None: ...

    @property
    def request_defaults(self) -> Mapping[str, Any]: ...

    @property
    def context_window(self) -> int | None: ...

    @property
    def provider(self) -> Any: ...


def server_url(model: Served) -> str | None:
    """The URL a model's server facts are remembered under: its ``base_url`` (or its
    registry entry's, e.g. Ollama's), for the HTTP APIs; None for the embedded model, CLI
    agents, the scripted model and an API left at its vendor's default URL."""
    spec = model.spec
    if spec.kind != "api":
        return None
    url = model.base_url or dict(spec.defaults).get("base_url")
    return url.rstrip("/") if isinstance(url, str) and url else None


def _probeable(model: Probed, url: str | None) -> bool:
    if url is None or model.spec.api(model.api).module not in _PROBED_MODULES:
        return False
    host = (urlsplit(url).hostname or "").lower()
    return not any(host == h or host.endswith("." + h) for h in VENDOR_HOSTS)


def probeable(model: Probed) -> bool:
    """``model``'s server may be a local one that says what it is (``capabilities_of`` asks
    it): an HTTP API in a format llama.cpp speaks, at a URL that is not a vendor cloud's."""
    return _probeable(model, server_url(model))


def _cassette_in_force() -> bool:
    tape = current_cassette()
    return tape is not None and getattr(tape, "mode", None) != "off"


def local_capabilities(model: Probed) -> Capabilities:
    """The embedded model (``provider="local"``), known without asking: one generation at a
    time in its window, JSON-schema grammars, and no tool choice of its own — SmolLM2 calls a
    tool when one is forced (``tool_choice="<name>"``) but not when left to choose
    (``"auto"``), so ReAct asks it for lion_nb's own JSON action requests instead."""
    window = model.context_window
    return Capabilities(json_schema=True, native_tools=False, slots=1, slot_window=window)


async def capabilities_of(model: Probed) -> Capabilities:
    """What ``model``'s server is known to do, asking it first when it has not been asked
    (see the module); cheap once asked."""
    if model.spec.kind == "local":
        return local_capabilities(model)
    url = server_url(model)
    if url is None:
        return Capabilities()
    known = remembered(url)
    if known.probed or not _probeable(model, url) or _cassette_in_force():
        return known
    provider = model.provider
    if getattr(provider, "missing_key", lambda: False)():
        return known  # the call itself says which key is missing; nothing is sent
    return await _probe_once(url, provider)


# One probe per server at a time: the other callers of that loop wait for its answer.
_inflight_lock = threading.Lock()
_inflight: dict[tuple[str, int], asyncio.Future[Capabilities]] = {}


async def _probe_once(url: str, provider: Any) -> Capabilities:
    loop = asyncio.get_running_loop()
    key = (server_root(url), id(loop))
    with _inflight_lock:
        running = _inflight.get(key)
        mine = running is None
        if mine:
            running = _inflight[key] = loop.create_future()
    assert running is not None
    if not mine:
        return await asyncio.shield(running)
    try:
        try:
            facts = await _ask(url, provider)
        except Exception:  # a probe never fails a call: the server stays unknown
            log.info("asking %s what it can do failed", server_root(url), exc_info=True)
            facts = None
        return remember(url, **facts) if facts is not None else remembered(url)
    finally:
        if not running.done():  # the others go on with what is known (also when cancelled)
            running.set_result(remembered(url))
        with _inflight_lock:
            _inflight.pop(key, None)


async def _ask(url: str, provider: Any) -> dict[str, Any] | None:
    """The facts the server at ``url`` gives (``probed=True`` among them), or None when it
    could not be reached (asked again next time: it may be starting)."""
    root = server_root(url)
    props = await provider.get_json(f"{root}/props", _PROBE_TIMEOUT)
    if props is None:
        return None
    status, body = props
    if status == 200 and isinstance(body, dict) and "total_slots" in body:
        facts = {**props_facts(body), "server": "llama-server"}
        log.info("%s: llama-server, %s", root, facts)
        return facts
    spec = await provider.get_json(f"{root}/openapi.json", _PROBE_TIMEOUT)
    if spec is not None and _is_llama_cpp_python(spec[1]):
        log.info("%s: llama_cpp.server (one generation at a time, no json_schema)", root)
        facts = {"slots": 1, "json_schema": False, "native_tools": False}
        return {**facts, "server": "llama_cpp.server", "probed": True}
    return {"probed": True}


def _is_llama_cpp_python(openapi: Any) -> bool:
    info = openapi.get("info") if isinstance(openapi, dict) else None
    return isinstance(info, dict) and _LLAMA_CPP_PYTHON_TITLE in str(info.get("title", ""))


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def props_facts(props: dict[str, Any]) -> dict[str, Any]:
    """``Capabilities`` fields from llama-server's ``/props``: its slots, each slot's window
    (``default_generation_settings.n_ctx``; older servers: ``n_ctx / total_slots``) and
    whether its chat template takes tools and emits tool calls."""
    slots = _positive(props.get("total_slots"))
    settings = props.get("default_generation_settings")
    window = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if window is None and (total := _positive(props.get("n_ctx"))) is not None:
        window = total // (slots or 1)
    caps = props.get("chat_template_caps")
    tools = None
    if isinstance(caps, dict):
        tools = bool(caps.get("supports_tools")) and bool(caps.get("supports_tool_calls"))
    return {
        "slots": slots,
        "slot_window": window,
        "native_tools": tools,
        "json_schema": True,  # llama-server turns a JSON schema into a grammar
        "probed": True,
    }


def concurrency_limit(model: Probed) -> tuple[str, int] | None:
    """The limiter key and the number of generations ``model`` may have in flight: its
    ``max_concurrent=N``, else its server's slots when known; None: no limit (a vendor
    cloud, an unknown server)."""
    url = server_url(model)
    key = f"server:{server_root(url)}" if url else f"model:{model.provider_name}:{model.model}"
    given = _positive(model.request_defaults.get("max_concurrent"))
    if given is not None:
        return key, given
    slots = remembered(url).slots if url else None
    return (key, slots) if slots else None


# llama_cpp.server's pydantic refusal of {"type": "json_schema"} (HTTP 500):
# "Input should be 'text' or 'json_object'".
_JSON_OBJECT_ONLY = ("'text' or 'json_object'", '"text" or "json_object"')


def refuses_json_schema(error: BaseException) -> bool:
    """The server refused ``response_format={"type": "json_schema"}`` (it takes
    ``json_object`` only)."""
    if not isinstance(error, ProviderError):
        return False
    said = f"{error.message} {error.body or ''}"
    return any(words in said for words in _JSON_OBJECT_ONLY)

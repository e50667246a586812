"""The provider registry: one entry per provider, holding everything the rest of lion_nb needs
to know about it without constructing it (nor importing its module).

An entry says where the class lives (imported on first use), what kind of model it is (an HTTP
API, a CLI agent, the embedded local model, the offline scripted model), the context windows of
its known models, the environment variables its key is read from, the options it accepts (an
unknown one is refused by name), the options that are machine-local (never matched on a
cassette), the other wire APIs it speaks (``api="responses"``) and the extra that installs its
SDK. ``iModel`` (``iModel.spec``), ``models/facts.py`` (windows, CLI-ness),
``cassettes/matching.py`` (what a recording matches on) and ``operations/run.py`` (which
providers are CLI agents) all read the entry; adding a provider is one module plus one entry
here (or ``register_provider`` from user code).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass, field
from typing import Any, Literal

from lion_nb.errors import ConfigurationError, name_key_variables

__all__ = [
    "COMMON_LOCAL_OPTIONS",
    "GEMINI_OPTIONS",
    "LOCAL_SAMPLING_OPTIONS",
    "MODEL_FACTS",
    "PROVIDERS",
    "RESPONSES_OPTIONS",
    "ApiSpec",
    "ProviderKind",
    "ProviderSpec",
    "cli_provider_names",
    "env_key",
    "key_env_names",
    "register_provider",
]

ProviderKind = Literal["api", "cli", "local", "scripted"]

MODEL_FACTS = frozenset({"context_window", "max_concurrent"})
"""Settings that describe the model or its server (``iModel.context_window``, the limiter of
``models/slots.py`` read them); never given to the provider nor sent."""

COMMON_LOCAL_OPTIONS = frozenset(
    {
        # credentials and transport: how a call travels, not what it asks
        "api_key",
        "api_key_env",
        "headers",
        "base_url",
        "http_client",
        "timeout",
        "max_retries",
        "sleep",
        "backoff",
        "max_backoff",
        "max_retry_after",
        "stream",
        "stream_options",
        *MODEL_FACTS,
    }
)
"""Options of every provider that never match on a cassette (a recording made on one machine
replays on another); a provider's entry adds its own machine-local ones."""

_CLI_LOCAL = frozenset({"cwd", "cli_path", "env", "grace", "terminate_grace"})

_OPENAI_WINDOWS = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
)
_CLAUDE_WINDOWS = (
    ("claude", 200_000),
    ("sonnet", 200_000),
    ("opus", 200_000),
    ("haiku", 200_000),
)
_GEMINI_WINDOWS = (("gemini-3", 1_048_576), ("gemini-2.5", 1_048_576), ("gemini-2.0", 1_048_576))
_OPEN_WINDOWS = (("smollm2", 8_192),)


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One wire API of a provider (``iModel(provider="openai", api="responses")``).
    ``logprobs``: it gives log-probabilities (``logprobs=K``), though it cannot continue a
    reply's prefix."""

    module: str
    cls: str
    options: frozenset[str] | None = None  # None: as the provider's entry says
    logprobs: bool = False


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """A provider's entry. ``defaults``: constructor defaults (an alias' ``base_url``);
    ``kind``: ``"api"`` (HTTP), ``"cli"`` (a CLI agent ``run()`` streams), ``"local"``
    (in-process weights), ``"scripted"`` (offline fixtures; ``cli=True`` makes it a CLI);
    ``windows``: ``(name prefix, tokens)`` of known models; ``default_window``: the window when
    no name matches; ``local_options``: options that never match on a cassette besides
    ``COMMON_LOCAL_OPTIONS``; ``key_env``: environment variables the key is read from, in
    order; ``options``: the iModel options it accepts (None: any, passed through to the
    server); ``apis``: ``(name, ApiSpec)`` pairs of other wire APIs (the entry's own class is
    the default API, ``default_api``); ``extra``: the pip extra that installs its SDK;
    ``prices``: its provider id in the price table (``models/cost.py``), None when it has no
    prices (a local server); ``thinking_blocks``: its API wants the signed thinking blocks of
    an assistant turn back (``compile_messages``); ``logprobs``: its default API gives
    log-probabilities (``logprobs=K``) and continues a reply's prefix (``fork_at_token``);
    ``requires``: modules its extra installs."""

    module: str
    cls: str
    defaults: tuple[tuple[str, Any], ...] = ()
    kind: ProviderKind = "api"
    windows: tuple[tuple[str, int], ...] = ()
    default_window: int | None = None
    local_options: frozenset[str] = frozenset()
    key_env: tuple[str, ...] = ()
    options: frozenset[str] | None = None
    apis: tuple[tuple[str, ApiSpec], ...] = ()
    default_api: str | None = None
    extra: str | None = None
    prices: str | None = None
    thinking_blocks: bool = False  # its API wants signed thinking blocks back (tool loops)
    logprobs: bool = False  # its default API gives logprobs=K and continues a reply's prefix
    requires: tuple[str, ...] = field(default=())  # modules the extra provides

    @property
    def unmatched_options(self) -> frozenset[str]:
        """Options a cassette never matches on: transport, credentials, machine-local."""
        return COMMON_LOCAL_OPTIONS | self.local_options

    def api(self, name: str | None) -> ApiSpec:
        """Where the class for wire API ``name`` lives (None: the default API). An API the
        provider does not speak is a ConfigurationError naming the ones it does."""
        if name is None or name == self.default_api:
            return ApiSpec(self.module, self.cls, self.options)
        for key, spec in self.apis:
            if key == name:
                return spec
        known = [a for a in (self.default_api, *(k for k, _ in self.apis)) if a]
        if not known:
            raise ConfigurationError(f"api={name!r}: this provider speaks one API (leave out api=)")
        raise ConfigurationError(f"unknown api {name!r}; this provider speaks {', '.join(known)}")

    def window(self, model_name: str | None) -> int | None:
        """The window of a known model name (prefix, or a ``vendor/name`` path), else the
        entry's default; an unknown window stays unknown, never guessed."""
        name = (model_name or "").lower()
        if name:
            for prefix, window in self.windows:
                if name.startswith(prefix) or f"/{prefix}" in name:
                    return window
        return self.default_window

    def check_options(
        self, options: dict[str, Any], api: str | None = None, name: str | None = None
    ) -> None:
        """Refuse, by name, an option this provider (or its ``api``) does not accept."""
        accepted = self.api(api).options
        if accepted is None:
            return
        unknown = sorted(k for k in options if k not in accepted | COMMON_LOCAL_OPTIONS)
        if unknown:
            who = f"{name or self.cls}" + (f" (api={api!r})" if api else "")
            raise ConfigurationError(
                f"{who} does not understand {', '.join(map(repr, unknown))}; its options are "
                f"{', '.join(sorted(accepted - COMMON_LOCAL_OPTIONS))}"
            )

    def load(self, api: str | None = None) -> type:
        """The provider class (importing its module); a missing SDK extra is a
        ConfigurationError naming the install command."""
        spec = self.api(api)
        if self.extra and any(importlib.util.find_spec(m) is None for m in self.requires):
            raise ConfigurationError(
                f"this provider needs its SDK: pip install 'lion_nb[{self.extra}]'"
            )
        try:
            module = importlib.import_module(spec.module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and spec.module.startswith(exc.name):
                raise ConfigurationError(
                    f"the provider module {spec.module} is not installed"
                ) from exc
            raise
        return getattr(module, spec.cls)


# Request options the Anthropic Messages API takes (models/anthropic.py), plus lion_nb's own.
_ANTHROPIC_OPTIONS = frozenset(
    {
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "stop",
        "thinking",
        "metadata",
        "service_tier",
        "extra_body",
        "anthropic_version",
        "anthropic_beta",
        *COMMON_LOCAL_OPTIONS,
    }
)

# Request options of the Gemini API (models/gemini.py maps each into the request).
GEMINI_OPTIONS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_output_tokens",
        "stop",
        "stop_sequences",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "candidate_count",
        "response_mime_type",
        "thinking_budget",
        "thinking_level",
        "include_thoughts",
        "safety_settings",
        "cached_content",
        "generation_config",
        *COMMON_LOCAL_OPTIONS,
    }
)

# Request options of OpenAI's Responses API (models/openai_responses.py).
RESPONSES_OPTIONS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_output_tokens",
        "reasoning",
        "reasoning_effort",
        "reasoning_summary",
        "verbosity",
        "text",
        "store",
        "parallel_tool_calls",
        "truncation",
        "user",
        "metadata",
        "service_tier",
        "previous_response_id",
        "include",
        "prompt_cache_key",
        "safety_identifier",
        "max_tool_calls",
        "top_logprobs",
        "logprobs",  # logprobs=K: top_logprobs=K and the output text's logprobs included
        *COMMON_LOCAL_OPTIONS,
    }
)

LOCAL_SAMPLING_OPTIONS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "typical_p",
        "max_tokens",
        "stop",
        "seed",
        "repeat_penalty",
        "presence_penalty",
        "frequency_penalty",
    }
)
"""The embedded model's request options (``models/local.py`` passes them to llama.cpp)."""

_LOCAL_OPTIONS = LOCAL_SAMPLING_OPTIONS | {
    "model_path",
    "n_ctx",
    "n_threads",
    "max_items",
    "max_length",
    "logprobs",
    *COMMON_LOCAL_OPTIONS,
}

PROVIDERS: dict[str, ProviderSpec] = {
    "openai": ProviderSpec(
        "lion_nb.models.openai",
        "OpenAIProvider",
        logprobs=True,
        windows=_OPENAI_WINDOWS,
        key_env=("OPENAI_API_KEY",),
        default_api="chat",
        apis=(
            (
                "responses",
                ApiSpec(
                    "lion_nb.models.openai_responses",
                    "OpenAIResponsesProvider",
                    RESPONSES_OPTIONS,
                    logprobs=True,
                ),
            ),
        ),
        prices="openai",
    ),
    "anthropic": ProviderSpec(
        "lion_nb.models.anthropic",
        "AnthropicProvider",
        windows=_CLAUDE_WINDOWS,
        default_window=200_000,
        key_env=("ANTHROPIC_API_KEY",),
        options=_ANTHROPIC_OPTIONS,
        prices="anthropic",
        thinking_blocks=True,
    ),
    "gemini": ProviderSpec(
        "lion_nb.models.gemini",
        "GeminiProvider",
        windows=_GEMINI_WINDOWS,
        key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        options=GEMINI_OPTIONS,
        prices="google",
        thinking_blocks=True,  # thought signatures, sent back on their parts
    ),
    "ollama": ProviderSpec(
        "lion_nb.models.openai",
        "OpenAIProvider",
        (("base_url", "http://127.0.0.1:11434/v1"),),
        logprobs=True,
        windows=_OPEN_WINDOWS,
    ),
    "openrouter": ProviderSpec(
        "lion_nb.models.openai",
        "OpenAIProvider",
        (("base_url", "https://openrouter.ai/api/v1"),),
        logprobs=True,
        windows=_OPENAI_WINDOWS + _CLAUDE_WINDOWS + _GEMINI_WINDOWS + _OPEN_WINDOWS,
        key_env=("OPENROUTER_API_KEY",),
        prices="openrouter",
    ),
    "scripted": ProviderSpec(
        "lion_nb.models.scripted",
        "ScriptedProvider",
        logprobs=True,
        kind="scripted",
        local_options=frozenset({"replies", "default_reply", "delay", "cli"}),
    ),
    "local": ProviderSpec(
        "lion_nb.models.local",
        "LocalProvider",
        logprobs=True,
        kind="local",
        default_window=2048,  # LocalProvider's n_ctx default
        local_options=frozenset({"model_path", "n_threads"}),
        options=_LOCAL_OPTIONS,
    ),
    "claude_code": ProviderSpec(
        "lion_nb.models.claude_code",
        "ClaudeCodeProvider",
        kind="cli",
        windows=_CLAUDE_WINDOWS,
        local_options=_CLI_LOCAL,
    ),
    "codex": ProviderSpec(
        "lion_nb.models.codex",
        "CodexProvider",
        kind="cli",
        windows=_OPENAI_WINDOWS,
        local_options=_CLI_LOCAL,
    ),
    "gemini_cli": ProviderSpec(
        "lion_nb.models.gemini_cli",
        "GeminiCLIProvider",
        kind="cli",
        windows=_GEMINI_WINDOWS,
        local_options=_CLI_LOCAL,
    ),
}


def register_provider(
    name: str, module: str, cls: str, *, update: bool = False, **facts: Any
) -> ProviderSpec:
    """Register a provider class by import path; it is imported on first use. ``facts`` are
    the other ``ProviderSpec`` fields (``kind="cli"``, ``windows=...``, ``key_env=...``)."""
    if name in PROVIDERS and not update:
        raise ValueError(f"provider {name!r} is already registered (pass update=True to replace)")
    for key in ("local_options", "options"):
        if facts.get(key) is not None:
            facts[key] = frozenset(facts[key])
    for key in ("windows", "key_env", "defaults", "apis", "requires"):
        if isinstance(facts.get(key), dict):
            facts[key] = tuple(facts[key].items())
        elif facts.get(key) is not None:
            facts[key] = tuple(facts[key])
    spec = ProviderSpec(module, cls, **facts)
    PROVIDERS[name] = spec
    return spec


def key_env_names(value: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """``api_key_env`` as given to a provider (a name, several, or None) as a tuple."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def env_key(names: tuple[str, ...]) -> str | None:
    """The key from the first of ``names`` set in the environment."""
    for name in names:
        if value := os.environ.get(name):
            return value
    return None


def cli_provider_names() -> list[str]:
    """The registered CLI agents (what ``run()`` streams), for messages."""
    return sorted(name for name, spec in PROVIDERS.items() if spec.kind == "cli")


def _key_variables(provider: str) -> tuple[str, ...]:
    spec = PROVIDERS.get(provider)
    return spec.key_env if spec is not None else ()


name_key_variables(_key_variables)  # AuthenticationError's hint names these (errors sits below)

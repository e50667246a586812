"""The one exception tree of lion_nb.

    LionError
    ├── ConfigurationError        no usable model / bad settings (raised at first use, not import)
    │   ├── EngineUnavailable     engine="ray" without lion_nb[ray] (these five: lion_nb.flow.errors)
    │   └── ResponseFormatError   a response_format that is no model or schema (also a TypeError
    │                             and a ValueError: what callers caught before)
    ├── ExecutionError            a model call did not produce a response
    │   ├── ContextWindowError    a request does not fit the model's context window
    │   └── ProviderError         ...classified by what the provider said
    │       ├── AuthenticationError   401 / 403, bad or missing key
    │       ├── RateLimitError        429; ``retry_after`` seconds when the provider said
    │       ├── ServerError           5xx, overloaded
    │       ├── ProviderTimeout       request timeout or the run() stream deadline
    │       ├── MalformedResponse     a body or stream line that is not what the protocol promises
    │       ├── ConnectionLost        the connection or process ended mid-stream
    │       └── CLIError              a CLI agent could not start or exited non-zero
    │           └── CLINotFound       the executable is not installed
    ├── OperationError            unknown / unsupported operation in a graph node
    │   ├── ReActError            a ReAct run ended without an answer (or without a forced call)
    │   ├── FlowError             Flow.run(raise_errors=True) and some nodes failed
    │   ├── DependencyFailed      why a flow node was skipped
    │   ├── NotTransferable       something a Ray node needs cannot travel to a worker
    │   ├── WorkerLost            a Ray worker died under an attempt (Ray retries it)
    │   └── RemoteError           a worker-side error that could not travel back as itself
    ├── ParseError                text could not be parsed into the requested type
    └── CassetteError             a cassette file cannot be used (damaged in replay mode, newer
        │                         format version, unreadable)
        └── CassetteMiss          replay mode met a request the cassette has not recorded

Errors carry context (status code, stderr tail, target type, raw text) and are raised, never
returned as strings, except where the ADR makes a value the contract (parse ``handle_validation``).
Secrets never appear in messages: providers pass bodies through ``redact`` (``lion_nb.secrets``)
before raising.

In IPython and Jupyter each one prints a few lines (``lion_nb.tracebacks``): its class and
message, the fix (``hint``) when the message does not say it already, the cause in one line and
the user's own line; ``%xmode Verbose`` or ``lion_nb.debug()`` print the full traceback.
Scripts keep ordinary tracebacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lion_nb.secrets import redact as redact  # the one redactor; importable from here too


class LionError(Exception):
    """Base of every error lion_nb raises on purpose.

    ``hint``: what to do, when the error knows and its message does not say it already (a
    class default, or set per instance); IPython shows it as the block's "fix:" line."""

    hint: str | None = None

    @property
    def _render_traceback_(self) -> Callable[[], list[str]]:
        """IPython's seam: the short block of ``lion_nb.tracebacks``; absent (so IPython prints
        the full traceback) under ``%xmode Verbose`` or ``lion_nb.debug()``."""
        # lazy: lion_nb.tracebacks loads traceback and sysconfig (~6 ms); only IPython showing
        # an error needs it
        from lion_nb.tracebacks import renderer

        return renderer(self)


class ConfigurationError(LionError):
    """lion_nb is not configured for what was asked (e.g. no chat model)."""


class ResponseFormatError(ConfigurationError, TypeError, ValueError):
    """``response_format`` is neither a pydantic model nor a JSON schema; raised before
    anything is sent or recorded. A TypeError (a value of the wrong kind, as before) and a
    ValueError (a dict that is no schema) too, so existing ``except`` clauses keep working."""

    hint = "pass the pydantic model class itself (response_format=Person, not 'Person') or a schema"


class ExecutionError(LionError):
    """A model call failed; there is no response to read."""


class ContextWindowError(ExecutionError):
    """A request does not fit the model's context window; nothing was recorded, and the
    message says what to do (``fit_context=True``). ``window`` is the window in tokens (None:
    unknown), ``tokens`` the request's size, ``provider_error`` the provider's own report when
    it was the provider that refused (else None: refused before sending)."""

    def __init__(
        self,
        message: str,
        *,
        window: int | None,
        tokens: int | None,
        provider_error: BaseException | None = None,
    ) -> None:
        super().__init__(message)
        self.window = window
        self.tokens = tokens
        self.provider_error = provider_error
        if "fit_context=True" not in message and "max_tokens" not in message:
            # lion_nb's own messages say what to do (operations/window.py); others get this
            self.hint = "pass fit_context=True to send only the most recent turns that fit"


class ProviderError(ExecutionError):
    """A provider failed in a way we could classify.

    ``provider``: the provider name; ``status``: HTTP status or process exit code; ``body``: the
    (redacted, truncated) text the provider returned; ``retryable``: whether repeating may help.
    """

    retryable: bool = False
    # What the reply had shown when it failed mid-stream (set by ``with_partial``; absent on an
    # error raised before any of the reply arrived): nothing the user saw is lost.
    partial_text: str
    partial_thinking: str

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        body: str | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.body = body
        if retryable is not None:
            self.retryable = retryable

    def with_partial(self, text: str, thinking: str, provider: str | None) -> ProviderError:
        """This error, carrying the reply's text and thinking so far (and ``provider`` when it
        names none); what a stream accumulator raises when the stream fails midway."""
        self.partial_text = text
        self.partial_thinking = thinking
        if self.provider is None:
            self.provider = provider
        return self

    def __str__(self) -> str:
        where = f"[{self.provider}] " if self.provider else ""
        status = f" (status {self.status})" if self.status is not None else ""
        return f"{where}{self.message}{status}"


class AuthenticationError(ProviderError):
    """The provider rejected the credentials, or there were none to send."""

    def __init__(self, message: str, **kw: Any) -> None:
        super().__init__(message, **kw)
        if "api_key=" not in message:  # the fix: the key's variable and api_key=
            where = " or ".join(f"${n}" for n in _key_env(self.provider))
            self.hint = (
                f"set {where}, or pass api_key= to iModel(...)" if where else "pass api_key="
            )


class RateLimitError(ProviderError):
    """The provider asked us to slow down."""

    retryable = True
    hint = "wait a little and run the cell again, or lower iModel(..., max_concurrent=N)"

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServerError(ProviderError):
    """The provider failed on its side (5xx, overloaded)."""

    retryable = True


class ProviderTimeout(ProviderError):
    """No (complete) answer within the allowed time."""

    retryable = True


class MalformedResponse(ProviderError):
    """The provider sent something the protocol does not allow."""


class ConnectionLost(ProviderError):
    """The connection or the CLI process ended before the stream was complete."""

    retryable = True
    hint = "check that the server at base_url is running and reachable, then run the cell again"


class CLIError(ProviderError):
    """A CLI agent could not be started or ended with an error. ``stderr`` holds its tail."""

    def __init__(self, message: str, *, stderr: str | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.stderr = stderr


class CLINotFound(CLIError):
    """The CLI executable is not installed or not on PATH."""

    hint = "install the CLI, or give its path: iModel(..., cli_path=...)"


class OperationError(LionError):
    """An operation name could not be resolved or executed by a graph node."""


class ReActError(OperationError):
    """A ReAct run ended without what it needed from the model: no answer in its answer round,
    or no call of a tool the caller forced. ``round``: the round's number; ``sent``: what the
    model sent there (truncated); ``missing``: "answer" or "tool call"."""

    def __init__(
        self, message: str, *, round: int, sent: str = "", missing: str = "answer"
    ) -> None:
        super().__init__(message)
        self.round = round
        self.sent = sent
        self.missing = missing


class ParseError(LionError, ValueError):
    """Text could not be turned into the requested type.

    ``target``: the requested type (or its name); ``raw``: the text that failed.
    Subclasses ValueError so ADR callers catching ValueError keep working.
    """

    def __init__(self, message: str, *, target: Any = None, raw: str | None = None) -> None:
        super().__init__(message)
        self.target = target
        self.raw = raw


class CassetteError(LionError):
    """A cassette cannot be used as asked. ``path``: the cassette file; ``line``: the damaged
    line's number, when one is to blame."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class CassetteMiss(CassetteError):
    """A request the cassette has no recording of, where no model may be called (mode
    ``"replay"``), or a recording that ends where the original caller stopped reading.

    ``provider``, ``model``, ``instruction`` (the request's last instruction), ``request`` (the
    request as matched), ``nearest`` (``{"call", "line", "cassette"}`` of the most similar
    recording, or None) and ``differences`` (``[(path, recorded, requested), ...]`` against it).
    The message is short and says what differs; IPython shows it in the short block of every
    lion_nb error (a prompt that is not on the cassette is not a bug to debug)."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        instruction: str | None = None,
        request: dict[str, Any] | None = None,
        nearest: dict[str, Any] | None = None,
        differences: list[tuple[str, Any, Any]] | None = None,
    ) -> None:
        super().__init__(message, path=path, line=(nearest or {}).get("line"))
        self.provider = provider
        self.model = model
        self.instruction = instruction
        self.request = request
        self.nearest = nearest
        self.differences = differences or []


KeyVariables = Callable[[str], tuple[str, ...]]
"""A provider's name -> the environment variables its API key is read from."""
_key_variables: KeyVariables | None = None


def name_key_variables(lookup: KeyVariables) -> None:
    """Tell ``AuthenticationError`` where a provider's key variables are written: the provider
    registry (``lion_nb.models.registry``) does when it loads. The errors sit below every model
    module and import none of them; an error is raised by a provider, so the registry is there."""
    global _key_variables
    _key_variables = lookup


def _key_env(provider: str | None) -> tuple[str, ...]:
    """The environment variables ``provider``'s key is read from (its registry entry)."""
    if not provider or _key_variables is None:
        return ()
    try:
        return tuple(_key_variables(provider) or ())
    except Exception:  # a hint must never fail the error it explains
        return ()

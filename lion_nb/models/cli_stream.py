"""What the three CLI agent providers share: error classification and the stream pump.

A provider file (``claude_code``, ``codex``, ``gemini_cli``) supplies three pure pieces — the
command line (``build_argv``), the stdin bytes, and an event mapper (provider event dict ->
``Chunk`` list) — and ``CLIProviderBase.stream`` does the I/O: start the process, feed stdout
to a ``JSONLinesDecoder``, map every event, and close the process group in ``finally`` so it is
gone when the consumer's ``aclose()`` returns.

Failure policy of ``stream()``:

- it *raises* only when the CLI cannot be started (``CLINotFound`` names the npm package);
- everything after the start arrives as a ``Chunk(type="error", error=<ProviderError>)``:
  provider-reported failures (classified 401/429/5xx...), output cut mid-line
  (``ConnectionLost``), or a non-zero exit with no error reported (``CLIError`` with the exit
  code and the stderr tail). At most one such fatal chunk comes from the exit path;
- a malformed line is skipped with a warning (the text around it is kept) and counted in the
  result chunk's ``metadata["malformed_lines"]``.

Secrets (``api_key``, and ``env=`` values whose names look secret to
``lion_nb.secrets.is_secret_name``) and anything shaped like a secret are redacted from error and
result chunks and stderr tails (``lion_nb.secrets.redact``); environment values are never logged.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import AsyncGenerator, Mapping
from typing import Any, ClassVar, Protocol

from lion_nb.errors import (
    AuthenticationError,
    CLIError,
    ConnectionLost,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
)
from lion_nb.models.base import Chunk, CLIRequest
from lion_nb.models.cli_process import DEFAULT_GRACE, CLIProcess, merged_env, resolve_executable
from lion_nb.models.jsonl import JSONLinesDecoder, MalformedLine
from lion_nb.secrets import is_secret_name, redact, secret_values

logger = logging.getLogger(__name__)

EMPTY_ERROR = "(empty error)"


class EventMapper(Protocol):
    """Pure translation of one provider's decoded events into ``Chunk``s."""

    def map(self, event: dict[str, Any]) -> list[Chunk]: ...

    def finish(self) -> list[Chunk]:
        """Chunks still pending when the stream ends (e.g. an error never confirmed)."""
        ...


# -- error classification ----------------------------------------------------------------------

_STATUS_IN_TEXT = re.compile(
    r"(?:status|code)\W{0,3}(\d{3})\b"
    r"|\((\d{3})\)"
    r"|\b(\d{3}) (?:too many requests|unauthorized|forbidden|internal server error"
    r"|service unavailable|bad gateway|gateway timeout|overloaded)"
)
_TEXT_RULES: tuple[tuple[type[ProviderError], re.Pattern[str]], ...] = (
    (
        RateLimitError,
        re.compile(
            r"rate.?limit|too many requests|quota|resource has been exhausted|resource_exhausted"
        ),
    ),
    (
        AuthenticationError,
        re.compile(
            r"unauthori[sz]ed|invalid api key|api key not valid|incorrect api key|authentication"
            r"|permission_denied|unauthenticated|forbidden|invalid x-api-key"
        ),
    ),
    (
        ServerError,
        re.compile(
            r"overloaded|internal (?:server )?error|server error|server had an error|high demand"
            r"|service unavailable|bad gateway|unavailable"
        ),
    ),
    (ProviderTimeout, re.compile(r"timed out|timeout|deadline exceeded")),
)
_KINDS: dict[str, type[ProviderError]] = {
    "rate_limit": RateLimitError,
    "rate_limit_error": RateLimitError,
    "authentication_failed": AuthenticationError,
    "authentication_error": AuthenticationError,
    "permission_error": AuthenticationError,
    "server_error": ServerError,
    "api_error": ServerError,
    "overloaded_error": ServerError,
    "overloaded": ServerError,
}


def _class_for_status(status: int | None) -> type[ProviderError] | None:
    if status is None:
        return None
    if status in (401, 403):
        return AuthenticationError
    if status == 429:
        return RateLimitError
    if status == 408:
        return ProviderTimeout
    if 500 <= status <= 599:
        return ServerError
    return None  # other 4xx: let the message decide (a Gemini bad key is a 400)


def classify_error(
    message: str | None,
    *,
    provider: str | None,
    status: int | None = None,
    kind: str | None = None,
    body: str | None = None,
) -> ProviderError:
    """A ``ProviderError`` subclass chosen from the HTTP status, the provider's error kind, or
    failing both, the wording of the message (the CLIs often report only text)."""
    text = (message or "").strip() or EMPTY_ERROR
    lower = text.lower()
    if status is None and (found := _STATUS_IN_TEXT.search(lower)):
        status = int(next(g for g in found.groups() if g))
    cls = _class_for_status(status) or _KINDS.get(kind or "")
    if cls is None:
        cls = next((c for c, rule in _TEXT_RULES if rule.search(lower)), ProviderError)
    return cls(text, provider=provider, status=status, body=body)


def error_chunk(error: ProviderError, raw: Any = None, *, benign_eos: bool = False) -> Chunk:
    message = getattr(error, "message", None) or str(error) or EMPTY_ERROR
    return Chunk(type="error", text=message, error=error, raw=raw, benign_eos=benign_eos)


def redact_error(error: Exception, secrets: list[str]) -> None:
    """Scrub secrets (and secret shapes) from a ProviderError in place (message, args, body,
    stderr)."""
    if not isinstance(error, ProviderError):
        return
    error.message = redact(error.message, secrets)
    error.args = (error.message,)
    if error.body:
        error.body = redact(error.body, secrets)
    if isinstance(error, CLIError) and error.stderr:
        error.stderr = redact(error.stderr, secrets)


def redact_data(value: Any, secrets: list[str]) -> Any:
    """A copy of ``value`` (a decoded JSON event) with every secret, and every string shaped
    like one, masked in its strings (``lion_nb.secrets.redact``)."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {k: redact_data(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_data(v, secrets) for v in value]
    return value


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


# -- the provider skeleton ---------------------------------------------------------------------


class CLIProviderBase:
    """Constructor, environment and ``stream()`` shared by the CLI providers.

    ``cli_path``: executable path or name (default: ``executable`` on PATH); ``cwd``: working
    directory of the agent; ``env``: merged over ``os.environ`` (``None`` values unset a
    variable); ``extra_args``: appended to the generated flags. Other keyword options are kept
    in ``self.options`` (request defaults such as ``timeout`` pass through untouched), and
    ``CLIRequest.options`` override them per call. ``terminate_grace`` (seconds, default 2)
    is the SIGTERM -> SIGKILL grace used when the stream is closed.
    """

    name: ClassVar[str] = "cli"
    executable: ClassVar[str] = ""
    package: ClassVar[str] = ""  # the npm package that installs ``executable``
    api_key_env: ClassVar[tuple[str, ...]] = ()  # where ``api_key`` is put for the child
    vendor_env: ClassVar[tuple[str, ...]] = ()  # prefixes of the agent's own variables
    is_cli: ClassVar[bool] = True

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        *,
        cli_path: str | None = None,
        cwd: str | None = None,
        env: Mapping[str, str | None] | None = None,
        extra_args: list[str] | tuple[str, ...] | None = None,
        **options: Any,
    ) -> None:
        self.model = model
        self.__api_key = api_key
        self.cli_path = str(cli_path) if cli_path is not None else None
        self.cwd = str(cwd) if cwd is not None else None
        self.env = dict(env or {})
        self.extra_args = [str(a) for a in (extra_args or ())]
        self.options = dict(options)
        self.session_id: str | None = None

    def __repr__(self) -> str:
        model = f"model={self.model!r}" if self.model else ""
        return f"{type(self).__name__}({model})"

    # -- pieces a provider supplies ---------------------------------------------------------

    def build_argv(self, request: CLIRequest) -> list[str]:
        raise NotImplementedError

    def stdin_for(self, request: CLIRequest) -> bytes | None:
        """Bytes for the CLI's stdin; ``None`` means /dev/null."""
        return None

    def new_mapper(self) -> EventMapper:
        raise NotImplementedError

    def exit_error(self, code: int, stderr: str) -> ProviderError:
        """The error for a non-zero exit that the stream itself did not explain."""
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        detail = last_line(stderr)
        return CLIError(
            f"{self.name} {how}" + (f": {detail}" if detail else ""),
            provider=self.name,
            status=code,
            stderr=stderr,
        )

    # -- shared machinery -------------------------------------------------------------------

    def _option(self, request: CLIRequest, key: str, default: Any = None) -> Any:
        if key in request.options:
            return request.options[key]
        return self.options.get(key, default)

    def child_env(self) -> dict[str, str]:
        """``os.environ`` without other vendors' credentials, then ``api_key`` and ``env=``.

        The agent runs the user's tools in the user's project, so the ordinary environment
        (PATH, HOME, locale, proxies, virtualenv...) is passed on; a secret-named variable
        (``lion_nb.secrets.is_secret_name``: ``*_KEY``, ``*_TOKEN``, ``*SECRET*``, ``*PASSWORD*``,
        ``*CREDENTIALS*``, ``*AUTH*``, ``*COOKIE*``...) is passed only when it is the agent's own
        (``vendor_env`` prefixes) or given explicitly through ``env=``.
        """
        overrides: dict[str, str | None] = {
            k: None for k in os.environ if is_secret_name(k) and not k.startswith(self.vendor_env)
        }
        if self.__api_key:
            overrides.update(dict.fromkeys(self.api_key_env, self.__api_key))
        overrides.update(self.env)
        return merged_env(overrides)

    def _secrets(self, env: Mapping[str, str]) -> list[str]:
        """Values to mask: ``api_key``, every secret-named option and every secret-named
        variable of the child's ``env`` and of ``os.environ`` (``lion_nb.secrets.secret_values``:
        short values are flags, not keys, and masking them would only garble messages)."""
        secrets = [self.__api_key] if self.__api_key and len(self.__api_key) >= 4 else []
        # the parent's too: a variable withheld from the child may still reach its output
        # (a project file, a tool that reads it elsewhere)
        return secrets + secret_values({**os.environ, **env}) + secret_values(self.options)

    async def stream(self, request: CLIRequest) -> AsyncGenerator[Chunk, None]:
        """Run the CLI once and yield its events as ``Chunk``s (see the module docstring).

        The process group is terminated and reaped in ``finally``: on normal end, on error, on
        cancellation and inside this generator's ``aclose()``.
        """
        env = self.child_env()
        argv = self.build_argv(request)
        argv[0] = resolve_executable(argv[0], env, package=self.package, provider=self.name)
        grace = self._option(request, "terminate_grace", DEFAULT_GRACE)
        proc = CLIProcess(
            argv,
            stdin=self.stdin_for(request),
            env=env,
            cwd=self.cwd,
            terminate_grace=grace,
            package=self.package,
            provider=self.name,
        )
        run = _Run(self, self.new_mapper(), self._secrets(env))
        decoder = JSONLinesDecoder(source=self.name)
        try:
            await proc.start()
            while block := await proc.read():
                for item in decoder.feed(block):
                    for chunk in run.convert(item):
                        yield chunk
            code = await proc.wait()
            stderr = redact(proc.stderr_tail, run.secrets)
            for item in decoder.finish():
                if isinstance(item, MalformedLine) and item.reason == "truncated":
                    error = ConnectionLost(
                        f"{self.name} output ended in the middle of a line (exit code {code})"
                        + (f": {last_line(stderr)}" if last_line(stderr) else ""),
                        provider=self.name,
                        status=code,
                        body=stderr or item.preview,
                    )
                    for chunk in run.post([error_chunk(error, item.as_event())]):
                        yield chunk
                else:
                    for chunk in run.convert(item):
                        yield chunk
            for chunk in run.post(run.mapper.finish()):
                yield chunk
            if code != 0 and not run.failed:
                exit_error = self.exit_error(code, stderr)
                for chunk in run.post(
                    [error_chunk(exit_error, {"type": "process_exit", "exit_code": code})]
                ):
                    yield chunk
        finally:
            await proc.aclose()


class _Run:
    """Per-stream state of ``CLIProviderBase.stream``."""

    def __init__(self, provider: CLIProviderBase, mapper: EventMapper, secrets: list[str]) -> None:
        self.provider = provider
        self.mapper = mapper
        self.secrets = secrets
        self.failed = False
        self.malformed = 0
        self.started = time.monotonic()

    def convert(self, item: dict[str, Any] | MalformedLine) -> list[Chunk]:
        if isinstance(item, MalformedLine):
            self.malformed += 1
            logger.warning(
                "%s: skipped malformed output line %d (%s): %.120r",
                self.provider.name,
                item.line_no,
                item.reason,
                item.preview,
            )
            return []
        return self.post(self.mapper.map(item))

    def post(self, chunks: list[Chunk]) -> list[Chunk]:
        for chunk in chunks:
            if chunk.session_id:
                self.provider.session_id = chunk.session_id
            if chunk.type in ("result", "error") and chunk.raw:
                # The raw event is persisted (run buffer); where a provider reports a failure,
                # it may quote the key. Text deltas are not scanned: that would cost every token.
                chunk.raw = redact_data(chunk.raw, self.secrets)
            if chunk.type == "result":
                chunk.metadata.setdefault(
                    "duration_ms", round((time.monotonic() - self.started) * 1000)
                )
                if self.malformed:
                    chunk.metadata["malformed_lines"] = self.malformed
            elif chunk.type == "error":
                if chunk.error is not None:
                    redact_error(chunk.error, self.secrets)
                chunk.text = redact(chunk.text, self.secrets) or EMPTY_ERROR
                if not chunk.benign_eos:
                    self.failed = True
        return chunks

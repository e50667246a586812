"""What an HTTP API's failure means, the same for every API provider: a status (and its error
body) or an error event in the middle of a stream becomes one class of ``lion_nb.errors``.

* 401 / 403 (or an ``authentication_error`` / ``permission_error`` event) ->
  ``AuthenticationError``, naming the environment variable the key is read from, never the key;
* 429 (``rate_limit_error``) -> ``RateLimitError`` with the server's ``retry-after`` (``-ms``,
  seconds or an HTTP date); retried (``Retry``) unless the quota is used up;
* 529 / ``overloaded_error`` and other 5xx (``api_error``) -> ``ServerError`` (retried);
* 408 -> ``ProviderTimeout`` (retried); anything else -> ``ProviderError``.

A call is retried only while nothing of its reply was read (``RetrySafe`` carries such an
error); an error event mid-stream is raised as is (``retryable=False``: a second, different
beginning would reach the user). ``scrub`` takes credentials out of everything an error shows,
through ``lion_nb.secrets.redact``.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from lion_nb.errors import (
    AuthenticationError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
)
from lion_nb.secrets import redact

__all__ = [
    "Retry",
    "RetrySafe",
    "call_with_retries",
    "error_detail",
    "event_error",
    "retry_after",
    "scrub",
    "status_error",
]

log = logging.getLogger(__name__)

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[Any]]

_AUTH = frozenset({"authentication_error", "permission_error", "invalid_api_key", "unauthorized"})
_RATE = frozenset({"rate_limit_error", "rate_limit_exceeded", "rate_limit", "resource_exhausted"})
_SERVER = frozenset(
    {"overloaded_error", "api_error", "server_error", "internal_error", "unavailable", "internal"}
)
_NO_CREDIT = frozenset({"insufficient_quota", "billing_error"})


class RetrySafe(Exception):  # an internal signal; never escapes a provider's complete()
    """Carries a classified error raised before any byte of the reply body was consumed."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(error)
        self.error = error


def error_detail(text: str) -> tuple[str, str | None]:
    """(message, code) from an error body of the usual shapes (``{"error": {"message",
    "code" | "type" | "status"}}``, a bare object, a list of them), else the start of the
    text."""
    try:
        obj = json.loads(text)
    except ValueError:
        return (text.strip()[:300] or "(empty body)"), None
    if isinstance(obj, list) and obj:
        obj = obj[0]  # Gemini's REST errors may come as a one-element list
    err = obj.get("error", obj) if isinstance(obj, dict) else obj
    if isinstance(err, dict):
        message = err.get("message") or err.get("detail") or json.dumps(err)[:300]
        code = err.get("code") if isinstance(err.get("code"), str) else None
        code = code or err.get("type") or err.get("status")
        return str(message)[:300], (str(code) if code is not None else None)
    return str(err)[:300], None


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        return max(0.0, when.timestamp() - time.time())
    return None


def key_hint(key_env: Iterable[str], *, key_sent: bool, loopback: bool) -> str:
    """What to do about a rejected or missing key: the variable to set, never the key."""
    names = [n for n in key_env if n]
    if key_sent:
        return f" (check the key in ${names[0]} or api_key=)" if names else " (check api_key=)"
    where = " or set " + " / ".join(f"${n}" for n in names) if names else ""
    if loopback:  # a key from the environment belongs to the hosted API
        where = "; a key from the environment is not sent to a loopback server"
    return f" (no API key was sent: pass api_key={where})"


def status_error(
    status: int,
    headers: Mapping[str, str],
    text: str,
    *,
    provider: str,
    key_env: Iterable[str] = (),
    key_sent: bool = True,
    loopback: bool = False,
    not_found: str = "",
) -> ProviderError:
    """The error for an HTTP ``status`` with error body ``text`` (not yet scrubbed).
    ``not_found``: what to do when the server has no such endpoint (404: it may not speak
    this API at all), said after the server's words."""
    detail, code = error_detail(text)
    kw: dict[str, Any] = {"provider": provider, "status": status, "body": text[:2000]}
    if status in (401, 403) or code in _AUTH:
        hint = key_hint(key_env, key_sent=key_sent, loopback=loopback)
        return AuthenticationError(f"authentication failed: {detail}{hint}", **kw)
    if status == 429 or code in _RATE:
        return RateLimitError(
            f"rate limited: {detail}",
            retry_after=retry_after(headers),
            retryable=code not in _NO_CREDIT,  # no amount of waiting buys credit
            **kw,
        )
    if status == 408:
        return ProviderTimeout(f"the server timed out: {detail}", retryable=True, **kw)
    if status == 529 or code == "overloaded_error":
        return ServerError(f"the server is overloaded: {detail}", **kw)
    if status >= 500 or code in _SERVER:
        return ServerError(f"server error: {detail}", **kw)
    if status == 404 and not_found:
        return ProviderError(f"request rejected: {detail.rstrip('.')}. {not_found}", **kw)
    return ProviderError(f"request rejected: {detail}", **kw)


def event_error(text: str, *, provider: str) -> ProviderError:
    """The error an error event in the middle of a stream reports (``text``: its data, e.g.
    ``{"type": "error", "error": {"type": "overloaded_error", "message": ...}}``). Not
    retried: part of the reply may have reached the user."""
    detail, code = error_detail(text)
    cls: type[ProviderError] = ProviderError
    if code in _AUTH:
        cls = AuthenticationError
    elif code in _RATE or "rate" in str(code):
        cls = RateLimitError
    elif code in _SERVER:
        cls = ServerError
    what = "overloaded" if code == "overloaded_error" else "reported an error"
    return cls(
        f"the server {what}: {detail}",
        provider=provider,
        body=text[:2000],
        retryable=False,
    )


def scrub(error: ProviderError, secrets: Iterable[str | None]) -> ProviderError:
    """Remove credentials from everything an error shows (message, args, body)."""
    secrets = list(secrets)
    error.message = redact(error.message, secrets)
    error.args = tuple(redact(a, secrets) if isinstance(a, str) else a for a in error.args)
    if error.body is not None:
        error.body = redact(error.body, secrets)
    return error


@dataclass(frozen=True, slots=True)
class Retry:
    """How a call is retried: up to ``max_retries`` more attempts, waiting the server's
    ``retry-after`` (capped at ``max_retry_after``) or an exponential backoff with jitter."""

    max_retries: int = 2
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, after: float | None) -> float:
        if after is not None and after >= 0:
            return min(after, self.max_retry_after)
        # Jitter spreads the retries of many concurrent calls that failed together.
        return min(self.backoff * 2**attempt, self.max_backoff) * (1 - 0.25 * random.random())


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    retry: Retry,
    sleep: Sleep,
    secrets: Iterable[str | None],
) -> T:
    """Run ``attempt`` until it returns; a ``RetrySafe`` retryable error is tried again (up to
    ``retry.max_retries`` times), every error leaves scrubbed of ``secrets``."""
    secrets = list(secrets)
    tries = 0
    while True:
        try:
            return await attempt()
        except RetrySafe as wrapped:
            failed = scrub(wrapped.error, secrets)
            if not failed.retryable or tries >= retry.max_retries:
                raise failed from wrapped.__cause__
            delay = retry.delay(tries, getattr(failed, "retry_after", None))
        except ProviderError as error:
            raise scrub(error, secrets) from error.__cause__
        tries += 1
        log.info("%s; retry %d of %d in %.2f s", failed, tries, retry.max_retries, delay)
        await sleep(delay)

"""One classification of HTTP failures for every API provider (models/http_errors.py)."""

from __future__ import annotations

import json

import pytest

from lion_nb.errors import (
    AuthenticationError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
)
from lion_nb.models.http_errors import (
    Retry,
    RetrySafe,
    call_with_retries,
    error_detail,
    event_error,
    retry_after,
    status_error,
)

KEY = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"


def _body(kind: str, message: str) -> str:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}})


def test_401_names_the_variable_and_never_the_key() -> None:
    err = status_error(
        401, {}, _body("authentication_error", "invalid x-api-key"), provider="anthropic",
        key_env=("ANTHROPIC_API_KEY",), key_sent=True,
    )  # fmt: skip
    assert isinstance(err, AuthenticationError) and err.status == 401
    assert "ANTHROPIC_API_KEY" in str(err) and "invalid x-api-key" in str(err)
    missing = status_error(
        403, {}, "{}", provider="gemini", key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        key_sent=False,
    )  # fmt: skip
    assert isinstance(missing, AuthenticationError)
    assert "$GEMINI_API_KEY / $GOOGLE_API_KEY" in str(missing) and "no API key was sent" in str(
        missing
    )


def test_429_carries_retry_after_and_a_used_up_quota_is_not_retried() -> None:
    err = status_error(429, {"retry-after": "7"}, _body("rate_limit_error", "slow"), provider="p")
    assert isinstance(err, RateLimitError) and err.retry_after == 7 and err.retryable
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0
    quota = status_error(
        429,
        {},
        json.dumps({"error": {"code": "insufficient_quota", "message": "pay"}}),
        provider="p",
    )
    assert isinstance(quota, RateLimitError) and not quota.retryable


@pytest.mark.parametrize(
    ("status", "kind", "cls"),
    [
        (529, "overloaded_error", ServerError),
        (500, "api_error", ServerError),
        (503, None, ServerError),
        (408, None, ProviderTimeout),
        (400, "invalid_request_error", ProviderError),
    ],
)
def test_statuses_map_to_the_tree(status: int, kind: str | None, cls: type) -> None:
    text = _body(kind, "m") if kind else "<html>busy</html>"
    err = status_error(status, {}, text, provider="p")
    assert type(err) is cls and err.status == status
    assert err.retryable == (cls is not ProviderError)


def test_an_error_event_mid_stream_is_classified_and_not_retried() -> None:
    err = event_error(_body("overloaded_error", "Overloaded"), provider="anthropic")
    assert isinstance(err, ServerError) and not err.retryable and "overloaded" in str(err)
    assert isinstance(event_error(_body("rate_limit_error", "x"), provider="p"), RateLimitError)
    assert type(event_error(_body("invalid_request_error", "x"), provider="p")) is ProviderError
    gemini = json.dumps([{"error": {"code": 429, "message": "m", "status": "RESOURCE_EXHAUSTED"}}])
    assert error_detail(gemini) == ("m", "RESOURCE_EXHAUSTED")


async def test_retries_wait_then_succeed_and_errors_leave_scrubbed() -> None:
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    calls = 0

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise RetrySafe(RateLimitError("slow", retry_after=1.5))
        return "ok"

    assert await call_with_retries(attempt, Retry(max_retries=2), sleep, []) == "ok"
    assert slept == [1.5, 1.5]

    async def always() -> str:
        raise RetrySafe(ServerError(f"boom with {KEY}", body=f"key={KEY}"))

    with pytest.raises(ServerError) as info:
        await call_with_retries(always, Retry(max_retries=1, backoff=0.01), sleep, [KEY])
    assert KEY not in str(info.value) and KEY not in (info.value.body or "")
    assert len(slept) == 3 and slept[-1] <= 0.01

    async def auth() -> str:
        raise RetrySafe(AuthenticationError("no"))

    with pytest.raises(AuthenticationError):
        await call_with_retries(auth, Retry(max_retries=5), sleep, [])
    assert len(slept) == 3  # never retried

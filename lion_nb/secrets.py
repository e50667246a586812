"""The one owner of what counts as a secret, and of taking secrets out of what leaves.

Every exit asks here: reprs and saved settings (``iModel.settings``: snapshots, Ray payloads),
provider errors, CLI stderr and raw events (what a run buffer keeps), cassettes and exports.

``is_secret_name(name)`` reads a name (an option, a header, an environment variable) as words
(``OPENAI_API_KEY``, ``x-api-key``, ``apiKey`` -> ``openai api key``, ...). It is secret when a
word says so: ``secret``, ``passw...``, ``passphrase``, ``credential``, ``cookie``, ``bearer``,
``apikey`` anywhere; ``auth`` / ``oauth`` / ``authorization`` / ``jwt`` / ``sessionid`` as a
word; ``...token``, ``key`` or ``pass`` as the last word (a trailing ``id`` aside:
``AWS_ACCESS_KEY_ID``). So ``max_tokens``, ``top_k``, ``keep_alive``, ``tokenizer``,
``token_limit``, ``author`` and ``session_id`` (a CLI agent's conversation) are not secret. A
name whose last word says it names a place or a kind rather than holding the value
(``api_key_env``, ``SSH_AUTH_SOCK``, ``password_file``, ``auth_type``, ...) is not secret either.

``redact(text, secrets)`` replaces the given values (also as written inside a JSON string) and,
on its own, what has a secret's shape: vendor keys (``sk-...`` of OpenAI, Anthropic and
OpenRouter, Google ``AIza...``, GitHub ``ghp_...`` / ``github_pat_...``, Hugging Face ``hf_...``,
Slack ``xox.-...``, AWS ``AKIA...``, JWTs), ``Bearer`` tokens, ``Basic`` credentials, the
``user:password@`` of URLs, cookie headers, and the value after a secret-looking name
(``X-Auth-Token: ...``, ``"api_key": "..."``, ``PGPASSWORD=...``) when that value looks like a
credential rather than a word of prose or code.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "REDACTED",
    "is_secret_name",
    "public_url",
    "redact",
    "redact_mapping",
    "secret_values",
]

REDACTED = "[REDACTED]"

# -- names --------------------------------------------------------------------------------------

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_ANYWHERE = ("secret", "passw", "passphrase", "credential", "cookie", "bearer", "apikey")
_WORD = frozenset(
    "auth oauth authorization authorisation jwt sessionid sessid phpsessid jsessionid".split()
)
_LAST_KEY = ("accesskey", "privatekey", "signingkey", "authkey", "sessionkey")
_NOT_A_VALUE = frozenset(
    {"env", "var", "name", "names", "file", "path", "dir", "sock", "socket", "url", "uri", "type"}
)


def is_secret_name(name: str) -> bool:
    """Whether a value under ``name`` (an option, header or environment variable) may be a
    credential. See the module docstring for the word list."""
    words = [w.lower() for w in _WORDS.findall(name)]
    if not words or words[-1] in _NOT_A_VALUE:
        return False
    if len(words) > 1 and words[-1] == "id":
        words = words[:-1]
    last = words[-1]
    if last.endswith("token") or last in ("key", "pass") or last.endswith(_LAST_KEY):
        return True
    return any(w in _WORD or any(stem in w for stem in _ANYWHERE) for w in words)


# -- text ---------------------------------------------------------------------------------------


def _looks_like_a_credential(value: str) -> bool:
    """A value after a secret-looking name: random-looking, not a word or an attribute path
    (``password = getpass.getpass()``, ``token: required``)."""
    if len(value) >= 6 and any(c.isdigit() for c in value):
        return True
    return len(value) >= 16 and "." not in value


_STEM = re.compile(r"(?i)auth|key|token|secret|pass|credential|cookie|sess|bearer|jwt")
# Any "name: value" / "name=value" (also quoted, as in JSON); the match ends before the value,
# so a value is itself scanned for names ("note: X-Auth-Token: ...").
_NAMED = re.compile(
    r"(?<![\w.-])(?P<name>[A-Za-z_][\w.-]*+)\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    r"(?=(?:(?i:bearer|basic|token)[ \t]+)?(?P<value>[A-Za-z0-9._~+/=\-]+))"
)


def _redact_named(text: str) -> str:
    """The value after every secret-looking name, when it looks like a credential."""
    parts, end = [], 0
    for match in _NAMED.finditer(text):
        name, value = match.group("name", "value")
        if match.start("value") < end or not _STEM.search(name):
            continue
        if is_secret_name(name) and _looks_like_a_credential(value):
            parts += [text[end : match.start("value")], REDACTED]
            end = match.end("value")
    return "".join([*parts, text[end:]]) if parts else text


def _bearer(match: re.Match[str]) -> str:
    token = match.group(2)
    if not _looks_like_a_credential(token):
        return match.group(0)
    return f"{match.group(1)} {REDACTED}"


def _basic(match: re.Match[str]) -> str:
    """``Basic <base64 of user:password>`` (and only that: "basic understanding" is prose)."""
    token = match.group(2)
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode()
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return match.group(0)
    user, colon, _ = decoded.partition(":")
    if not (user and colon and decoded.isprintable()):
        return match.group(0)
    return f"{match.group(1)} {REDACTED}"


_Sub = str | Callable[[re.Match[str]], str]
_SHAPES: tuple[tuple[Callable[[str], bool], re.Pattern[str], _Sub], ...] = (
    # (a cheap test that the pattern can match, the pattern, its replacement)
    (
        lambda t: "://" in t and "@" in t,
        re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@\"']+:[^/\s@\"']*@"),
        r"\1[REDACTED]@",
    ),
    (
        lambda t: "ookie" in t or "OOKIE" in t,
        re.compile(
            r"(?i)\b((?:set-)?cookie\\?[\"']?[ \t]*:[ \t]*\\?[\"']?)[^\"'\r\n\\]*=[^\"'\r\n\\]*"
        ),
        r"\1[REDACTED]",
    ),
    (
        lambda t: "earer" in t or "EARER" in t,
        re.compile(r"(?i)\b(bearer)\s+([A-Za-z0-9._~+/=\-]{8,})"),
        _bearer,
    ),
    (
        lambda t: "asic" in t or "ASIC" in t,
        re.compile(r"(?i)\b(basic)\s+([A-Za-z0-9+/]{8,}={0,2})"),
        _basic,
    ),
    (lambda t: "sk-" in t, re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), REDACTED),
    (lambda t: "AIza" in t, re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"), REDACTED),
    (
        lambda t: "gh" in t or "github_pat_" in t,
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
        REDACTED,
    ),
    (lambda t: "hf_" in t, re.compile(r"\bhf_[A-Za-z0-9]{30,}"), REDACTED),
    (lambda t: "xox" in t, re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), REDACTED),
    (lambda t: "AKIA" in t, re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (
        lambda t: "eyJ" in t,
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
        REDACTED,
    ),
)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` without any of ``secrets`` (values of 4 characters or more, also as written
    inside a JSON string) and without anything shaped like a secret (module docstring)."""
    if not text:
        return text
    given = {s for s in secrets if isinstance(s, str) and len(s) >= 4}
    for secret in sorted(given, key=len, reverse=True):
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
        if escaped != secret:
            text = text.replace(escaped, REDACTED)
        text = text.replace(secret, REDACTED)
    for can_match, pattern, replacement in _SHAPES:
        if can_match(text):  # a regex scan of every cassette request is the cost of a replay
            text = pattern.sub(replacement, text)
    if ":" in text or "=" in text:
        text = _redact_named(text)
    return text


# -- mappings (headers, environments, options) ---------------------------------------------------


def _redacted(value: Any, secrets: Iterable[str | None], drop: bool) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return redact_mapping(value, secrets, drop=drop)
    if isinstance(value, list | tuple):
        items = [_redacted(v, secrets, drop) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def redact_mapping(
    mapping: Mapping[Any, Any], secrets: Iterable[str | None] = (), *, drop: bool = False
) -> dict[Any, Any]:
    """A copy of ``mapping`` where every secret-named entry, at any depth, reads ``REDACTED``
    (``drop=True``: is left out) and every other string passes through ``redact``."""
    secrets = list(secrets)
    out: dict[Any, Any] = {}
    for key, value in mapping.items():
        if isinstance(key, str) and is_secret_name(key):
            if not drop:
                out[key] = value if value in (None, "") else REDACTED
            continue
        out[key] = _redacted(value, secrets, drop)
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def secret_values(mapping: Mapping[Any, Any]) -> list[str]:
    """The string values of the secret-named entries of ``mapping``, at any depth: what
    ``redact`` is given. Values shorter than 8 characters are flags (``USE_AUTH=true``), not
    keys: masking them would only garble messages."""
    found: list[str] = []
    for key, value in mapping.items():
        if isinstance(key, str) and is_secret_name(key):
            found += [s for s in _strings(value) if len(s) >= 8]
        elif isinstance(value, Mapping):
            found += secret_values(value)
    return found


def public_url(url: str | None) -> str | None:
    """``url`` without its ``user:password@`` part: what is shown and saved of a URL."""
    if not url or "@" not in url:
        return url
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))

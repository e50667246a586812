"""``lion_nb.secrets``, and one corpus of secrets sent through every exit.

The corpus is one set of secret values of every shape lion_nb must recognise: an OpenAI key, an
Anthropic key, a Google key, a GitHub token, a bearer token (a JWT), a basic-auth credential, the
password of a ``https://user:pass@host/v1`` URL, cookies, an AUTH header and a secret in a CLI
``env=`` mapping. It enters as configuration (``CONFIG``: a model's key, base URL, headers,
options and ``env``), and as text (``TEXT``: the corpus as an upstream error, a CLI's stderr or a
pasted prompt would show it) where an exit carries text from outside.

Every exit is a real path: ``repr``, ``iModel.settings()``, ``Branch.to_dict()`` and its snapshot
file, an error of the OpenAI provider from a loopback server that echoes the corpus, a CLI
agent (the fake CLI behind the real Claude Code provider) that prints it, the exports, the run
buffer and snapshots of ``stream_persist=True``, a recorded cassette file and a Ray payload.
None of the corpus values may appear in anything that leaves.
"""

from __future__ import annotations

import base64
import json
import traceback
from pathlib import Path
from typing import Any

import pytest

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.errors import AuthenticationError, CLIError, ServerError
from lion_nb.secrets import (
    REDACTED,
    is_secret_name,
    public_url,
    redact,
    redact_mapping,
    secret_values,
)
from tests.servers.chat_server import ChatServer, ErrorReply, Reply
from tests.support.fake_cli import make_fake_cli, recording

# -- the corpus ---------------------------------------------------------------------------------

OPENAI = "sk-proj-Zq81T0p9XyA7bC3dE5fG7hJ9kL1mN3pQ4rS6"
ANTHROPIC = "sk-ant-api03-Hx7Yw2Vu4Ts6Rq8Po0Nm2Lk4Ji6Hg8Fe0Dc2Ba4Zz6Xw8-AbCdEfAA"
GOOGLE = "AIzaSyD3f9Kx2mQ7pL0vB8nR4tW6yZ1cH5jG3kM"
GITHUB = "ghp_8fK2mQ9xL4vN7bR1tW5yZ3cH6jG0pD2sA4eU"
BEARER = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiaWF0IjoxNzAwMDAwMDAwfQ"
    ".Q2xhdWRlU2lnbmF0dXJlVmFsdWU5ODc2NTQzMjE"
)
BASIC_PASSWORD = "Pw-basic-7Hq2Lm9Zx4"
BASIC = base64.b64encode(f"svc-reporter:{BASIC_PASSWORD}".encode()).decode()
URL_PASSWORD = "Pw-url-3Kd8Vn1Rb6"
COOKIE_SESSION = "s3ss-4f3e2d1c0b9a8f7e6d5c"
COOKIE_CSRF = "csrf-1a2b3c4d5e6f7a8b9c0d"
AUTH_TOKEN = "xat-77c1d9e3f5a7b9c1d3e5"
CLI_ENV = "acme-6e5d4c3b2a1f0e9d8c7b"

CORPUS = {
    "OpenAI key": OPENAI,
    "Anthropic key": ANTHROPIC,
    "Google key": GOOGLE,
    "GitHub token": GITHUB,
    "bearer token": BEARER,
    "basic auth": BASIC,
    "basic auth password": BASIC_PASSWORD,
    "URL password": URL_PASSWORD,
    "session cookie": COOKIE_SESSION,
    "csrf cookie": COOKIE_CSRF,
    "AUTH header": AUTH_TOKEN,
    "CLI env= secret": CLI_ENV,
}

COOKIE = f"session={COOKIE_SESSION}; csrftoken={COOKIE_CSRF}"
TEXT = "\n".join(
    [
        f"rejected key {OPENAI}; also tried {ANTHROPIC}, {GOOGLE} and {GITHUB}",
        f"Authorization: Bearer {BEARER}",
        f"Proxy-Authorization: Basic {BASIC}",
        f"while calling https://lion:{URL_PASSWORD}@gateway.example/v1/chat/completions",
        f"Cookie: {COOKIE}",
        f"X-Auth-Token: {AUTH_TOKEN}",
        f"ACME_AUTH={CLI_ENV}",
    ]
)
"""The corpus as text: what an upstream error body, a CLI's stderr or a pasted prompt shows."""

HEADERS = {
    "X-Goog-Api-Key": GOOGLE,
    "Authorization": f"Bearer {BEARER}",
    "Proxy-Authorization": f"Basic {BASIC}",
    "Cookie": COOKIE,
    "X-Auth-Token": AUTH_TOKEN,
    "X-Title": "corpus",  # not a secret: it is kept
}
ENV = {"ACME_AUTH": CLI_ENV, "ANTHROPIC_API_KEY": ANTHROPIC, "LANG": "C.UTF-8"}
CONFIG: dict[str, Any] = {
    "headers": HEADERS,
    "github_token": GITHUB,
    "session_cookie": f"session={COOKIE_SESSION}",
    "temperature": 0.2,  # not a secret: it is kept
}
"""The corpus as a model's configuration (plus ``api_key=OPENAI``, a ``user:pass@`` base URL and,
for a CLI, ``env=ENV``)."""


def url_with_password(base_url: str) -> str:
    return base_url.replace("://", f"://lion:{URL_PASSWORD}@", 1)


def scripted_cli(*replies: Any) -> iModel:
    return iModel(
        provider="scripted",
        cli=True,
        replies=list(replies),
        api_key=OPENAI,
        base_url=url_with_password("https://gateway.example/v1"),
        env=ENV,
        **CONFIG,
    )


class Exits:
    """What left, as labelled text; ``assert_clean`` looks for every corpus value in all of it."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, label: str, obj: Any) -> None:
        if isinstance(obj, BaseException):
            parts = [str(obj), repr(obj), "".join(traceback.format_exception(obj))]
            for attr in ("body", "stderr", "partial_text", "message", "args"):
                parts.append(repr(getattr(obj, attr, None)))
            self.items.append((label, "\n".join(parts)))
        elif isinstance(obj, bytes):
            self.items.append((label, obj.decode("utf-8", "replace")))
        elif isinstance(obj, str):
            self.items.append((label, obj))
        else:
            self.items.append((label, f"{obj!r}\n{json.dumps(obj, default=repr)}"))

    def add_files(self, label: str, root: Path) -> int:
        files = sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            self.add(f"{label}/{path.name}", path.read_bytes())
        return len(files)

    def assert_clean(self) -> None:
        assert self.items, "nothing was collected"
        leaks = [
            f"{name} in {label}"
            for label, text in self.items
            for name, value in CORPUS.items()
            if value in text
        ]
        assert not leaks, "secrets leaked:\n" + "\n".join(leaks)


# -- names and shapes -----------------------------------------------------------------------------

SECRET_NAMES = [
    "api_key", "apiKey", "APIKEY", "x-api-key", "X-Goog-Api-Key", "OPENAI_API_KEY",
    "ANTHROPIC_AUTH_TOKEN", "GITHUB_TOKEN", "HF_TOKEN", "access_token", "refresh_token",
    "csrftoken", "client_secret", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID",
    "AWS_SESSION_TOKEN", "password", "PGPASSWORD", "DB_PASS", "passphrase", "credentials",
    "GOOGLE_APPLICATION_CREDENTIALS", "Authorization", "Proxy-Authorization", "auth",
    "auth_header", "X-Auth-Token", "oauth_token", "Cookie", "Set-Cookie", "session_cookie",
    "sessionid", "JSESSIONID", "bearer_token", "private_key", "ACME_AUTH", "jwt",
]  # fmt: skip
PLAIN_NAMES = [
    "max_tokens", "max_completion_tokens", "input_tokens", "MAX_THINKING_TOKENS", "top_k",
    "keep_alive", "tokenizer", "TOKENIZERS_PARALLELISM", "token_limit", "temperature", "seed",
    "stop", "timeout", "delay", "model", "base_url", "cwd", "cli_path", "env", "headers",
    "api_key_env", "context_window", "default_reply", "author", "monkey", "keyboard",
    "sort_keys", "session_id", "SSH_AUTH_SOCK", "XAUTHORITY", "password_file", "auth_type",
    "GIT_ASKPASS", "PWD", "PATH", "HOME", "LANG", "HTTPS_PROXY", "bypass",
]  # fmt: skip


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_ordinary_option_names_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_redact_finds_every_shape_on_its_own() -> None:
    cleaned = redact(TEXT)  # no values given: shapes only
    assert [name for name, value in CORPUS.items() if value in cleaned] == []
    assert cleaned.splitlines() == [
        f"rejected key {REDACTED}; also tried {REDACTED}, {REDACTED} and {REDACTED}",
        f"Authorization: Bearer {REDACTED}",
        f"Proxy-Authorization: Basic {REDACTED}",
        f"while calling https://{REDACTED}@gateway.example/v1/chat/completions",
        f"Cookie: {REDACTED}",
        f"X-Auth-Token: {REDACTED}",
        f"ACME_AUTH={REDACTED}",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "a basic understanding of Python",  # "Basic" + a word that is no base64 user:password
        "Bearer authentication is described in RFC 6750",
        "password = getpass.getpass()",
        'api_key = os.environ["OPENAI_API_KEY"]',
        "the token: required",
        '{"input_tokens": 12, "max_tokens": 4096, "session_id": "0c8e-1234-5678-9abc"}',
        "sk-short and AIza too",
        "Cookie: none",
        "https://example.com/v1/chat@home",
    ],
)
def test_redact_leaves_prose_code_and_ordinary_json_alone(text: str) -> None:
    assert redact(text) == text


def test_a_value_is_scanned_for_names_too() -> None:
    assert redact(f"note: X-Auth-Token: {AUTH_TOKEN}") == f"note: X-Auth-Token: {REDACTED}"
    quoted = json.dumps({"log": json.dumps({"api_key": "zz-9988776655"})})
    assert "9988776655" not in redact(quoted) and json.loads(redact(quoted))


def test_the_shipped_cassettes_read_the_same_after_redaction() -> None:
    """A replay matches the live request *after* ``redact``: a shape that changed a shipped
    recording would make it miss."""
    root = Path(__file__).resolve().parents[1] / "notebooks" / "data"
    lines = [line for path in root.glob("*.jsonl") for line in path.read_text().splitlines()]
    assert lines
    assert [line for line in lines if redact(line) != line] == []


def test_redact_given_values_also_inside_json_strings() -> None:
    value = 'pa"ss\\word-1234'
    line = json.dumps({"note": f"it was {value}"})
    assert redact(f"raw {value}", [value]) == f"raw {REDACTED}"
    assert redact(line, [value]) == json.dumps({"note": f"it was {REDACTED}"})
    assert redact("abc", ["abc"]) == "abc"  # shorter than 4: not a secret worth garbling text


def test_mappings_by_name() -> None:
    headers = {**HEADERS, "Empty-Token": "", "Nested": {"client_secret": "s3cr3t-value-1"}}
    assert redact_mapping(headers) == {
        "X-Goog-Api-Key": REDACTED,
        "Authorization": REDACTED,
        "Proxy-Authorization": REDACTED,
        "Cookie": REDACTED,
        "X-Auth-Token": REDACTED,
        "X-Title": "corpus",
        "Empty-Token": "",
        "Nested": {"client_secret": REDACTED},
    }
    assert redact_mapping(headers, drop=True) == {"X-Title": "corpus", "Nested": {}}
    assert sorted(secret_values({**ENV, "USE_AUTH": "true"})) == sorted([CLI_ENV, ANTHROPIC])
    assert public_url(url_with_password("https://h/v1")) == "https://h/v1"


# -- settings: the one serialiser -----------------------------------------------------------------


def test_settings_round_trip_without_credentials() -> None:
    model = scripted_cli("hi")
    settings = model.settings()
    assert settings == {
        "provider": "scripted",
        "model": None,
        "base_url": "https://gateway.example/v1",
        "options": {
            "cli": True,
            "replies": ["hi"],
            "env": {"LANG": "C.UTF-8"},
            "headers": {"X-Title": "corpus"},
            "temperature": 0.2,
        },
    }
    assert model.to_dict() == settings  # kept for compatibility
    rebuilt = iModel.from_settings(json.loads(json.dumps(settings)), api_key="passed-again")
    assert rebuilt.settings() == settings
    assert rebuilt.secret_values()[0] == "passed-again"
    assert iModel.from_settings({"provider": "openai", "model": "m"}).settings() == {
        "provider": "openai",
        "model": "m",
        "base_url": None,
    }


def test_repr_settings_and_snapshot(tmp_path: Path) -> None:
    from lion_nb.port.stream_persist import write_snapshot

    exits = Exits()
    model = scripted_cli("hi")
    parse = iModel(provider="openai", model="m", api_key=OPENAI, base_url=url_with_password(
        "https://gateway.example/v1"), **CONFIG)  # fmt: skip
    branch = Branch(system="Be brief.", chat_model=model, parse_model=parse)
    for name, m in (("chat", model), ("parse", parse)):
        exits.add(f"{name} repr", repr(m))
        exits.add(f"{name} provider repr", repr(m.provider))
        exits.add(f"{name} copy repr", repr(m.copy()))
        exits.add(f"{name} settings()", m.settings())
        exits.add(f"{name} settings(plain=False)", repr(m.settings(plain=False)))
    exits.add("Branch.to_dict()", branch.to_dict())
    write_snapshot(branch, tmp_path)
    assert exits.add_files("snapshot", tmp_path) == 1
    exits.assert_clean()
    restored = Branch.from_dict(json.loads((tmp_path / f"{branch.id}.json").read_text()))
    assert restored.parse_model.settings() == parse.settings()


# -- exits that carry text from outside ------------------------------------------------------------


async def test_an_openai_error_echoing_the_corpus(chat_server: ChatServer) -> None:
    """The loopback server answers with the corpus in its error bodies (JSON and plain text)."""
    model = iModel(
        provider="openai",
        model="test-model",
        api_key=OPENAI,
        base_url=url_with_password(chat_server.base_url),
        max_retries=0,
        **CONFIG,
    )
    chat_server.script(
        ErrorReply(401, body={"error": {"message": TEXT, "type": "invalid_request_error"}}),
        ErrorReply(500, body=TEXT),
    )
    exits = Exits()
    branch = Branch(chat_model=model)
    for expected in (AuthenticationError, ServerError):
        with pytest.raises(expected) as info:
            await branch.communicate("hi")
        exits.add(f"{expected.__name__}", info.value)
    await model.aclose()
    sent = chat_server.requests[0]
    assert sent.headers["x-auth-token"] == AUTH_TOKEN and sent.body["github_token"] == GITHUB
    exits.assert_clean()
    assert REDACTED in str(info.value)


async def test_an_anthropic_error_echoing_the_corpus() -> None:
    """The Messages API's error bodies and a mid-stream error event carry the corpus."""
    from tests.servers.anthropic_server import ErrorReply as AnthropicError
    from tests.servers.anthropic_server import Message, start_anthropic_server

    exits = Exits()
    with start_anthropic_server() as server:
        model = iModel(
            provider="anthropic",
            model="claude-sonnet-4-5",
            api_key=ANTHROPIC,
            base_url=url_with_password(server.base_url),
            max_retries=0,
            headers=HEADERS,
            temperature=0.2,
        )
        server.script(
            AnthropicError(401, "authentication_error", TEXT),
            AnthropicError(529, "overloaded_error", TEXT),
            Message("partial", error_after=3, error_message=TEXT),
        )
        branch = Branch(chat_model=model)
        for n, expected in enumerate((AuthenticationError, ServerError, ServerError)):
            with pytest.raises(expected) as info:
                await branch.communicate("hi")
            exits.add(f"anthropic error {n}", info.value)
            exits.add(f"anthropic error {n} body", info.value.body or "")
        await model.aclose()
        assert server.requests[0]["headers"]["x-api-key"] == ANTHROPIC
    exits.assert_clean()


async def test_a_cli_agent_printing_the_corpus_persisted_run(tmp_path: Path) -> None:
    """The real Claude Code provider over the fake CLI: the agent gets ``env=`` (``ACME_AUTH``
    among it), prints the corpus on stderr and exits 1. The error, the run buffer while it
    lasts and the snapshots must hold none of it."""
    from lion_nb.signals import MessageAdded

    fake = make_fake_cli(tmp_path)
    env = {**fake.env(recording("claude/text_partial"), exit_code=1, stderr=TEXT + "\n"), **ENV}
    model = iModel(
        provider="claude_code", api_key=ANTHROPIC, cli_path=str(fake.path), env=env, **CONFIG
    )
    assert model.provider.child_env()["ACME_AUTH"] == CLI_ENV  # given explicitly: passed on
    branch = Branch(chat_model=model)
    persist = tmp_path / "persist"
    exits = Exits()
    branch.observe(
        MessageAdded,
        handler=lambda _: [
            exits.add("run buffer", p.read_bytes()) for p in persist.glob("*.jsonl")
        ],
    )
    with pytest.raises(CLIError) as info:
        async for _ in branch.run("hi", stream_persist=True, persist_dir=str(persist)):
            pass
    exits.add("CLIError", info.value)
    assert exits.add_files("persist dir", persist) >= 1
    exits.add("Branch.to_dict()", branch.to_dict())
    exits.assert_clean()
    assert f"X-Auth-Token: {REDACTED}" in str(info.value.stderr)  # the agent really printed it
    assert any(label == "run buffer" for label, _ in exits.items)


async def test_a_persisted_scripted_cli_run(tmp_path: Path) -> None:
    from lion_nb.signals import MessageAdded

    branch = Branch(system="Be brief.", chat_model=scripted_cli("Hello there."))
    persist = tmp_path / "persist"
    exits = Exits()
    branch.observe(
        MessageAdded,
        handler=lambda _: [
            exits.add("run buffer", p.read_bytes()) for p in persist.glob("*.jsonl")
        ],
    )
    replies = [m async for m in branch.run("hi", stream_persist=True, persist_dir=str(persist))]
    assert replies[-1].response == "Hello there."
    assert any(label == "run buffer" for label, _ in exits.items)
    assert exits.add_files("persist dir", persist) == 1  # the final snapshot
    exits.assert_clean()


async def test_exports_of_a_branch_holding_the_corpus(chat_server: ChatServer) -> None:
    """A user pastes the corpus into a prompt and the server echoes it back: the exports, made
    to be shared, hold none of it."""
    from lion_nb.export import export_html, export_json, export_markdown, import_json

    model = iModel(
        provider="openai",
        model="test-model",
        api_key=OPENAI,
        base_url=url_with_password(chat_server.base_url),
        **CONFIG,
    )
    branch = Branch(system="Be brief.", chat_model=model)
    assert (
        await branch.communicate(f"Why does this fail?\n{TEXT}") == f"Why does this fail?\n{TEXT}"
    )
    await model.aclose()
    exits = Exits()
    exits.add("export_json", export_json(branch))
    exits.add("export_markdown", export_markdown(branch))
    exits.add("export_html", export_html(branch))
    exits.assert_clean()
    again = import_json(export_json(branch))
    assert again.messages[-1].response.splitlines()[2] == f"Authorization: Bearer {REDACTED}"


async def test_a_recorded_cassette(chat_server: ChatServer, tmp_path: Path) -> None:
    """Recorded over HTTP: a prompt quoting the corpus, its echo, then an error body quoting it."""
    path = tmp_path / "corpus.cassette.jsonl"
    chat_server.script(Reply(f"You said: {TEXT}"), ErrorReply(401, body=TEXT))
    model = iModel(
        provider="openai",
        model="test-model",
        api_key=OPENAI,
        base_url=url_with_password(chat_server.base_url),
        max_retries=0,
        **CONFIG,
    )
    branch = Branch(chat_model=model)
    with lion_nb.cassette(path, mode="record"):
        await branch.communicate(f"Remember this:\n{TEXT}")
        with pytest.raises(AuthenticationError):
            await branch.communicate("again")
    await model.aclose()
    assert len(chat_server.requests) == 2
    exits = Exits()
    exits.add("cassette file", path.read_bytes())
    exits.assert_clean()
    assert path.read_text().count(REDACTED) >= len(CORPUS)


def test_a_ray_payload() -> None:
    """What a node sends to a Ray worker (no Ray needed to build it). The branch holds no pasted
    corpus: its messages travel by design, credentials never."""
    from lion_nb.flow.node import Operation
    from lion_nb.flow.payload import build_payload, decode

    branch = Branch(system="Be brief.", chat_model=scripted_cli("ok"))
    param = iModel(provider="openai", model="m", api_key=OPENAI, **CONFIG)
    node = Operation("communicate", {"instruction": "hi", "chat_model": param,
                                     "context": [{"model": param}]})  # fmt: skip
    parts = build_payload(node, branch)
    exits = Exits()
    for name, value in parts.items():
        exits.add(f"payload {name}", value)
    exits.assert_clean()
    assert decode(parts["chat_model"]) == branch.chat_model.settings(plain=False)
    assert decode(parts["parameters"])["chat_model"].settings() == param.settings()

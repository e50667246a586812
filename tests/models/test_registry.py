"""The provider registry: one entry per provider answers every question the rest of lion_nb asks
about it (kind, windows, key variables, options, APIs), without constructing the provider."""

from __future__ import annotations

import pytest

from lion_nb import iModel
from lion_nb.cassettes.matching import request_of
from lion_nb.errors import ConfigurationError
from lion_nb.models.base import ModelRequest
from lion_nb.models.registry import PROVIDERS, ProviderSpec, cli_provider_names, register_provider


def test_every_entry_answers_without_importing_its_module() -> None:
    for name, spec in PROVIDERS.items():
        model = iModel(provider=name)
        assert model.spec is spec
        assert model.is_cli == (spec.kind == "cli")
        model.context_window  # noqa: B018 - a fact, read without constructing
        assert model.provider_or_none is None
    assert cli_provider_names() == ["claude_code", "codex", "gemini_cli"]


def test_windows_come_from_the_entry() -> None:
    assert iModel(provider="anthropic", model="claude-sonnet-4-5").context_window == 200_000
    assert iModel(provider="anthropic", model="some-new-model").context_window == 200_000
    assert iModel(provider="openai", model="gpt-4o-mini").context_window == 128_000
    assert iModel(provider="openai", model="my-finetune").context_window is None
    assert iModel(provider="openrouter", model="anthropic/claude-3.5").context_window == 200_000
    assert iModel(provider="gemini", model="gemini-2.5-flash").context_window == 1_048_576
    assert iModel(provider="local").context_window == 2048
    assert iModel(provider="anthropic", model="x", context_window=1000).context_window == 1000


def test_key_env_is_a_fact_of_the_entry_and_overridable() -> None:
    assert iModel(provider="anthropic").key_env == ("ANTHROPIC_API_KEY",)
    assert iModel(provider="gemini").key_env == ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    assert iModel(provider="ollama").key_env == ()
    assert iModel(provider="openai", api_key_env="MY_KEY").key_env == ("MY_KEY",)


def test_the_entry_gives_an_api_provider_its_key_variables(monkeypatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-from-the-environment-1234")
    provider = iModel(provider="openrouter", model="m").provider
    assert provider.key_env == ("OPENROUTER_API_KEY",)
    assert provider._api_key() == "sk-or-from-the-environment-1234"
    assert iModel(provider="ollama").provider.key_env == ()


def test_a_provider_built_directly_reads_its_key_variables_from_its_entry() -> None:
    from lion_nb.models.anthropic import AnthropicProvider
    from lion_nb.models.gemini import GeminiProvider
    from lion_nb.models.openai import OpenAIProvider
    from lion_nb.models.openai_responses import OpenAIResponsesProvider

    built = {
        "openai": OpenAIProvider("m"),
        "anthropic": AnthropicProvider("m"),
        "gemini": GeminiProvider("m"),
    }
    for name, provider in built.items():
        assert provider.key_env == PROVIDERS[name].key_env, name
    assert OpenAIResponsesProvider("m").key_env == PROVIDERS["openai"].key_env


def test_the_key_variables_are_written_only_in_the_registry() -> None:
    """A provider module that spelled a key variable again (outside its docstrings) would
    let the two drift apart; the registry's entry is their one owner."""
    import ast
    import importlib
    import inspect

    names = {n for spec in PROVIDERS.values() for n in spec.key_env}
    for module in ("openai", "anthropic", "gemini", "openai_responses"):
        tree = ast.parse(inspect.getsource(importlib.import_module(f"lion_nb.models.{module}")))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        written = {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and id(node) not in docstrings
        }
        assert not names & written, (module, names & written)


def test_an_unknown_api_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown api 'assistants'.*chat, responses"):
        iModel(provider="openai", api="assistants")
    with pytest.raises(ConfigurationError, match="speaks one API"):
        iModel(provider="anthropic", api="responses")
    assert iModel(provider="openai", api="chat").api == "chat"
    spec = PROVIDERS["openai"].api("responses")
    assert (spec.module, spec.cls) == ("lion_nb.models.openai_responses", "OpenAIResponsesProvider")


def test_an_unknown_option_is_refused_by_name_where_the_entry_lists_them() -> None:
    with pytest.raises(ConfigurationError, match=r"'temprature'.*temperature"):
        iModel(provider="anthropic", model="claude-x", temprature=0.2)
    with pytest.raises(ConfigurationError, match="'n_gpu_layers'"):
        iModel(provider="local", n_gpu_layers=3)
    iModel(provider="anthropic", temperature=0.2, timeout=5, context_window=10)
    iModel(provider="openai", logit_bias={"1": 2})  # chat completions: anything is passed through


def test_cassettes_leave_out_the_entrys_machine_local_options() -> None:
    request = ModelRequest(messages=[{"role": "user", "content": "hi"}])
    cli = iModel(provider="claude_code", cwd="/tmp/x", cli_path="/bin/claude", env={"A": "1"})
    scripted = iModel(provider="scripted", replies=["a"], delay=0.1, cli=True, seed=3)
    api = iModel(provider="openai", timeout=3, max_retries=1, temperature=0.5, api="chat")
    assert "options" not in request_of(cli, request) or request_of(cli, request)["options"] == {}
    assert request_of(scripted, request)["options"] == {"seed": 3}
    assert request_of(api, request)["options"] == {"api": "chat", "temperature": 0.5}


def test_register_provider_keeps_its_signature_and_takes_facts(monkeypatch) -> None:
    monkeypatch.setattr("lion_nb.models.registry.PROVIDERS", dict(PROVIDERS))
    from lion_nb.models import registry

    monkeypatch.setattr("lion_nb.models.imodel.PROVIDERS", registry.PROVIDERS)
    register_provider("mine", "mypkg.mine", "MineProvider")
    assert registry.PROVIDERS["mine"] == ProviderSpec("mypkg.mine", "MineProvider")
    with pytest.raises(ValueError, match="already registered"):
        register_provider("mine", "mypkg.mine", "MineProvider")
    spec = register_provider(
        "mine", "mypkg.mine", "Mine", update=True, kind="cli", windows={"big": 10}
    )
    assert spec.kind == "cli" and spec.window("big-1") == 10
    model = iModel(provider="mine")
    assert model.is_cli and model.context_window is None
    with pytest.raises(ConfigurationError, match=r"mypkg\.mine is not installed"):
        model.provider  # noqa: B018
    register_provider(
        "sdk", "lion_nb.models.openai", "OpenAIProvider", extra="vendor", requires=["no_sdk_x"]
    )
    with pytest.raises(ConfigurationError, match=r"pip install 'lion_nb\[vendor\]'"):
        iModel(provider="sdk").provider  # noqa: B018

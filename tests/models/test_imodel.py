import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ConfigurationError
from lion_nb.models import imodel as imodel_module


def test_key_never_in_repr_or_dict():
    model = iModel(
        provider="openai",
        model="gpt-x",
        api_key="sk-secret-123456",
        base_url="http://127.0.0.1:1/v1",
        env={"TOKEN": "sk-secret-123456"},
    )
    assert "sk-secret" not in repr(model)
    assert "sk-secret" not in str(model.to_dict())
    assert model.to_dict() == {
        "provider": "openai",
        "model": "gpt-x",
        "base_url": "http://127.0.0.1:1/v1",
    }


def test_unknown_provider_names_the_known_ones():
    with pytest.raises(ConfigurationError, match="scripted"):
        iModel(provider="nope")


def test_spec_strings():
    m = iModel.from_spec("ollama/llama3.2")
    assert (m.provider_name, m.model) == ("ollama", "llama3.2")
    assert iModel.from_spec("local").model is None


def test_cli_flag_is_known_without_starting_anything():
    assert iModel(provider="claude_code").is_cli
    assert not iModel(provider="scripted").is_cli
    assert iModel(provider="scripted", cli=True).is_cli


async def test_no_model_configured_fails_at_first_call_with_guidance(monkeypatch):
    monkeypatch.setattr(imodel_module, "local_model_available", lambda: False)
    branch = Branch()  # construction never resolves a model
    with pytest.raises(ConfigurationError, match="LION_NB_MODEL"):
        await branch.chat("hi")


async def test_env_spec_is_used_for_the_default_model(monkeypatch):
    monkeypatch.setenv("LION_NB_MODEL", "scripted/demo")
    branch = Branch()
    assert branch.chat_model.provider_name == "scripted"
    assert branch.chat_model.model == "demo"
    assert branch.parse_model is branch.chat_model


def test_copy_keeps_settings_and_credentials_but_not_session():
    model = iModel(provider="scripted", cli=True, api_key="k")
    model.provider_session_id = "abc"
    clone = model.copy()
    assert clone.is_cli and clone.provider_session_id is None


def test_context_window_describes_the_model_and_is_never_sent():
    from lion_nb.models.imodel import MODEL_FACTS

    assert "context_window" in MODEL_FACTS
    model = iModel(
        provider="openai", model="m", base_url="http://127.0.0.1:9/v1", context_window=4096
    )
    assert model.request_defaults["context_window"] == 4096  # the views read it here
    assert "context_window" not in model.provider.defaults  # never in a request body
    assert model.to_dict()["options"]["context_window"] == 4096  # a setting: it is saved
    local = iModel(provider="local", context_window=1024)
    assert "context_window" not in local.provider.defaults  # the local model does not refuse it

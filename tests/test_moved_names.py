"""Names that moved to their layer: ``FlowView`` is ``lion_nb.FlowView``, the flow's view model
is ``lion_nb.viewmodels.flow``, and ``lion_nb.tokens`` keeps its values while the view, the
samples and the providers' log-probability helpers live in their own modules. Every old path
still works for one release; one that now points up a layer says so with a
``DeprecationWarning`` naming the new path."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import lion_nb
import lion_nb.models.logprobs
import lion_nb.samples
from lion_nb.messages import AssistantResponse
from lion_nb.render.tokens_html import TokenView
from lion_nb.viewmodels import flow as flow_viewmodels
from lion_nb.widgets.flow_view import FlowView

REPLY = AssistantResponse.model_validate(
    {"response": "Hi", "tokens": [{"text": "Hi", "logprob": -0.1, "top": [["Hi", -0.1]]}]}
)


def test_flow_view_is_a_top_level_view() -> None:
    assert lion_nb.FlowView is FlowView
    assert "FlowView" in lion_nb.__all__


def test_flow_view_from_the_flow_package_still_works_with_a_warning() -> None:
    import lion_nb.flow

    assert "FlowView" not in lion_nb.flow.__all__
    with pytest.warns(DeprecationWarning, match="from lion_nb import FlowView"):
        from lion_nb.flow import FlowView as old
    assert old is FlowView


def test_the_old_view_model_path_re_exports_with_a_warning(monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "lion_nb.flow.view_model", raising=False)
    with pytest.warns(DeprecationWarning, match="lion_nb.viewmodels.flow"):
        old = importlib.import_module("lion_nb.flow.view_model")
    for name in ("FlowViewModel", "FlowSnapshot", "NodeRow", "error_text", "worker_of"):
        assert getattr(old, name) is getattr(flow_viewmodels, name), name


def test_the_token_view_is_still_lion_nb_tokens_called_without_a_warning(recwarn) -> None:
    view = lion_nb.tokens(REPLY)
    assert isinstance(view, TokenView)
    assert view.text == "Hi"
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize(
    ("name", "home", "new_name"),
    [
        ("TokenView", "lion_nb.render.tokens_html", "TokenView"),
        ("token_view", "lion_nb.render.tokens_html", "TokenView"),
        ("check_logprobs", "lion_nb.models.logprobs", "check_logprobs"),
        ("MAX_LOGPROBS", "lion_nb.models.logprobs", "MAX_LOGPROBS"),
        ("TokenDecoder", "lion_nb.models.logprobs", "TokenDecoder"),
        ("tokens_from_bytes", "lion_nb.models.logprobs", "tokens_from_bytes"),
        ("fit_tokens", "lion_nb.models.logprobs", "fit_tokens"),
    ],
)
def test_a_token_name_that_moved_up_a_layer_resolves_with_a_warning(
    name: str, home: str, new_name: str
) -> None:
    with pytest.warns(DeprecationWarning, match=f"lion_nb.tokens.{name} moved"):
        value = getattr(lion_nb.tokens, name)
    assert value is getattr(importlib.import_module(home), new_name)


def test_the_old_token_view_function_still_gives_the_view() -> None:
    with pytest.warns(DeprecationWarning, match=r"lion_nb\.tokens\(message\)"):
        from lion_nb.tokens import token_view
    assert isinstance(token_view(REPLY), TokenView)


def test_the_samples_are_values_still_importable_from_tokens(recwarn) -> None:
    from lion_nb.tokens import Samples, agreement, sampling_label, shared_units

    assert Samples is lion_nb.samples.Samples
    assert agreement is lion_nb.samples.agreement
    assert sampling_label is lion_nb.samples.sampling_label
    assert shared_units is lion_nb.samples.shared_units
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


def test_an_unknown_token_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        lion_nb.tokens.nope  # noqa: B018


def test_the_token_values_and_the_token_fork_load_no_renderer_view_or_widget() -> None:
    """``operations/fork_at_token.py`` reached ``render/`` through ``tokens.py``; the values,
    the samples and the providers' helpers import no module of a layer that draws."""
    code = (
        "import sys, json\n"
        "import lion_nb.tokens, lion_nb.samples, lion_nb.models.logprobs\n"
        "import lion_nb.operations.fork_at_token\n"
        "from lion_nb.tokens import decode_tokens_delta, encode_tokens_delta, token_choice\n"
        "decode_tokens_delta(encode_tokens_delta([token_choice('a', -0.5, [('a', -0.5)])]))\n"
        "drawing = ('lion_nb.render', 'lion_nb.viewmodels', 'lion_nb.widgets')\n"
        "print(json.dumps([m for m in sys.modules if m.startswith(drawing)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


DISPLAY_HOOKS = {"_repr_html_", "_repr_markdown_", "_repr_mimebundle_", "__rich__"}


def _imports_outside_display_hooks(tree: ast.AST, inside: str = "") -> list[str]:
    found: list[str] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found += _imports_outside_display_hooks(node, node.name)
        elif isinstance(node, ast.ImportFrom) and inside not in DISPLAY_HOOKS:
            found.append(node.module or "")
        elif isinstance(node, ast.Import) and inside not in DISPLAY_HOOKS:
            found += [alias.name for alias in node.names]
        else:
            found += _imports_outside_display_hooks(node, inside)
    return found


@pytest.mark.parametrize("module", ["tokens", "samples"])
def test_the_token_values_import_a_renderer_only_in_a_display_hook(module: str) -> None:
    path = Path(lion_nb.__file__).parent / f"{module}.py"
    imported = _imports_outside_display_hooks(ast.parse(path.read_text(encoding="utf-8")))
    drawing = ("lion_nb.render", "lion_nb.viewmodels", "lion_nb.widgets", "rich")
    assert [m for m in imported if m.startswith(drawing)] == []

"""The facade cannot drift: each Branch verb's parameters are accounted for by its
implementation, and the built-in operation list is exactly the facade's verbs."""

import importlib
import inspect
import typing

import pytest

from lion_nb import Branch
from lion_nb.operations import types

# verb -> (implementation module, function, parameter classes whose fields the facade fills)
IMPLEMENTATIONS = {
    "chat": ("chat", "chat", [types.ChatParam]),
    "chat_and_record": ("chat", "chat", [types.ChatParam]),
    "communicate": ("communicate", "communicate", [types.ChatParam, types.ParseParam]),
    "parse": ("parse", "parse", [types.ParseParam]),
    "interpret": ("interpret", "interpret", [types.ChatParam]),
    "run": ("run", "run", [types.RunParam]),
    "run_and_collect": ("run", "run_and_collect", [types.ChatParam, types.ParseParam]),
    "operate": ("operate", "operate", []),
    "act": ("act", "act", []),
    "ReAct": ("react", "ReAct", []),
    "ReActStream": ("react", "ReActStream", []),
    "fork_at_token": ("fork_at_token", "fork_at_token", []),
}
# facade spellings of parameter-object fields (the ADR's public names)
ALIASES = {
    "chat_model": "imodel",
    "parse_model": "imodel",
    "interpret_model": "imodel",
    "num_parse_retries": "max_retries",
    "request_type": "response_format",
    "text": "text",
    "return_ins_res_message": "return_ins_res_message",
}


def test_builtin_operation_list_matches_the_facade_exactly():
    names = set(typing.get_args(types.BranchOperations))
    assert names == set(IMPLEMENTATIONS)
    for name in names:
        assert callable(getattr(Branch, name)), name
    public_verbs = {
        n
        for n, f in vars(Branch).items()
        if not n.startswith("_")
        and (inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f))
    }
    assert public_verbs == names


@pytest.mark.parametrize("verb", sorted(IMPLEMENTATIONS))
def test_facade_parameters_are_accounted_for(verb):
    module_name, func_name, params = IMPLEMENTATIONS[verb]
    module = importlib.import_module(f"lion_nb.operations.{module_name}")
    impl = inspect.signature(getattr(module, func_name)).parameters
    fields = {f for cls in params for f in cls.__dataclass_fields__}
    facade = inspect.signature(getattr(Branch, verb)).parameters
    impl_takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in impl.values())
    for name, p in facade.items():
        if name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        target = ALIASES.get(name, name)
        assert target in impl or target in fields or name in impl or impl_takes_kwargs, (
            f"Branch.{verb}({name}=...) has no counterpart in {module_name}.{func_name} "
            f"or its parameter objects"
        )


def test_facade_modules_are_imported_lazily():
    source = inspect.getsource(importlib.import_module("lion_nb.session.branch"))
    top = source.split("class Branch")[0]
    assert "lion_nb.operations.chat" not in top and "lion_nb.models" not in top.replace(
        "from lion_nb.models.imodel import iModel", ""
    )

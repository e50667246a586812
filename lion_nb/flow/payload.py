"""What a node sends to a Ray worker, and how: data, never credentials.

A payload is the branch as data (``Branch.to_dict()``: messages, name, metadata), its models'
*settings* (``iModel.settings``: provider, model, public base URL, request options without any
secret-named option, header or ``env`` variable — ``lion_nb.secrets``), its tools and context
providers and, for a registered operation, the function itself (Ray's cloudpickle ships
notebook-defined functions and classes by value). The worker rebuilds the models with keys read
from its own environment.

Encoding uses a cloudpickle pickler that turns every ``iModel`` it meets, wherever it sits in
the parameters, into its settings, and refuses a ``Branch`` or ``Session`` (pass data, or let the
flow choose the branch). Each part is encoded on its own so an error names what cannot travel.
"""

from __future__ import annotations

import io
import pickle
from typing import TYPE_CHECKING, Any

from lion_nb.errors import OperationError
from lion_nb.flow.errors import NotTransferable
from lion_nb.models.imodel import iModel
from lion_nb.session.branch import Branch
from lion_nb.session.session import Session

if TYPE_CHECKING:
    from lion_nb.flow.node import Operation


def model_settings(model: iModel | None) -> dict[str, Any] | None:
    """A model as data: ``iModel.settings``, with the options that are code (a scripted reply
    function), which cloudpickle carries by value."""
    return None if model is None else model.settings(plain=False)


def rebuild_model(settings: dict[str, Any] | None) -> iModel | None:
    """On the worker: the model from its settings; keys come from the worker's environment."""
    if settings is None:
        return None
    return iModel.from_settings(settings)


def _pickler_class() -> type:
    from ray import cloudpickle  # lazy: ray (an optional extra) takes ~1.4 s to import

    class SafePickler(cloudpickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, iModel):
                return rebuild_model, (model_settings(obj),)
            if isinstance(obj, Branch | Session):
                raise NotTransferable(
                    f"a {type(obj).__name__} cannot travel to a Ray worker inside a node "
                    "(pass branch=... to flow.add, or the data it holds)"
                )
            return super().reducer_override(obj)

    return SafePickler


_PICKLER: list[type] = []


def encode(value: Any, what: str) -> bytes:
    """``value`` as bytes for a worker; ``NotTransferable`` naming ``what`` if it cannot be."""
    if not _PICKLER:
        _PICKLER.append(_pickler_class())
    buffer = io.BytesIO()
    try:
        _PICKLER[0](buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except NotTransferable as exc:
        raise NotTransferable(f"{what}: {exc}") from None
    except Exception as exc:
        raise NotTransferable(
            f"{what} cannot be sent to a Ray worker ({type(exc).__name__}: {exc}); pass "
            "plain data, or define it at module level in a package the workers can import"
        ) from exc
    return buffer.getvalue()


def build_payload(node: Operation, branch: Branch) -> dict[str, bytes | str]:
    """Every part a worker needs to run ``node`` on (a copy of) ``branch``, each encoded."""
    func = branch.get_operation(node.operation)
    if func is None:
        raise OperationError(f"Unsupported operation type: {node.operation}")
    registered = None if getattr(func, "__self__", None) is branch else func
    data = branch.to_dict()
    # the models travel once, below, as settings(plain=False): with their code-valued options
    data["chat_model"] = data["parse_model"] = None
    tools = [(t.name, t.description, t.func) for t in branch.tools] if len(branch.tools) else []
    parts: dict[str, bytes | str] = {
        "node_id": str(node.id),
        "operation": node.operation,
        "branch": encode(data, "the branch"),
        "chat_model": encode(model_settings(branch.chat_model_or_none), "the chat model"),
        "parse_model": encode(_parse_model_settings(branch), "the parse model"),
        "registered": encode(registered, f"the registered operation {node.operation!r}"),
    }
    parts["tools"] = encode([_encoded_tool(t) for t in tools], "the tools")
    parts["context_providers"] = encode(branch.context_providers, "the context providers")
    parts["parameters"] = encode(
        {k: _checked(k, v) for k, v in node.parameters.items()}, "the parameters"
    )
    return parts


def _parse_model_settings(branch: Branch) -> dict[str, Any] | None:
    parse = branch.parse_model if branch.chat_model_or_none is not None else None
    if parse is None or parse is branch.chat_model_or_none:
        return None
    return model_settings(parse)


def _encoded_tool(tool: tuple[str, str, Any]) -> tuple[str, str, Any]:
    encode(tool[2], f"tool {tool[0]!r}")  # fails here with the tool's name, not a list's
    return tool


def _checked(name: str, value: Any) -> Any:
    encode(value, f"parameter {name!r}")
    return value


def decode(data: bytes) -> Any:
    return pickle.loads(data)

"""Branch <-> plain data (JSON-safe dicts), and forking. Credentials are never written:
models are stored as their settings (``iModel.settings``) and rebuilt by
``iModel.from_settings`` with keys from the environment (or passed in again) when loaded.

This is the body of ``Branch.to_dict`` / ``from_dict`` / ``fork``, kept out of branch.py for
size. It sees the branch as ``Snapshotted`` (what it reads, private state included: it is the
facade's own code), so it does not import ``Branch`` and the two modules form no cycle."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lion_nb.messages import MESSAGE_LIST

if TYPE_CHECKING:
    from lion_nb.progression import Messages, Progression

FORMAT = "lion_nb.branch/1"


class Snapshotted(Protocol):
    """What a snapshot and a fork read from a branch (``Branch`` is the one implementation)."""

    id: uuid.UUID
    name: str | None
    user: str | None
    metadata: dict[str, Any]
    context_providers: list[Any]
    _chat_model: Any
    _parse_model: Any
    _tools: Any
    _messages: Messages

    def __init__(self, **kwargs: Any) -> None: ...

    @property
    def messages(self) -> Messages: ...

    @property
    def progression(self) -> Progression: ...

    @property
    def session(self) -> Any: ...

    @property
    def tools(self) -> Any: ...


B = TypeVar("B", bound=Snapshotted)


def branch_to_dict(branch: Snapshotted) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "id": str(branch.id),
        "name": branch.name,
        "user": branch.user,
        "metadata": branch.metadata,
        "chat_model": branch._chat_model.settings() if branch._chat_model else None,
        "parse_model": branch._parse_model.settings() if branch._parse_model else None,
        "tools": sorted(branch._tools.tools) if branch._tools else [],
        "messages": MESSAGE_LIST.dump_python(
            list(branch.messages),
            mode="json",
        ),
    }


def _model_from(data: dict[str, Any] | None) -> Any:
    if not data or data.get("provider") in (None, "scripted"):
        return None  # a scripted model's replies are code, not data
    # lazy: the model layer (~17 ms) loads only for a snapshot that names a provider
    from lion_nb.models.imodel import iModel

    return iModel.from_settings(data)


def branch_from_dict(cls: type[B], data: dict[str, Any], **overrides: Any) -> B:
    if data.get("format", FORMAT) != FORMAT:
        raise ValueError(f"unsupported branch format {data.get('format')!r}")
    kw: dict[str, Any] = {
        "name": data.get("name"),
        "user": data.get("user"),
        "chat_model": _model_from(data.get("chat_model")),
        "parse_model": _model_from(data.get("parse_model")),
        "id": uuid.UUID(data["id"]) if data.get("id") else None,
    }
    kw.update(overrides)
    branch = cls(**kw)
    branch.metadata.update(data.get("metadata") or {})
    for message in MESSAGE_LIST.validate_python(data.get("messages", [])):
        branch._messages._append(message)  # restoring, not new: no MessageAdded
    return branch


def fork_branch(branch: B, at: int | uuid.UUID | None, *, name: str | None) -> B:
    messages = list(branch.messages)
    if at is not None:
        index = branch.progression.index(at) if isinstance(at, uuid.UUID) else at
        if index < 0:
            index += len(messages)
        if not 0 <= index < len(messages):
            raise IndexError(f"fork point {at!r} is outside the branch ({len(messages)} messages)")
        messages = messages[: index + 1]
    cls = type(branch)
    forked = cls(
        chat_model=branch._chat_model,
        parse_model=branch._parse_model,
        name=name or (f"{branch.name} (fork)" if branch.name else None),
        user=branch.user,
    )
    if branch._tools is not None:
        forked.tools.tools.update(branch._tools.tools)
    forked.context_providers = list(branch.context_providers)
    forked.metadata["forked_from"] = {
        "branch_id": str(branch.id),
        "at": str(messages[-1].id) if messages else None,
        "index": len(messages) - 1,
    }
    for message in messages:  # same message values: shared history is literally shared
        forked._messages._append(message)
    if branch.session is not None:
        branch.session.include_branches(forked)
    return forked

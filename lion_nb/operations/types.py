"""Parameter objects passed through the operations seam, and the ``Middle`` protocol (ADR D5)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    from lion_nb.messages import Instruction
    from lion_nb.models.imodel import iModel
    from lion_nb.session.branch import Branch

BranchOperations = Literal[
    "chat",
    "chat_and_record",
    "communicate",
    "run",
    "run_and_collect",
    "operate",
    "parse",
    "act",
    "interpret",
    "ReAct",
    "ReActStream",
    "fork_at_token",
]
"""Every built-in verb of ``Branch``, exactly (a test keeps this in sync with the facade).
Graph nodes also accept any name a Session registers, hence ``BranchOperations | str``."""


OnStop = Literal["discard", "record"]
ON_STOP: tuple[OnStop, ...] = ("discard", "record")


def check_on_stop(value: Any) -> OnStop:
    """``value`` as an ``on_stop`` choice, or a ValueError naming the choices."""
    if value not in ON_STOP:
        raise ValueError(f"on_stop must be 'discard' or 'record', not {value!r}")
    return value


def default_data_dir() -> Path:
    """Per-user data directory (``$LION_NB_HOME``, else ``$XDG_DATA_HOME/lion_nb``, else
    ``~/.local/share/lion_nb``). Never the current working directory."""
    home = os.environ.get("LION_NB_HOME")
    if home:
        return Path(home)
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "lion_nb"


def default_persist_dir() -> Path:
    """Where ``run(stream_persist=True)`` writes a stream when no ``persist_dir`` is given:
    ``runs/`` in ``default_data_dir()``."""
    return default_data_dir() / "runs"


class _Param:
    __slots__ = ()
    if TYPE_CHECKING:  # every parameter class is a dataclass: what dataclasses.replace needs
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def with_(self, **changes: Any) -> Any:
        """A copy with some fields changed (parameter objects are frozen)."""
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Every field by name, values as they are (not copied, not made JSON-safe)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclasses.dataclass(slots=True, frozen=True, kw_only=True)
class ChatParam(_Param):
    """The options of one model request, frozen: what ``Branch.chat`` and ``communicate``
    build from their arguments and hand to a verb (and to a custom ``Middle``).

    The fields mirror the verbs' arguments: ``guidance``, ``context``, ``images`` and
    ``request_fields`` shape the instruction; ``progression`` picks the history sent;
    ``imodel`` is the model for this call (None: the branch's) and ``imodel_kw`` request
    options for it; ``include_token_usage_to_model`` tells the model roughly how long the
    conversation is; ``on_stop`` and ``fit_context`` / ``context_window`` as for
    ``communicate``. ``with_(...)`` gives a changed copy."""

    guidance: Any = None
    context: Any = None
    sender: str | None = None
    recipient: str | None = None
    response_format: type[BaseModel] | dict | None = None
    request_fields: dict | list[str] | None = None
    progression: Any = None
    tool_schemas: list[dict] | None = None
    tool_choice: Any = None
    images: list | None = None
    image_detail: Literal["low", "high", "auto"] | None = None
    plain_content: str | None = None
    include_token_usage_to_model: bool = False
    imodel: iModel | None = None
    imodel_kw: dict | None = None
    # what a stopped (cancelled) recorded exchange keeps: nothing (ADR-0021), or the
    # instruction and the partial reply, marked ``metadata["stopped"]`` (what a chat view does)
    on_stop: OnStop = "discard"
    # send the system message and the most recent whole turns that fit the window
    fit_context: bool = False
    context_window: int | None = None  # tokens; overrides the model's window for this call


@dataclasses.dataclass(slots=True, frozen=True, kw_only=True)
class RunParam(ChatParam):
    """A ``ChatParam`` for ``run`` (a CLI agent's stream): plus whether and where the stream
    is written to disk as it arrives (``stream_persist``, ``persist_dir``, ``snapshot_dir``)."""

    stream_persist: bool = False
    persist_dir: str | Path | None = None  # None -> default_persist_dir()
    snapshot_dir: str | Path | None = None  # None -> persist_dir

    @classmethod
    def from_chat(cls, chat_param: ChatParam, **extra: Any) -> RunParam:
        """Promote a ChatParam (run_and_collect does this)."""
        if isinstance(chat_param, RunParam):
            return chat_param.with_(**extra) if extra else chat_param
        return cls(**chat_param.as_dict(), **extra)


@dataclasses.dataclass(slots=True, frozen=True, kw_only=True)
class ParseParam(_Param):
    """How to parse a reply, frozen: the target (``response_format``), key matching
    (``fuzzy_match``, ``similarity_threshold``), how many repair turns (``max_retries``) with
    which model (``imodel``, ``imodel_kw``), and what a text that never parses gives
    (``handle_validation``)."""

    response_format: type[BaseModel] | dict | None = None
    fuzzy_match: bool = True
    similarity_threshold: float = 0.85
    handle_validation: Literal["raise", "return_value", "return_none"] = "raise"
    max_retries: int = 3
    imodel: iModel | None = None
    imodel_kw: dict | None = None


@runtime_checkable
class Middle(Protocol):
    """One logical exchange adapter (ADR D5): may call a provider once, consume a stream of
    several assistant messages, or run a bounded series of recorded inner exchanges. It owns
    clearing and recording for the exchange it performs."""

    async def __call__(
        self,
        branch: Branch,
        instruction: Instruction | Any,
        chat_param: ChatParam,
        parse_param: ParseParam | None = None,
        clear_messages: bool = False,
        skip_validation: bool = False,
    ) -> Any: ...

"""Type annotations read for display and validation: readable names, ``X | None`` unwrapped,
the declared fields of a model, the annotation of a container's items."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

__all__ = ["item_annotation", "model_fields", "type_name", "unwrap"]


def type_name(annotation: Any) -> str:
    """``list[Item]``, ``str | None``, ``Item`` — readable, without ``typing.``."""
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    if origin is None:
        return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in args) + "]"
    if origin is typing.Annotated:
        return type_name(args[0])
    name = getattr(origin, "__name__", str(origin))
    return f"{name}[{', '.join(type_name(a) for a in args)}]" if args else name


def model_fields(annotation: Any) -> dict[str, Any] | None:
    """A pydantic model's fields by their JSON name (alias), with their annotations."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {(f.alias or name): f.annotation for name, f in annotation.model_fields.items()}
    return None


def unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``, ``Annotated[X, ...]`` -> ``X`` (for walking into the value)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    if origin is typing.Annotated:
        return unwrap(typing.get_args(annotation)[0])
    return annotation


def item_annotation(annotation: Any, key: Any) -> Any:
    """The annotation of ``value[key]`` for a value annotated ``annotation`` (None if unknown)."""
    annotation = unwrap(annotation)
    fields = model_fields(annotation)
    if fields is not None:
        return fields.get(key)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, tuple, set, frozenset) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None

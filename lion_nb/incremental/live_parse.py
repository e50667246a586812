"""A structured reply validated while it streams, one completed value at a time.

``LiveParse(Model)`` feeds text deltas to ``PartialJSON`` and validates each value the moment
it completes: a top-level field against its declared type (with the field's constraints), an
item of a list/dict field against the item type. Deeper values are checked as part of their
field. The whole object is validated once, when it closes. Every value is validated a bounded
number of times, so the work is linear in the reply (``validations`` counts it), unlike
re-parsing the accumulated text per chunk.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from lion_nb.incremental.annotations import unwrap
from lion_nb.incremental.partial_json import PartialJSON, PartialJSONError

__all__ = ["LiveParse"]

Path = tuple[Any, ...]


def _errors(exc: ValidationError, prefix: Path = ()) -> list[dict[str, Any]]:
    return [
        {"loc": [*prefix, *e["loc"]], "msg": e["msg"], "type": e["type"]}
        for e in exc.errors(include_url=False)
    ]


class LiveParse:
    """Incremental validation of one streamed JSON reply against ``model_type`` (a pydantic
    model class; None only tracks the JSON). ``status``: waiting | streaming | valid |
    invalid | not-json."""

    def __init__(self, model_type: type[BaseModel] | None = None) -> None:
        self.model_type = model_type
        self.validations = 0  # values validated (linearity is tested against this)
        self._fields: dict[str, Any] = {}
        self._adapters: dict[Path, TypeAdapter[Any] | None] = {}
        if model_type is not None:
            for name, info in model_type.model_fields.items():
                self._fields[info.alias or name] = info
        self.reset()

    def reset(self) -> None:
        """Forget the reply (a new one is starting)."""
        self.scanner = PartialJSON()
        self.status = "waiting"
        self.field_status: dict[Path, str] = {}
        self.field_errors: dict[Path, list[dict[str, Any]]] = {}
        self.result: Any = None
        self.errors: list[dict[str, Any]] = []
        self.error: str | None = None

    # ----- input -------------------------------------------------------------------------
    def feed(self, text: str) -> int:
        """Scan a delta; returns how many values completed in it."""
        if self.status in ("not-json", "valid", "invalid"):
            return 0
        try:
            completed = self.scanner.feed(text)
        except PartialJSONError as exc:
            self.status = "not-json"
            self.error = str(exc)
            return 0
        if self.scanner.value is not None and self.status == "waiting":
            self.status = "streaming"
        for item in completed:
            self._check(item.path, item.value)
        return len(completed)

    def finish(self) -> Any:
        """The reply ended. Returns the validated result (or None)."""
        if self.status in ("valid", "invalid", "not-json"):
            return self.result
        try:
            self.scanner.finish()
        except PartialJSONError as exc:
            self.status = "not-json"
            self.error = str(exc)
            return None
        if self.scanner.value is None:
            self.status = "not-json"
            self.error = "no JSON object in the reply"
        return self.result

    # ----- validation --------------------------------------------------------------------
    def _adapter_for(self, path: Path) -> TypeAdapter[Any] | None:
        """The validator for a top-level field, or for an item of a list/dict field; cached
        by shape, so every item of one list shares its adapter."""
        key = path if len(path) < 2 else (path[0], 0 if isinstance(path[1], int) else "*")
        if key in self._adapters:
            return self._adapters[key]
        adapter: TypeAdapter[Any] | None = None
        info = self._fields.get(path[0]) if isinstance(path[0], str) else None
        if info is not None:
            if len(path) == 1:  # the FieldInfo carries the field's constraints
                adapter = TypeAdapter(Annotated[info.annotation, info])  # type: ignore[arg-type]  # a runtime type form
            else:
                inner = unwrap(info.annotation)
                origin = typing.get_origin(inner)
                args = typing.get_args(inner)
                if origin in (list, tuple, set, frozenset) and args and isinstance(path[1], int):
                    adapter = TypeAdapter(args[0])
                elif origin is dict and len(args) == 2:
                    adapter = TypeAdapter(args[1])
        self._adapters[key] = adapter
        return adapter

    def _check(self, path: Path, value: Any) -> None:
        if path == ():
            self._check_root(value)
            return
        if self.model_type is None or len(path) > 2:
            return
        adapter = self._adapter_for(path)
        if adapter is None:
            return
        self.validations += 1
        try:
            adapter.validate_python(value)
        except ValidationError as exc:
            self.field_status[path] = "invalid"
            self.field_errors[path] = _errors(exc, path)
        else:
            self.field_status[path] = "ok"
            self.field_errors.pop(path, None)

    def _check_root(self, value: Any) -> None:
        if self.model_type is None:
            self.result = value
            self.status = "valid"
            return
        self.validations += 1
        try:
            self.result = self.model_type.model_validate(value)
        except ValidationError as exc:
            self.errors = _errors(exc)
            self.status = "invalid"
        else:
            self.errors = []
            self.status = "valid"

    # ----- output ------------------------------------------------------------------------
    def all_errors(self) -> list[dict[str, Any]]:
        if self.status in ("valid", "invalid"):
            return self.errors
        return [e for errs in self.field_errors.values() for e in errs]

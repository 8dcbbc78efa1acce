"""The C RECORD caster (``_record_caster.c``); see ``codegen.specialised_record``."""

from collections.abc import Callable
from typing import Any

KEEP_NONE: int
KEEP_BOOL: int
KEEP_STR: int
KEEP_INT64: int
KEEP_FINITE: int

class RecordCaster:
    """A RECORD caster for objects keyed by raw names; anything else goes to ``general``."""

    def __init__(
        self,
        raw_names: tuple[str, ...],
        names: tuple[str, ...],
        casters: tuple[Callable[[Any, list[Any]], Any], ...],
        keep: tuple[int, ...],
        required: tuple[bool, ...],
        general: Callable[[Any, list[Any]], Any],
    ) -> None: ...
    def __call__(self, value: Any, errors: list[Any], /) -> Any: ...

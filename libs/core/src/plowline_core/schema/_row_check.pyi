"""The C row check (``_row_check.c``); see ``widening.missing_fields``."""

from collections.abc import Mapping
from typing import Any

def all_known(checker: tuple[Any, ...], row: Mapping[str, Any], /) -> bool:
    """Return True only when ``missing_fields`` would find no unknown key in ``row``."""

"""The C decoder of enriched lines (``_line_decoder.c``); see ``atomic.decode_valid_line``."""

from collections.abc import Sequence
from typing import Any

class LineDecoder:
    """A decoder of lines whose fields are (name, kind code, required), in TSV order."""

    def __init__(self, fields: Sequence[tuple[str, int, bool]]) -> None: ...
    def decode(self, line: str, /) -> tuple[dict[str, Any], str, str, str] | None:
        """Return (atomic values, *entity texts) of a valid line, or None to look closer."""

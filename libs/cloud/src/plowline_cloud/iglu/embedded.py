"""An Iglu registry on the local file system (Snowplow's "embedded" repository)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
from plowline_core.errors import ConfigError, RegistryUnavailable
from plowline_core.iglu.key import SchemaKey, SchemaVer


class EmbeddedRegistry:
    """Satisfy ``Registry`` from ``{path}/schemas/{vendor}/{name}/{format}/{M-R-A}``.

    Notes:
        ``path`` is the directory that CONTAINS ``schemas/``, as in Snowplow's embedded
        repositories and Iglu Central's checkout. Picklable (a name and a path).
        Confined: a key whose file would lie outside ``schemas/`` once ``.`` and ``..`` are
        resolved (``SchemaKey`` already refuses them) is not read: no schema is there.
    """

    def __init__(self, name: str, path: Path) -> None:
        if not path.is_dir():
            raise ConfigError(f"embedded repository {name!r}: {path} is not a directory")
        self._name = name
        self._root = path / "schemas"

    @property
    def name(self) -> str:
        """The repository's name."""
        return self._name

    @property
    def root(self) -> Path:
        """The ``schemas`` directory read from."""
        return self._root

    def lookup(self, key: SchemaKey) -> Mapping[str, Any] | None:
        """Return the schema file's JSON object, or None when there is no such file."""
        parts = (key.vendor, key.name, key.format, str(key.version))
        if not all(map(_plain_segment, parts)):
            return None  # the file would lie outside schemas/: no schema of ours is there
        location = self._root.joinpath(*parts)
        try:
            content = location.read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as error:
            raise RegistryUnavailable(f"{self._name}: cannot read {location}: {error}") from error
        return _schema_object(self._name, location, content)

    def list_versions(
        self, vendor: str, name: str, format: str, model: int
    ) -> Sequence[SchemaVer] | None:
        """Return the versions of the model held as files (``M-R-A`` names; others ignored)."""
        folder = self._root / vendor / name / format
        try:
            names = [entry.name for entry in folder.iterdir() if entry.is_file()]
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as error:
            raise RegistryUnavailable(f"{self._name}: cannot list {folder}: {error}") from error
        versions: list[SchemaVer] = []
        for entry in names:
            try:
                version = SchemaVer.parse(entry)
            except ValueError:
                continue
            if version.model == model:
                versions.append(version)
        return sorted(versions)


def _plain_segment(part: str) -> bool:
    """Whether ``part`` names one entry inside its directory (not ``..``, no separator)."""
    separators = {"/", os.sep, os.altsep or "/", "\0"}
    return part not in {"", ".", ".."} and not any(sep in part for sep in separators)


def _schema_object(name: str, location: Path, content: bytes) -> Mapping[str, Any]:
    try:
        schema = orjson.loads(content)
    except orjson.JSONDecodeError as error:
        raise RegistryUnavailable(f"{name}: {location} is not JSON: {error}") from error
    if not isinstance(schema, dict):
        raise RegistryUnavailable(f"{name}: {location} is not a JSON object")
    return schema

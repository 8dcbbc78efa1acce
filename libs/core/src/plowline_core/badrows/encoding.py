"""Encode a bad row as compact JSON, whatever it holds: encoding a bad row never fails.

A bad row carries what a sender sent, so ``dumps`` is total: any document the parser can
produce, and any document built in memory from dicts, lists, tuples, strings and numbers,
encodes without an exception and without Python recursion, at any depth.

What the payload holds:
    Exactly the document, with these rules for what JSON or its readers cannot take:

    ======================================== ============================================
    in the document                          in the bad row
    ======================================== ============================================
    text that is not valid Unicode (lone     U+FFFD in place of each lone surrogate (a
    surrogates, from a ``str`` built in      surrogate pair becomes its character)
    memory)
    an integer beyond 64 bits                its exact decimal digits
    NaN, Infinity                            null (as orjson, and circe, write them)
    a container nested deeper than           a JSON string holding its compact JSON text
    ``MAX_DEPTH`` levels into the bad row    (so every bad row reads back: orjson reads
                                             1024 levels, Python's json module ~990)
    a key that is not a string               its JSON text (``1``, ``true``, ``null``)
    a container that contains itself         null where it recurs
    any other object                         ``str(value)`` as a string
    ======================================== ============================================

Notes:
    Pure. Speed: one orjson call when it can encode the whole document (every bad row of
    well-formed data). Otherwise one pass measures the height of every container, and
    orjson encodes each largest subtree it can take in one call (orjson stops at 255
    levels); only the levels above are written here, with an explicit stack.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

MAX_DEPTH = 500
"""Containers nested deeper than this in a bad row are written as their JSON text."""

# orjson refuses 255 nested containers; subtrees this tall or less go to it in one call.
_ORJSON_HEIGHT = 250
_NULL = b"null"


class _Emit(bytes):
    """Bytes to write as they are (a token on the encoder's stack, never a value)."""


class _Leave:
    """Marks the end of a container on the encoder's stack (pops it off the path)."""

    __slots__ = ("key",)

    def __init__(self, key: int) -> None:
        self.key = key


_COMMA, _COLON = _Emit(b","), _Emit(b":")
_OPEN_LIST, _CLOSE_LIST = _Emit(b"["), _Emit(b"]")
_OPEN_OBJECT, _CLOSE_OBJECT = _Emit(b"{"), _Emit(b"}")


def dumps(document: Any, *, max_depth: int | None = MAX_DEPTH) -> bytes:
    """Encode ``document`` as compact JSON; never raises (see the module docstring).

    Notes:
        ``max_depth=None`` writes every level as it is (for JSON text kept in a string,
        such as a STRING column's value, where depth does not matter).
    """
    try:
        return orjson.dumps(document)
    except orjson.JSONEncodeError:
        return _encode(document, _heights(document), max_depth)


def _is_container(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)


def _children(value: Any) -> Any:
    return value.values() if isinstance(value, Mapping) else value


def _heights(document: Any) -> dict[int, int]:
    """Return the height of every container in ``document`` by ``id`` (a scalar is 0).

    Notes:
        Iterative post-order; a shared container is measured once; an edge back to a
        container on the current path (a cycle) is not followed.
    """
    heights: dict[int, int] = {}
    if not _is_container(document):
        return heights
    on_path = {id(document)}
    stack = [(document, iter(_children(document)))]
    while stack:
        node, pending = stack[-1]
        for child in pending:
            if _is_container(child) and id(child) not in heights and id(child) not in on_path:
                on_path.add(id(child))
                stack.append((child, iter(_children(child))))
                break
        else:
            stack.pop()
            on_path.discard(id(node))
            heights[id(node)] = 1 + max(
                (heights.get(id(child), 0) for child in _children(node) if _is_container(child)),
                default=0,
            )
    return heights


def _encode(document: Any, heights: dict[int, int], cap: int | None) -> bytes:
    """Return the JSON of ``document``; containers deeper than ``cap`` become JSON text."""
    out: list[bytes] = []
    on_path: set[int] = set()
    depth = 0
    stack: list[Any] = [document]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is _Emit:
            out.append(item)
        elif kind is _Leave:
            on_path.discard(item.key)
            depth -= 1
        elif not _is_container(item):
            out.append(_scalar(item))
        elif id(item) in on_path:
            out.append(_NULL)  # a container inside itself
        elif cap is not None and depth >= cap:
            text = _encode(item, heights, None).decode()
            out.append(orjson.dumps(text))
        else:
            height = heights.get(id(item), _ORJSON_HEIGHT)
            if height < _ORJSON_HEIGHT and (cap is None or depth + height <= cap):
                try:
                    out.append(orjson.dumps(item))
                    continue
                except orjson.JSONEncodeError:
                    pass  # a value orjson refuses somewhere inside: open it up
            on_path.add(id(item))
            depth += 1
            stack.append(_Leave(id(item)))
            stack.extend(_opened(item))
    return b"".join(out)


def _opened(container: Any) -> list[Any]:
    """Return the stack items writing ``container`` (reversed: the last one is written first)."""
    items: list[Any] = []
    if isinstance(container, Mapping):
        items.append(_CLOSE_OBJECT)
        for index, (key, value) in enumerate(reversed(list(container.items()))):
            if index:
                items.append(_COMMA)
            items.extend((value, _COLON, _Emit(_key(key))))
        items.append(_OPEN_OBJECT)
    else:
        items.append(_CLOSE_LIST)
        for index, value in enumerate(reversed(container)):
            if index:
                items.append(_COMMA)
            items.append(value)
        items.append(_OPEN_LIST)
    return items


def _scalar(value: Any) -> bytes:
    """Return the JSON of a value that is not a container."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        pass
    if isinstance(value, str):
        return orjson.dumps(_valid_text(value))
    if isinstance(value, int):  # beyond 64 bits: JSON numbers have no size limit
        return str(int(value)).encode()
    return orjson.dumps(_valid_text(str(value)))


def _key(key: Any) -> bytes:
    """Return the JSON string of an object key."""
    if isinstance(key, str):
        text = key
    elif key is None or isinstance(key, bool | int | float):
        text = json.dumps(key)
    else:
        text = str(key)
    try:
        return orjson.dumps(text)
    except orjson.JSONEncodeError:
        return orjson.dumps(_valid_text(text))


def _valid_text(text: str) -> str:
    """Return ``text`` with U+FFFD for each lone surrogate (pairs become their character)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")

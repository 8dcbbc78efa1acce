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
    nesting past ``GUARD_DEPTH`` levels      null there (only a document built in
    (a container that contains itself)       memory can nest so deep: one that
                                             contains itself)
    any other object                         ``str(value)`` as a string
    ======================================== ============================================

Notes:
    Pure. Speed: one orjson call when it can encode the whole document (every bad row of
    well-formed data). Otherwise the levels orjson cannot take (it stops at 255) are
    written here, with an explicit stack, a run of spine links at a time, and orjson
    writes every subtree it can take (tried at two levels of every 64, so a deep spine
    costs a few failed calls). Parsed lines never need it: the parser refuses entity JSON
    nested deeper than ``event.entities.MAX_NESTING`` (250), so their bad rows (3 levels
    more) are one orjson call; this path is the safety net for anything built in memory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

MAX_DEPTH = 500
"""Containers nested deeper than this in a bad row are written as their JSON text."""

GUARD_DEPTH = 20_000
"""Nesting past this (only a container inside itself) is written as null."""

# orjson refuses 255 nested containers: it is tried where what it writes stays within a
# bad row's cap even if it nests this deep, and at two levels of every _SLAB along a spine.
_ORJSON_HEIGHT = 254
_SLAB = 64
_NULL = b"null"


class _Emit(bytes):
    """Bytes to write as they are (a token on the encoder's stack, never a value)."""


class _Close:
    """Closing text to write, ending ``levels`` levels (a token, never a value)."""

    __slots__ = ("levels", "text")

    def __init__(self, text: bytes, levels: int) -> None:
        self.text = text
        self.levels = levels


# Types that are never containers: checked first, as one set lookup.
_PLAIN = frozenset({str, int, float, bool, type(None)})
_COMMA, _COLON = _Emit(b","), _Emit(b":")
_CLOSE_LIST, _CLOSE_OBJECT = _Close(b"]", 1), _Close(b"}", 1)


def dumps(document: Any, *, max_depth: int | None = MAX_DEPTH) -> bytes:
    """Encode ``document`` as compact JSON; never raises (see the module docstring).

    Notes:
        ``max_depth=None`` writes every level as it is (for JSON text kept in a string,
        such as a STRING column's value, where depth does not matter).
    """
    try:
        return orjson.dumps(document)
    except orjson.JSONEncodeError:
        return _encode(document, max_depth)


def _is_container(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)


def _encode(document: Any, cap: int | None) -> bytes:
    """Return the JSON of ``document``; containers deeper than ``cap`` become JSON text.

    Notes:
        orjson is tried on a container at levels 0 and 1 of every ``_SLAB`` (when what it
        writes cannot pass ``cap``); the levels between are written here.
    """
    out: list[bytes] = []
    depth = 0  # containers opened here around the next item
    stack: list[Any] = [document]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is _Emit:
            out.append(item)
            continue
        if kind is _Close:
            out.append(item.text)
            depth -= item.levels
            continue
        if kind in _PLAIN or not (kind is list or kind is dict or _is_container(item)):
            out.append(_scalar(item))
            continue
        if depth >= GUARD_DEPTH:
            out.append(_NULL)
            continue
        if cap is not None and depth >= cap:
            out.append(orjson.dumps(_encode(item, None).decode()))
            continue
        if depth % _SLAB < 2 and (cap is None or depth + _ORJSON_HEIGHT <= cap):
            try:
                out.append(orjson.dumps(item))
                continue
            except orjson.JSONEncodeError:
                pass  # too deep, or a value orjson refuses inside: open it up
        # A deep spine: containers whose entries are all plain but one container are
        # written a run at a time, up to where orjson is tried next (or the cap).
        stop = min(_SLAB - depth % _SLAB, GUARD_DEPTH - depth)
        if cap is not None:
            stop = min(stop, cap - depth)
        opening: list[bytes] = []
        closing: list[bytes] = []
        inner = item
        while len(opening) < stop:
            step = _spine_step(inner)
            if step is None:
                break
            opening.append(step[0])
            closing.append(step[2])
            inner = step[1]
        if opening:
            out.append(b"".join(opening))
            depth += len(opening)
            closing.reverse()
            stack += (_Close(b"".join(closing), len(opening)), inner)
        else:
            depth += 1
            _open(item, out, stack)
    return b"".join(out)


def _spine_step(node: Any) -> tuple[bytes, Any, bytes] | None:
    """Return (text before, the one container entry, text after) of a spine link, else None.

    Notes:
        A link is a list or dict whose entries are all plain values orjson writes, but
        one that is a list or dict; None for anything else (written entry by entry).
    """
    kind = type(node)
    if kind is list:
        if len(node) == 1:
            child = node[0]
            return (b"[", child, b"]") if type(child) is list or type(child) is dict else None
        at = _only_container(node)
        if at < 0:
            return None
        before, after = node[:at], node[at + 1 :]
    elif kind is dict:
        items = list(node.items())
        at = _only_container([value for _, value in items])
        if at < 0 or type(items[at][0]) is not str:
            return None
        before, after = dict(items[:at]), dict(items[at + 1 :])
    else:
        return None
    try:
        head = orjson.dumps(before)[:-1] + (b"," if before else b"")
        if kind is dict:
            head += orjson.dumps(items[at][0]) + b":"
        tail = b"," + orjson.dumps(after)[1:] if after else orjson.dumps(after)[1:]
    except orjson.JSONEncodeError:  # a plain value orjson refuses, a key that is not text
        return None
    return head, items[at][1] if kind is dict else node[at], tail


def _only_container(values: list[Any]) -> int:
    """Return the index of the one list or dict among plain values, else -1."""
    at = -1
    for index, value in enumerate(values):
        kind = type(value)
        if kind in _PLAIN:
            continue
        if at >= 0 or not (kind is list or kind is dict):
            return -1
        at = index
    return at


def _open(container: Any, out: list[bytes], stack: list[Any]) -> None:
    """Write the opening bracket; push the entries and the closing bracket (last first).

    Notes:
        Consecutive plain values (strings, numbers…) are written by one orjson call.
    """
    entries: list[tuple[Any, ...]] = []  # in writing order, each its stack items in order
    chunk: Any
    if isinstance(container, Mapping):
        out.append(b"{")
        stack.append(_CLOSE_OBJECT)
        chunk = {}
        for key, value in container.items():
            if type(value) in _PLAIN and type(key) is str:
                chunk[key] = value
                continue
            if chunk:
                entries.append((_entries(chunk),))
                chunk = {}
            entries.append((_Emit(_key(key) + b":"), value))
    else:
        out.append(b"[")
        stack.append(_CLOSE_LIST)
        chunk = []
        for value in container:
            if type(value) in _PLAIN:
                chunk.append(value)
                continue
            if chunk:
                entries.append((_entries(chunk),))
                chunk = []
            entries.append((value,))
    if chunk:
        entries.append((_entries(chunk),))
    for index in range(len(entries) - 1, -1, -1):
        stack.extend(reversed(entries[index]))
        if index:
            stack.append(_COMMA)


def _entries(chunk: Any) -> _Emit:
    """Return the entries of a dict or list of plain values, without the brackets."""
    try:
        return _Emit(orjson.dumps(chunk)[1:-1])
    except orjson.JSONEncodeError:  # text that is not Unicode, an integer past 64 bits
        if isinstance(chunk, dict):
            pairs = (_key(key) + b":" + _scalar(value) for key, value in chunk.items())
            return _Emit(b",".join(pairs))
        return _Emit(b",".join(_scalar(value) for value in chunk))


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

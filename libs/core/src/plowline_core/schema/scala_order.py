"""The iteration order of Scala 2.13's immutable HashMap and HashSet over string keys.

Loader 2.x names a recovery column by a hash of a schema as schema-ddl re-encodes it, and that
encoding writes ``properties`` (5 keys or more) and ``type`` lists (5 entries or more) in the
order Scala's immutable HashMap / HashSet iterates them. This module reproduces that order.

The structure is a CHAMP trie:

- each key's hash is Java's ``String.hashCode``, then ``scala.collection.Hashing.improve``;
- a node partitions keys by 5 bits of that hash, the lowest bits first (shift 0, 5, …, 30);
- a node lists its own entries (keys alone in their partition) first, by partition index,
  then its sub-nodes, by partition index, each visited depth first the same way;
- keys whose whole 32-bit hashes are equal share a collision node, in insertion order.

Notes:
    Pure. Held to the real ``scala-library`` 2.13 by ``tests/tool/core/test_scala_order.py``,
    which runs a small Java program against the jar pyspark ships (when ``java`` is present).
"""

from __future__ import annotations

from collections.abc import Iterable

_MASK32 = 0xFFFFFFFF
_BITS = 5
_WIDTH = 32


def java_string_hash(text: str) -> int:
    """Return Java's ``String.hashCode`` of ``text`` as a signed 32-bit int (UTF-16 units)."""
    value = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for index in range(0, len(units), 2):
        value = (31 * value + ((units[index] << 8) | units[index + 1])) & _MASK32
    return _signed(value)


def improve(hcode: int) -> int:
    """Return ``scala.collection.Hashing.improve(hcode)`` as an unsigned 32-bit int."""
    h = hcode & _MASK32
    h = (h + (~(h << 9) & _MASK32)) & _MASK32
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK32
    return h ^ (h >> 10)


def champ_order(keys: Iterable[str]) -> list[str]:
    """Return distinct ``keys`` in the order a Scala 2.13 immutable HashMap/HashSet iterates them.

    Notes:
        Duplicates keep their first occurrence (a later ``updated`` replaces the value only).
        Only meaningful for 5 keys or more: Scala's Map1..Map4 / Set1..Set4 keep insertion
        order, which callers handle themselves.
    """
    distinct = list(dict.fromkeys(keys))
    hashed = [(improve(java_string_hash(key)), key) for key in distinct]
    return _walk(hashed, 0)


def _walk(entries: list[tuple[int, str]], shift: int) -> list[str]:
    """Return the iteration order of the node holding ``entries`` at ``shift``."""
    if shift >= _WIDTH:
        return [key for _, key in entries]  # one collision node: insertion order
    partitions: dict[int, list[tuple[int, str]]] = {}
    for entry in entries:
        partitions.setdefault((entry[0] >> shift) & (_WIDTH - 1), []).append(entry)
    data = [group[0][1] for _, group in sorted(partitions.items()) if len(group) == 1]
    nodes: list[str] = []
    for _, group in sorted(partitions.items()):
        if len(group) > 1:
            nodes.extend(_sub_node(group, shift + _BITS))
    return data + nodes


def _sub_node(entries: list[tuple[int, str]], shift: int) -> list[str]:
    """Return the order of a sub-node; equal full hashes collapse into one collision node."""
    if len({entry[0] for entry in entries}) == 1:
        return [key for _, key in entries]
    return _walk(entries, shift)


def _signed(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value

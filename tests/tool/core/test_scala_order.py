"""Scala 2.13's HashMap/HashSet iteration order, held to the real scala-library."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from plowline_core.schema.scala_order import champ_order, improve, java_string_hash

_JAVA_SOURCE = Path(__file__).with_name("java") / "ChampOrder.java"
# Keys with equal String.hashCode ("Aa" and "BB" hash alike): collision nodes.
_COLLIDING = ["AaAa", "AaBB", "BBAa", "BBBB", "AaAaAa", "BBBBBB"]


def _scala_library() -> Path | None:
    jars = Path(sys.prefix, "lib").glob(
        "python3*/site-packages/pyspark/jars/scala-library-2.13*.jar"
    )
    return next(iter(sorted(jars)), None)


def _key_sets() -> list[list[str]]:
    rng = random.Random(20261127)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-$é☃"
    sets: list[list[str]] = []
    for size in list(range(5, 40)) + [64, 100, 257, 1000]:
        for _ in range(4):
            keys = {"".join(rng.choices(alphabet, k=rng.randint(1, 12))) for _ in range(size)}
            sets.append(sorted(keys, key=lambda _: rng.random()))
    sets.append(_COLLIDING + ["x", "y"])
    sets.append(["type", "properties", "minimum", "maximum", "items", "format", "enum"])
    return sets


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", 0, id="empty"),
        pytest.param("Aa", 2112, id="Aa"),
        pytest.param("BB", 2112, id="BB-collides-with-Aa"),
        pytest.param("hello world", 1794106052, id="ascii"),
        pytest.param("\U0001f600", 1772899, id="surrogate-pair"),
        pytest.param("abcdefghijklmnop", -2093879032, id="overflow-negative"),
    ],
)
def test_java_string_hash_matches_java(text: str, expected: int) -> None:
    """java_string_hash gives String.hashCode, overflow and UTF-16 units included."""
    assert expected == java_string_hash(text)


def test_improve_is_a_32_bit_value() -> None:
    """improve maps a signed hash to an unsigned 32-bit value."""
    assert 0 <= improve(-1) < 2**32


def test_champ_order_keeps_first_occurrence_of_duplicates() -> None:
    """A key given twice appears once."""
    assert sorted(champ_order(["a", "b", "a", "c", "d", "e"])) == ["a", "b", "c", "d", "e"]


def test_champ_order_matches_scala_library(tmp_path: Path) -> None:
    """champ_order equals the real HashSet's and HashMap's iteration order on random key sets."""
    jar = _scala_library()
    if shutil.which("javac") is None or shutil.which("java") is None or jar is None:
        pytest.skip("needs javac, java and pyspark's scala-library 2.13 jar")
    subprocess.run(
        ["javac", "-cp", str(jar), "-d", str(tmp_path), str(_JAVA_SOURCE)],
        check=True,
        capture_output=True,
    )
    sets = _key_sets()
    stdin = "\n".join(" ".join(key.encode().hex() for key in keys) for keys in sets) + "\n"
    result = subprocess.run(
        ["java", "-cp", f"{jar}:{tmp_path}", "ChampOrder"],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert len(sets) == len(lines)
    for keys, line in zip(sets, lines, strict=True):
        set_order, map_order = (
            [bytes.fromhex(item).decode() for item in part.split()] for part in line.split("\t")
        )
        assert set_order == champ_order(keys), keys
        assert map_order == champ_order(keys), keys

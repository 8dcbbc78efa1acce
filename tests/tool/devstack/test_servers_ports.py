"""Ports for the stand-ins: chosen together, so no two servers are handed the same one."""

from __future__ import annotations

from plowline_devstack.stack.servers import free_ports


def test_free_ports_are_distinct_even_when_many_are_asked_at_once() -> None:
    """Fifty ports asked in one call are fifty different ports (the stack asks four at once)."""
    ports = free_ports(50)
    assert (len(ports), len(set(ports))) == (50, 50)

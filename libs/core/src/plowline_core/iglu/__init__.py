"""Iglu: schema keys (``key``), the resolver config (``config``), the resolver (``resolver``).

Import from the submodules; this package re-exports nothing so that ``ports`` can import
``iglu.key`` while ``iglu.resolver`` imports ``ports``.
"""

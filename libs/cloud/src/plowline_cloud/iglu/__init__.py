"""Iglu registries on the file system and over HTTP, and the resolver built from a config file."""

from plowline_cloud.iglu.embedded import EmbeddedRegistry
from plowline_cloud.iglu.outages import LoggedOutages
from plowline_cloud.iglu.remote import HttpRegistry
from plowline_cloud.iglu.resolver import NOT_FOUND_HELP, load_resolver, registries_from_config

__all__ = [
    "NOT_FOUND_HELP",
    "EmbeddedRegistry",
    "HttpRegistry",
    "LoggedOutages",
    "load_resolver",
    "registries_from_config",
]

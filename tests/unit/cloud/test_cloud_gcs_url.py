"""``gs://`` URLs split into a bucket and a prefix."""

from __future__ import annotations

import pytest
from plowline_cloud.storage import parse_gcs_url
from plowline_core.errors import ConfigError


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param("gs://bucket", ("bucket", ""), id="bucket-only"),
        pytest.param("gs://bucket/", ("bucket", ""), id="bucket-slash"),
        pytest.param("gs://bucket/a/b", ("bucket", "a/b/"), id="prefix"),
        pytest.param("gs://bucket/a/b/", ("bucket", "a/b/"), id="prefix-slash"),
    ],
)
def test_parse_gcs_url(url: str, expected: tuple[str, str]) -> None:
    """A gs:// URL gives the bucket and a prefix ending in one slash (or empty)."""
    assert expected == parse_gcs_url(url)


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("s3://bucket/a", id="other-scheme"),
        pytest.param("bucket/a", id="no-scheme"),
        pytest.param("gs://", id="no-bucket"),
        pytest.param("gs:///a", id="empty-bucket"),
    ],
)
def test_parse_gcs_url_refuses(url: str) -> None:
    """Anything that is not gs://bucket[/prefix] is a ConfigError naming the URL."""
    with pytest.raises(ConfigError, match="gs://"):
        parse_gcs_url(url)

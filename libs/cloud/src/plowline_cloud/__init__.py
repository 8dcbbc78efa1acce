"""plowline_cloud."""

"""plowline_devstack."""

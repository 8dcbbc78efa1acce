"""plowline_deadletter."""

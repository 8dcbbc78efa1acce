"""plowline_mutator."""

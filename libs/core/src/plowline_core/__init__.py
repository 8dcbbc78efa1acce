"""plowline_core: the pure domain of plowline (no I/O, no clock, no environment)."""

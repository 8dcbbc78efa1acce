"""plowline_repeater."""

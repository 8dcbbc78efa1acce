"""plowline_loader."""

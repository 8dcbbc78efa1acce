"""In-memory fakes of the core ports and builders of test data (for tests of every package)."""

"""Alignment runs: scoring a document pair with several measures, the run service, and what it stores."""

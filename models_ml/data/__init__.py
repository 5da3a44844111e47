"""Data on disk and its scoring: alignment groups, gold readers, evaluation, splits, checksummed model directories."""

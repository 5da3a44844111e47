"""Similarity of sentence pairs: encoders, measures, word alignment, the cross-encoder and the learned pair scorer."""

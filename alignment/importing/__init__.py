"""Corpus import: decoding and cleaning, format readers, sentence splitting and the atomic import service."""

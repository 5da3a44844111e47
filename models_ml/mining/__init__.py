"""Pseudo-parallel mining without a database: LHA, MUSS and the exact kNN search they share."""

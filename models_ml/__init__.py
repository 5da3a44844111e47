"""Alignment models and algorithms in plain Python, NumPy and PyTorch. Never imports Django."""

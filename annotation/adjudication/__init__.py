"""Settling labels: the review and curation page's data, inter-annotator agreement and its dashboard data."""

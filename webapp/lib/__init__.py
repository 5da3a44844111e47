"""Helpers shared by the Django apps: typed settings helpers and the embedded database."""

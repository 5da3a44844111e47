"""Annotation projects, roles and label events arrive with the annotation workflow."""

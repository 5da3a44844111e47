"""The annotator's work: the annotation screen's data, queue mode, skips/flags/comments, and their views."""

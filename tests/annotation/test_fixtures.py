"""The shared annotation fixtures can be combined: one "anna", whichever fixtures a test asks for."""

from __future__ import annotations

from django.contrib.auth import get_user_model


def test_annotator_and_team_of_two_share_one_anna(annotator, team_of_two) -> None:
    assert team_of_two.anna == annotator
    assert get_user_model().objects.filter(username="anna").count() == 1

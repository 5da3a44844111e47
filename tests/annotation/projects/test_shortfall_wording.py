"""A project short of annotators says so in words that fit its overlap, as a project sent from mining (overlap 1) shows it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.projects.members import overlap_shortfall_phrase


@pytest.mark.parametrize(
    ("short", "overlap", "still", "phrase"),
    [
        (1, 1, False, "1 pair has no annotator yet"),
        (3, 1, False, "3 pairs have no annotator yet"),
        (1, 2, True, "1 pair still has fewer than 2 annotators"),
        (1200, 3, False, "1,200 pairs have fewer than 3 annotators"),
    ],
)
def test_shortfall_phrase(short, overlap, still, phrase):
    assert overlap_shortfall_phrase(short, overlap, still=still) == phrase


def test_a_one_annotator_project_without_annotators_says_its_pair_has_none_yet(client, owner, tram_corpus):
    project = services.project_create(name="Mined pairs of job 1", corpus=tram_corpus, created_by=owner, overlap=1)
    client.force_login(owner)
    page = client.get(reverse("annotation:project_detail", args=[project.pk])).content.decode()
    assert "1 pair has no annotator yet: the project has 0 annotators and an overlap of 1." in page
    assert "fewer than 1 annotators" not in page

"""A manager opening the annotation screen of a pair not assigned to them is told so and offered its review.

It answered "Page not found" before, as for a pair that does not exist; annotators and viewers still get the plain 404
(no more than they may know), and a pair of another project is not found for anyone.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import services


def test_a_manager_is_told_the_pair_is_not_theirs_and_offered_the_review(client, owner, team_of_two) -> None:
    project, pair = team_of_two.project, team_of_two.pair
    url = reverse("annotation:annotate_pair", args=[project.pk, pair.pk])
    client.force_login(owner)
    response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 404
    assert "This pair is not assigned to you" in page
    assert reverse("annotation:pair_review", args=[project.pk, pair.pk]) in page

    viewer = get_user_model().objects.create_user("vera", password="v-pass-123")
    services.membership_set(project=project, user=viewer, role="viewer")
    client.force_login(viewer)
    refused = client.get(url)
    assert refused.status_code == 404 and "not assigned to you" not in refused.content.decode()

    client.force_login(owner)
    missing = client.get(reverse("annotation:annotate_pair", args=[project.pk, pair.pk + 10_000]))
    assert missing.status_code == 404 and "not assigned to you" not in missing.content.decode()

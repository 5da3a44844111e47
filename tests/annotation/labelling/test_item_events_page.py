"""The project page's "Flags and comments" section and the read-only admin of item events."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import services
from annotation.labelling.item_events import item_events_open, item_events_standing
from annotation.models import ItemEvent


def _record(team, user, kind: str, text: str = "", **sentences) -> ItemEvent:
    return services.item_event_record(project=team.project, annotator=user, pair=team.pair, kind=kind, text=text, **sentences)


def _page(client, user, team):
    client.force_login(user)
    return client.get(reverse("annotation:project_detail", args=[team.project.pk]))


def test_manager_sees_open_flags_skips_and_comments_with_counts_and_review_links(client, owner, team_of_two):
    team = team_of_two
    _record(team, team.anna, "flag")
    _record(team, team.anna, "comment", "Paragraph 2 of the simple text is missing.")
    item = {"simple_sentence_id": team.simple[1].pk, "complex_sentence_id": team.complex_[1].pk}
    _record(team, team.ben, "skip", **item)
    response = _page(client, owner, team)
    summary = response.context["item_events"]
    assert summary.counts == {"flag": 1, "skip": 1, "comment": 1} and summary.total == 3
    assert [row.event.kind for row in summary.rows] == ["skip", "comment", "flag"]  # newest first
    review = reverse("annotation:pair_review", args=[team.project.pk, team.pair.pk])
    assert {row.link for row in summary.rows} == {review}
    page = response.content.decode()
    assert '<span class="small muted" id="item-event-counts">1 flagged · 1 skipped · 1 comment</span>' in page
    assert "Paragraph 2 of the simple text is missing." in page
    assert "simple #2 ~ complex #2 <span" in page and "the whole pair" in page
    assert f'<a href="{review}">' in page


def test_removed_flags_and_undone_skips_leave_the_list(client, owner, team_of_two):
    team = team_of_two
    _record(team, team.anna, "flag")
    _record(team, team.anna, "unflag")
    skip = _record(team, team.ben, "skip", simple_sentence_id=team.simple[0].pk, complex_sentence_id=team.complex_[0].pk)
    services.item_skip_undo(skip=skip)
    summary = _page(client, owner, team).context["item_events"]
    assert summary.rows == [] and summary.counts == {"flag": 0, "skip": 0, "comment": 0}
    assert item_events_open(ItemEvent.objects.all()) == []


def test_a_flag_set_again_after_removal_is_open_once(owner, team_of_two):
    team = team_of_two
    for kind in ("flag", "unflag", "flag", "flag"):
        last = _record(team, team.anna, kind)
    assert item_events_open(ItemEvent.objects.all()) == [last]


def test_the_pages_sql_reading_and_the_python_one_agree_on_a_mixed_history(owner, team_of_two):
    """item_events_standing (the project page counts and pages with it) is item_events_open in the database."""
    team = team_of_two
    first, second = (
        {"simple_sentence_id": team.simple[k].pk, "complex_sentence_id": team.complex_[k].pk} for k in (0, 1)
    )  # fmt: skip
    for kind in ("flag", "unflag", "flag"):
        _record(team, team.anna, kind)
    _record(team, team.ben, "flag")
    _record(team, team.ben, "unflag")
    _record(team, team.anna, "flag", **first)  # one sentence pair's flag stands beside the whole pair's
    undone = _record(team, team.anna, "skip", **first)
    services.item_skip_undo(skip=undone)
    _record(team, team.ben, "skip", **second)
    _record(team, team.ben, "skip", **second)  # a second skip of the same item replaces the first
    _record(team, team.anna, "comment", "one")
    _record(team, team.ben, "comment", "two")
    for events, standing in ((ItemEvent.objects.all(), 5), (ItemEvent.objects.filter(annotator=team.ben), 2)):
        expected = item_events_open(events)
        assert len(expected) == standing
        assert list(item_events_standing(events).order_by("-pk")) == expected


def test_annotator_sees_only_their_own_with_a_link_to_their_annotation_page(client, team_of_two):
    team = team_of_two
    own = _record(team, team.anna, "comment", "mine")
    _record(team, team.ben, "comment", "bens secret doubt")
    response = _page(client, team.anna, team)
    rows = response.context["item_events"].rows
    assert [row.event for row in rows] == [own]
    assert rows[0].link == reverse("annotation:annotate_pair", args=[team.project.pk, team.pair.pk])
    page = response.content.decode()
    assert "Your flags and comments" in page and "bens secret doubt" not in page


def test_viewer_sees_everyone_without_a_link_to_the_managers_review(client, team_of_two):
    team = team_of_two
    viewer = get_user_model().objects.create_user("vera", password="v-pass-123")
    services.membership_set(project=team.project, user=viewer, role="viewer")
    _record(team, team.anna, "flag")
    response = _page(client, viewer, team)
    rows = response.context["item_events"].rows
    assert len(rows) == 1 and rows[0].link == ""
    assert reverse("annotation:pair_review", args=[team.project.pk, team.pair.pk]) not in response.content.decode()


def test_empty_section_says_how_events_arrive(client, owner, team_of_two):
    page = _page(client, owner, team_of_two).content.decode()
    assert 'id="item-events-empty"' in page and "No open flags, skips or comments." in page


def test_admin_lists_item_events_read_only(client, team_of_two):
    team = team_of_two
    event = _record(team, team.anna, "comment", "admin can read this")
    admin = get_user_model().objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin)
    listing = client.get(reverse("admin:annotation_itemevent_changelist"))
    assert listing.status_code == 200 and "admin can read this" in listing.content.decode()
    assert client.get(reverse("admin:annotation_itemevent_add")).status_code == 403
    deleted = client.post(reverse("admin:annotation_itemevent_delete", args=[event.pk]), {"post": "yes"})
    assert deleted.status_code == 403 and ItemEvent.objects.filter(pk=event.pk).exists()

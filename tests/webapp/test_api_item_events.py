"""REST API: the annotators' skips, flags and comments, read-only, with the label history's access rules."""

from __future__ import annotations

from annotation import services
from annotation.models import ItemEvent
from tests.webapp.api_support import api_world, fast_password_hashing, results  # noqa: F401 - pytest fixtures used as arguments

EVENTS = "projects/{project}/item-events/"


def _record(world, persona: str, kind: str, text: str = "", **sentences) -> ItemEvent:
    return services.item_event_record(
        project=world.project, annotator=world.users[persona], pair=world.pair, kind=kind, text=text, **sentences
    )


def test_managers_viewers_and_staff_list_everyone_and_annotators_only_their_own(api_world):
    anna_flag = _record(api_world, "anna", "flag")
    ben_comment = _record(api_world, "ben", "comment", "The simple text drops paragraph 2.")
    for persona in ("manager", "viewer", "staff"):
        rows = results(api_world.client(persona).get(api_world.url(EVENTS)))
        assert [row["id"] for row in rows] == [anna_flag.pk, ben_comment.pk], persona
    anna_rows = results(api_world.client("anna").get(api_world.url(EVENTS)))
    assert [row["id"] for row in anna_rows] == [anna_flag.pk]
    assert api_world.client("anna").get(api_world.url(f"{EVENTS}{ben_comment.pk}/")).status_code == 404
    comment = api_world.client("manager").get(api_world.url(f"{EVENTS}{ben_comment.pk}/")).json()
    assert comment["annotator"] == "ben" and comment["kind"] == "comment" and comment["text"] == "The simple text drops paragraph 2."
    assert comment["pair"] == api_world.pair.pk and comment["simple_sentence"] is None


def test_outsider_gets_404_and_anonymous_401(api_world):
    event = _record(api_world, "anna", "flag")
    assert api_world.client("outsider").get(api_world.url(EVENTS)).status_code == 404
    assert api_world.client("outsider").get(api_world.url(f"{EVENTS}{event.pk}/")).status_code == 404
    assert api_world.client(None).get(api_world.url(EVENTS)).status_code in (401, 403)


def test_the_list_is_read_only(api_world):
    client = api_world.client("anna")
    answer = client.post(api_world.url(EVENTS), {"pair": api_world.pair.pk, "kind": "flag"}, format="json")
    assert answer.status_code == 405 and not ItemEvent.objects.exists()


def test_open_filter_keeps_standing_flags_skips_not_undone_and_comments(api_world):
    removed_flag = _record(api_world, "anna", "flag")
    unflag = _record(api_world, "anna", "unflag")
    standing_flag = _record(api_world, "ben", "flag")
    item = {"simple_sentence_id": api_world.simple[0].pk, "complex_sentence_id": api_world.complex_[0].pk}
    undone_skip = _record(api_world, "anna", "skip", **item)
    services.item_skip_undo(skip=undone_skip)
    comment = _record(api_world, "anna", "comment", "unsure")
    client = api_world.client("manager")
    standing = results(client.get(api_world.url(EVENTS), {"open": "true"}))
    assert sorted(row["id"] for row in standing) == sorted([standing_flag.pk, comment.pk])
    closed = {row["id"] for row in results(client.get(api_world.url(EVENTS), {"open": "false"}))}
    assert {removed_flag.pk, unflag.pk, undone_skip.pk} <= closed and standing_flag.pk not in closed
    flags = results(client.get(api_world.url(EVENTS), {"kind": "flag", "annotator": "ben"}))
    assert [row["id"] for row in flags] == [standing_flag.pk]


def test_bad_filter_value_is_a_400_naming_the_parameter(api_world):
    answer = api_world.client("manager").get(api_world.url(EVENTS), {"kind": "shout"})
    assert answer.status_code == 400 and "kind" in answer.json()

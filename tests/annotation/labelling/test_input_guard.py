"""Garbage a client can send gets a 400 that names the field, and nothing is stored; signed-in pages are not cached.

Each case answered 500 before (webapp/lib/input_guard.py, annotation/labelling/edits.py): a NUL in a note's text,
``changes`` nested thousands of levels deep, a NUL in a query string; and the corpus page, the Models page and
``/api/projects/`` went out without ``Cache-Control``.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.urls import reverse

from annotation.models import ItemEvent, LabelEvent

JSON = {"HTTP_ACCEPT": "application/json"}


def test_a_nul_in_a_notes_text_is_refused_by_name_and_nothing_is_stored(client, team_of_two):
    client.force_login(team_of_two.anna)
    url = reverse("annotation:item_event_save", args=[team_of_two.project.pk, team_of_two.pair.pk])
    form = urlencode({"kind": "comment", "text": "fine\x00then"})  # as the screen sends it (URLSearchParams)
    response = client.post(url, form, content_type="application/x-www-form-urlencoded", **JSON)
    assert response.status_code == 400
    assert "text: contains a NUL character" in response.json()["error"]
    multipart = client.post(url, {"kind": "comment", "text": "fine\x00then"}, **JSON)  # not read before the view
    assert multipart.status_code == 400 and "text: contains a NUL character" in multipart.json()["error"]
    assert not ItemEvent.objects.exists()
    assert client.post(url, {"kind": "comment", "text": "fine then"}, **JSON).status_code == 200  # the same without it is stored
    assert ItemEvent.objects.get().text == "fine then"


def test_changes_nested_thousands_deep_are_refused_by_name_and_nothing_is_stored(client, team_of_two):
    client.force_login(team_of_two.anna)
    url = reverse("annotation:label_edit", args=[team_of_two.project.pk, team_of_two.pair.pk])
    deep = "[" * 5000 + "]" * 5000
    response = client.post(url, {"changes": deep}, **JSON)
    assert response.status_code == 400
    assert "changes: nested more than 32 levels deep" in response.json()["error"]
    nul = json.dumps([{"simple": team_of_two.simple[0].pk, "complex": team_of_two.complex_[0].pk, "label": "aligned\u0000"}])
    response = client.post(url, {"changes": nul}, **JSON)
    assert response.status_code == 400 and response.json()["error"].startswith("changes")
    assert not LabelEvent.objects.exists()


def test_a_nul_in_a_query_string_gets_the_error_page_naming_the_field(client, team_of_two):
    client.force_login(team_of_two.anna)
    response = client.get(reverse("annotation:project_detail", args=[team_of_two.project.pk]), {"page": "2\x00"})
    assert response.status_code == 400
    assert "page: contains a NUL character" in response.content.decode()
    api = client.get("/api/projects/", {"search\x00": "x"})
    assert api.status_code == 400 and "search\\0: contains a NUL character" in api.json()["detail"]


def test_signed_in_pages_are_not_stored_by_browsers_or_proxies(client, owner, team_of_two):
    client.force_login(owner)
    project = team_of_two.project
    for url in (
        reverse("alignment:corpus_detail", args=[project.corpus_id]),
        reverse("annotation:project_models", args=[project.pk]),
        "/api/projects/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"], url

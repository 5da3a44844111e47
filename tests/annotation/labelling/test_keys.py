"""One key table: the help dialogs list exactly the keys the pages hand their scripts to bind."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.urls import reverse

from annotation.labelling import keys
from tests.annotation.conftest import tram_project


def _json_script(page: str, element_id: str) -> dict:
    return json.loads(page.split(f'<script id="{element_id}" type="application/json">')[1].split("</script>")[0])


def _help_keys(page: str) -> set[str]:
    dialog = page[page.index('id="help"') :]
    dialog = dialog[: dialog.index('<button type="button"')]
    return {html.unescape(key) for key in re.findall(r"<kbd>([^<]+)</kbd>", dialog)}


def _bound(keymap: dict[str, dict[str, str]]) -> set[str]:
    return {keys.KEY_NAMES.get(key, key) for view in keymap.values() for key in view}


def test_each_view_binds_its_own_rows_and_the_shared_ones_and_a_key_bound_twice_is_refused():
    keymap = keys.keymap(keys.SCREEN_KEYS)
    assert keymap["focus"]["j"] == "next-simple" and keymap["alignment"]["j"] == "next-row"
    assert keymap["focus"]["u"] == keymap["alignment"]["u"] == "undo"
    assert "m" not in keymap["focus"] and "g" not in keymap["alignment"]
    twice = (*keys.SCREEN_KEYS, keys.KeyRow((("u", "help"),), "again", keys.BOTH))
    with pytest.raises(ValueError, match="key 'u' is bound twice in the focus view"):
        keys.keymap(twice)


def test_the_screen_and_the_queue_list_in_their_help_exactly_the_keys_they_bind(client, tram_corpus, owner, annotator):
    project, pair, *_ = tram_project(tram_corpus, owner, [annotator], "Keys")
    client.force_login(annotator)
    screen = client.get(reverse("annotation:annotate_pair", args=[project.pk, pair.pk])).content.decode()
    keymap = _json_script(screen, "annotate-keys")
    assert keymap == keys.keymap(keys.SCREEN_KEYS)
    assert _help_keys(screen) == _bound(keymap)
    queue = client.get(reverse("annotation:project_queue", args=[project.pk])).content.decode()
    keymap = _json_script(queue, "queue-keys")
    assert keymap == keys.keymap(keys.QUEUE_KEYS)
    assert _help_keys(queue) == _bound(keymap)

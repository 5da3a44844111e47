"""The Import page's Preview says, per article, which level will be the complex side and why, and offers a flip."""

from __future__ import annotations

import html
import json
import re

from django.urls import reverse

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.services import corpus_get_or_create
from tests.alignment.test_import_direction import GERMAN_A2, GERMAN_C2, german_files, import_form
from tests.webapp.access_world import database_fingerprint

PREVIEW = reverse("alignment:corpus_import_preview")
HTMX = {"HTTP_HX_REQUEST": "true"}


def _preview(client, files, **fields) -> str:
    response = client.post(PREVIEW, import_form(files, **fields), **HTMX)
    assert response.status_code == 200
    return re.sub(r"\s+", " ", response.content.decode())


def _rows(page: str) -> list[tuple[str, str, str, str]]:
    table = re.search(r'<table class="table compact" id="direction-articles">(.*?)</table>', page).group(1)
    return re.findall(
        r'<tr><td>([^<]*)</td><td><span class="level">([^<]*)</span></td><td><span class="level">([^<]*)</span></td>'
        r'<td class="small">([^<]*)</td></tr>',
        table,
    )


def _flip_button(page: str) -> str:
    return re.search(r'<button [^>]*id="flip-direction".*?</button>', page).group(0)


def test_the_preview_shows_c2_as_the_complex_side_of_each_article_and_why(client, owner):
    client.force_login(owner)
    before = database_fingerprint()
    page = _preview(client, [*german_files(), *german_files(article="Regen")])
    assert _rows(page) == [("Wetter", "C2", "A2", "CEFR levels"), ("Regen", "C2", "A2", "CEFR levels")]
    assert "<li>C2 › A2: CEFR levels, a known scheme.</li>" in page
    button = _flip_button(page)
    assert 'name="level_order" value="A2, C2"' in button and "Flip: make A2 the complex side" in button
    assert json.loads(html.unescape(re.search(r'hx-vals="([^"]*)"', button).group(1))) == {"level_order": "A2, C2"}
    # the level-order field comes along out of band, empty (automatic), suggesting the order found
    field = re.search(r'<div class="field" id="field-level_order" hx-swap-oob="true">.*?</div>', page).group(0)
    assert 'placeholder="automatic: C2, A2"' in field and "value=" not in field
    assert database_fingerprint() == before


def test_after_the_flip_the_preview_makes_a2_complex_by_your_order_and_the_field_holds_it(client, owner):
    client.force_login(owner)
    page = _preview(client, german_files(), level_order="A2, C2")  # what the flip button posts
    assert _rows(page) == [("Wetter", "A2", "C2", "your order")]
    assert "<li>A2 › C2: your order.</li>" in page
    assert 'value="C2, A2"' in _flip_button(page)  # flipping again goes back
    field = re.search(r'<div class="field" id="field-level_order" hx-swap-oob="true">.*?</div>', page).group(0)
    assert 'value="A2, C2"' in field


def test_unknown_levels_are_previewed_by_readability_with_the_figures(client, owner):
    client.force_login(owner)
    page = html.unescape(_preview(client, german_files(levels=("anfang", "profi"))))
    assert _rows(page) == [("Wetter", "profi", "anfang", "readability")]
    assert "'profi' and 'anfang' are not levels of one known scheme; 'profi' reads harder (LIX " in page


def test_the_preview_of_more_files_for_an_existing_corpus_follows_its_pairs(client, owner):
    corpus, _ = corpus_get_or_create(name="Wetter", language="de", owner=owner)
    corpus_import_files(
        corpus=corpus,
        files=[("Sturm-A2.txt", GERMAN_A2.encode()), ("Sturm-C2.txt", GERMAN_C2.encode())],
        options=ImportOptions(language="de"),
    )
    corpus.pairs.update(complex_document=corpus.documents.get(level="A2"), simple_document=corpus.documents.get(level="C2"))
    client.force_login(owner)
    page = html.unescape(_preview(client, german_files(article="Regen")))
    assert _rows(page) == [("Regen", "A2", "C2", "the corpus's existing pairs")]


def test_a_level_order_naming_a_level_the_files_lack_stops_the_preview_on_its_field(client, owner):
    client.force_login(owner)
    page = html.unescape(_preview(client, german_files(), level_order="C2, B2"))
    assert "Preview needs the form fixed first:" in page
    assert "<li>Level order: 'B2' is not a level of the files (they have: A2, C2)</li>" in page

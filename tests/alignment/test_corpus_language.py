"""The corpus page shows the corpus's language; its owner (and staff) may correct it, a known ISO 639 code only."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from alignment.models import Corpus


def _post(client, corpus: Corpus, language: str, **headers):
    return client.post(reverse("alignment:corpus_language", args=[corpus.pk]), {"language": language}, **headers)


def _language(corpus: Corpus) -> str:
    return Corpus.objects.get(pk=corpus.pk).language


def test_the_corpus_page_shows_the_language_and_its_form_to_the_owner(client, owner, tram_corpus):
    client.force_login(owner)
    page = client.get(reverse("alignment:corpus_detail", args=[tram_corpus.pk])).content.decode()
    assert 'id="corpus-language-tag" title="Language">en</span>' in page and "<code>en</code> (ISO 639)" in page
    assert reverse("alignment:corpus_language", args=[tram_corpus.pk]) in page and 'value="en"' in page


def test_the_owner_changes_the_language(client, owner, tram_corpus):
    client.force_login(owner)
    response = _post(client, tram_corpus, " DE ")
    assert response.status_code == 302 and response.url == reverse("alignment:corpus_detail", args=[tram_corpus.pk])
    assert _language(tram_corpus) == "de"
    assert "The language of Trams is now de." in client.get(response.url).content.decode()


def test_the_owner_changes_the_language_with_htmx_and_the_heading_follows(client, owner, tram_corpus):
    client.force_login(owner)
    response = _post(client, tram_corpus, "und", HTTP_HX_REQUEST="true")
    fragment = response.content.decode()
    assert response.status_code == 200 and _language(tram_corpus) == "und"
    assert fragment.lstrip().startswith('<section class="card" id="language">') and "Not known" in fragment
    assert 'id="corpus-language-tag" title="Language" hx-swap-oob="true">und</span>' in fragment


@pytest.mark.parametrize("bad", ["english", "xx", "e", "de-DE", "", "zxx"])
def test_a_bad_code_is_refused_on_the_language_field_and_nothing_changes(client, owner, tram_corpus, bad):
    client.force_login(owner)
    response = _post(client, tram_corpus, bad)
    assert response.status_code == 400 and _language(tram_corpus) == "en"
    errors = response.context["language_form"].errors
    assert list(errors) == ["language"]
    if bad:
        assert errors["language"] == [f"language {bad!r} is not an ISO 639 code this app knows, such as 'en', 'de' or 'und' (undetermined)"]
    page = html.unescape(response.content.decode())
    assert "is not an ISO 639 code" in page or "This field is required" in page


def test_a_bad_code_with_htmx_answers_the_fragment_with_the_error(client, owner, tram_corpus):
    client.force_login(owner)
    response = _post(client, tram_corpus, "klingon", HTTP_HX_REQUEST="true")
    fragment = html.unescape(response.content.decode())
    assert response.status_code == 400 and _language(tram_corpus) == "en"
    assert "language 'klingon' is not an ISO 639 code" in fragment and "hx-swap-oob" not in fragment


def test_a_reader_of_a_shared_corpus_sees_the_language_but_may_not_change_it(client, outsider, tram_corpus):
    Corpus.objects.filter(pk=tram_corpus.pk).update(is_shared=True)
    client.force_login(outsider)
    page = client.get(reverse("alignment:corpus_detail", args=[tram_corpus.pk])).content.decode()
    assert "<code>en</code> (ISO 639)" in page and reverse("alignment:corpus_language", args=[tram_corpus.pk]) not in page
    assert _post(client, tram_corpus, "de").status_code == 403 and _language(tram_corpus) == "en"


def test_an_outsider_gets_404_for_a_private_corpus(client, outsider, tram_corpus):
    client.force_login(outsider)
    assert _post(client, tram_corpus, "de").status_code == 404 and _language(tram_corpus) == "en"


def test_staff_may_change_the_language(client, staff, tram_corpus):
    client.force_login(staff)
    assert _post(client, tram_corpus, "fr").status_code == 302 and _language(tram_corpus) == "fr"

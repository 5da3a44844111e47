"""The review page shows the annotators' flags, skips and comments on the pair, and the word diff of a sentence pair."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.adjudication.review import pair_review_read


@pytest.fixture
def noted(team_of_two):
    """anna and ben disagree on (1, 0); anna flags the pair and comments, ben comments on one sentence pair
    (queue mode), flags and then unflags, and skips the pair."""
    t = team_of_two
    t.label(t.anna, 1, 0, "aligned"), t.label(t.ben, 1, 0, "partial")
    event = {"project": t.project, "pair": t.pair}
    services.item_event_record(**event, annotator=t.anna, kind="flag")
    services.item_event_record(**event, annotator=t.anna, kind="comment", text="Sentence 2 merges two facts.")
    on_item = {"simple_sentence_id": t.simple[1].pk, "complex_sentence_id": t.complex_[0].pk}
    services.item_event_record(**event, annotator=t.ben, kind="comment", text="partial: 'harbour' is not in it", **on_item)
    services.item_event_record(**event, annotator=t.ben, kind="flag")
    services.item_event_record(**event, annotator=t.ben, kind="unflag")
    services.item_event_record(**event, annotator=t.ben, kind="skip")
    return t


def test_the_standing_flags_skips_and_comments_of_every_annotator_are_read_oldest_first(noted) -> None:
    review = pair_review_read(noted.project, noted.pair)
    kinds = [(note.event.annotator.username, note.event.kind, note.event.text, note.sentences) for note in review.notes]
    assert kinds == [
        ("anna", "flag", "", ""),
        ("anna", "comment", "Sentence 2 merges two facts.", ""),
        ("ben", "comment", "partial: 'harbour' is not in it", "simple #2 ~ complex #1"),  # ben's flag was withdrawn
        ("ben", "skip", "", ""),
    ]
    row = f"review-{noted.simple[1].pk}-{noted.complex_[0].pk}"
    assert review.noted_rows == {row: 1} and row in review.shown_ids


def test_the_review_page_shows_notes_marks_their_row_and_the_first_rows_word_diff(client, owner, noted) -> None:
    client.force_login(owner)
    url = reverse("annotation:pair_review", args=[noted.project.pk, noted.pair.pk])
    page = client.get(url).content.decode()
    notes = page[page.index('id="notes"') : page.index('<div class="curation-layout">')]
    assert notes.count('class="review-note ') == 4 and "⚑ flagged" in notes and "<q>Sentence 2 merges two facts.</q>" in notes
    assert "<q>partial: &#x27;harbour&#x27; is not in it</q>" in notes
    row = f"review-{noted.simple[1].pk}-{noted.complex_[0].pk}"
    assert f'on <a href="#{row}" data-row-link="{row}">simple #2 ~ complex #1</a>' in notes
    assert 'title="1 flag or comment on this sentence pair">⚑ 1</a>' in page  # the mark in the row
    diff = page[page.index('id="review-diff"') :]
    assert f'data-diff-of="{row}"' in diff and "Simple #2 ~ complex #1" in diff  # the only row, until a row is picked
    assert '<p class="diff-text" id="diff-complex">' in diff


def test_htmx_asks_for_one_rows_word_diff_and_bad_sentences_are_named(client, owner, noted) -> None:
    client.force_login(owner)
    url = reverse("annotation:pair_review", args=[noted.project.pk, noted.pair.pk])
    simple, complex_ = noted.simple[0], noted.complex_[2]
    answer = client.get(url, {"simple": simple.pk, "complex": complex_.pk}, headers={"HX-Request": "true"}).content.decode()
    assert answer.startswith(f'<div data-diff-of="review-{simple.pk}-{complex_.pk}">') and "Decisions" not in answer
    assert "Simple #1 ~ complex #3" in answer and "<del" in answer  # words of the complex sentence the simple one drops
    wrong = client.get(url, {"simple": complex_.pk, "complex": complex_.pk}, headers={"HX-Request": "true"})
    assert wrong.status_code == 400
    assert wrong.content.decode() == f"sentence {complex_.pk} is not a sentence of the simple document of pair {noted.pair.pk}"
    assert client.get(url, {"simple": "x", "complex": complex_.pk}).content.decode() == "simple: not a sentence id"
    half = client.get(url, {"complex": complex_.pk})
    assert half.status_code == 400 and half.content.decode() == "simple and complex: give both sentence ids, or neither"


def test_a_pair_without_notes_says_so(client, owner, team_of_two) -> None:
    team_of_two.label(team_of_two.anna, 0, 0, "aligned")
    client.force_login(owner)
    page = client.get(reverse("annotation:pair_review", args=[team_of_two.project.pk, team_of_two.pair.pk])).content.decode()
    assert "No annotator flagged, skipped or commented on this pair." in page

"""The annotation screen of one pair: who sees it, what it shows, and its writes (label, undo, done)."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from alignment.models import CandidateAlignment, ParagraphAlignment
from annotation import services
from annotation.labelling import screen
from annotation.models import Assignment, LabelEvent


@pytest.fixture
def project(tram_corpus, owner, annotator, suggestion_run):
    project = services.project_create(name="Trams gold", corpus=tram_corpus, created_by=owner, overlap=1, suggestion_run=suggestion_run)
    services.membership_set(project=project, user=annotator, role="annotator")
    assert services.assignments_distribute(project=project) == 1
    return project


@pytest.fixture
def anna(client, annotator):
    client.force_login(annotator)
    return client


def _url(name: str, project, pair) -> str:
    return reverse(f"annotation:{name}", kwargs={"project_id": project.pk, "pair_id": pair.pk})


def _sentence(pair, side: str, index: int) -> int:
    document = pair.simple_document if side == "simple" else pair.complex_document
    return document.sentences.get(index=index).pk


def _label(client, project, pair, simple: int, complex_: int, label: str = "aligned", expected="", seconds="3.5"):
    data = {
        "simple_sentence_id": simple,
        "complex_sentence_id": complex_,
        "label": label,
        "expected_previous": expected,
        "seconds_spent": seconds,
    }
    return client.post(_url("label_save", project, pair), data)


def _payload(response) -> dict:
    match = re.search(r'<script id="annotate-data" type="application/json">(.*?)</script>', response.content.decode(), re.S)
    assert match, "the page carries its state as JSON"
    return json.loads(match.group(1))


def test_annotator_sees_both_documents_aligned_paragraphs_and_the_suggestions(anna, project, pair, suggestion_run):
    response = anna.get(_url("annotate_pair", project, pair))
    assert response.status_code == 200
    page = response.content.decode()
    assert "The city council approved a new tram line on Tuesday." in page
    assert "The city will build a new tram line." in page
    # The run aligned paragraph 1 with paragraph 1 and left the rest unaligned: two rows.
    assert [(g.complex_paragraphs, g.simple_paragraphs) for g in ParagraphAlignment.objects.filter(run=suggestion_run)] == [([0], [0])]
    assert re.findall(r'<div class="para-row( unaligned)?"', page) == ["", " unaligned"]
    payload = _payload(response)
    assert payload["simple"] == list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
    first_simple = str(_sentence(pair, "simple", 0))
    suggested = {entry["complex"]: entry for entry in payload["candidates"][first_simple]}
    expected = CandidateAlignment.objects.get(run=suggestion_run, simple_sentence_id=first_simple, complex_sentence__index=0)
    assert suggested[expected.complex_sentence_id]["predicted"] == expected.label == "aligned"
    assert suggested[expected.complex_sentence_id]["score"] == round(expected.score, 3)
    assert payload["progress"] == {"labelled": 0, "total": 5, "percent": 0}


def test_outsider_gets_404_for_the_screen_and_its_writes(client, outsider, project, pair):
    client.force_login(outsider)
    assert client.get(_url("annotate_pair", project, pair)).status_code == 404
    assert _label(client, project, pair, _sentence(pair, "simple", 0), _sentence(pair, "complex", 0)).status_code == 404
    assert client.post(_url("label_undo", project, pair)).status_code == 404
    assert LabelEvent.objects.count() == 0


def test_manager_without_an_assignment_of_the_pair_gets_404(client, owner, project, pair):
    client.force_login(owner)
    assert client.get(_url("annotate_pair", project, pair)).status_code == 404
    assert client.post(_url("assignment_done", project, pair)).status_code == 404


def test_label_save_records_an_event_with_the_time_spent_and_returns_its_id(anna, project, pair, annotator):
    simple, complex_ = _sentence(pair, "simple", 0), _sentence(pair, "complex", 0)
    response = _label(anna, project, pair, simple, complex_, "aligned", seconds="12.25")
    assert response.status_code == 200
    body = response.json()
    event = LabelEvent.objects.get()
    assert body == {
        "simple": simple,
        "complex": complex_,
        "label": "aligned",
        "event": event.pk,
        "progress": {"labelled": 1, "total": 5, "percent": 20},
    }
    assert (event.annotator, event.new_label, event.seconds_spent, event.previous) == (annotator, "aligned", 12.25, None)
    second = _label(anna, project, pair, simple, complex_, "partial", expected=str(event.pk)).json()
    assert LabelEvent.objects.get(pk=second["event"]).previous == event


def test_stale_expected_previous_is_refused_with_409_the_message_and_the_current_label(anna, project, pair):
    simple, complex_ = _sentence(pair, "simple", 0), _sentence(pair, "complex", 0)
    first = _label(anna, project, pair, simple, complex_, "aligned").json()["event"]
    second = _label(anna, project, pair, simple, complex_, "not_aligned", expected=first).json()["event"]  # the other tab
    response = _label(anna, project, pair, simple, complex_, "partial", expected=first)
    assert response.status_code == 409
    assert "changed elsewhere" in response.json()["error"]
    assert response.json()["current"] == {"label": "not_aligned", "event": second}
    assert LabelEvent.objects.count() == 2


def test_unknown_label_is_refused_with_400_naming_it(anna, project, pair):
    response = _label(anna, project, pair, _sentence(pair, "simple", 0), _sentence(pair, "complex", 0), "maybe")
    assert response.status_code == 400
    assert "'maybe'" in response.json()["error"]
    assert LabelEvent.objects.count() == 0


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("seconds_spent", "-1", "seconds_spent"),
        ("seconds_spent", "soon", "seconds_spent"),
        ("simple_sentence_id", "x", "simple_sentence_id"),
    ],
)
def test_bad_fields_are_refused_with_400_naming_the_field(anna, project, pair, field, value, message):
    data = {
        "simple_sentence_id": _sentence(pair, "simple", 0),
        "complex_sentence_id": _sentence(pair, "complex", 0),
        "label": "aligned",
        field: value,
    }
    response = anna.post(_url("label_save", project, pair), data)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_a_sentence_of_the_wrong_document_is_refused_with_400(anna, project, pair):
    response = _label(anna, project, pair, _sentence(pair, "complex", 0), _sentence(pair, "complex", 1))
    assert response.status_code == 400
    assert "not a sentence of the simple document" in response.json()["error"]


def test_a_pair_the_aligner_never_proposed_can_be_labelled_and_then_shows_as_a_candidate(anna, project, pair, suggestion_run):
    proposed = set(
        CandidateAlignment.objects.filter(run=suggestion_run, pair=pair).values_list("simple_sentence_id", "complex_sentence_id")
    )
    simple_ids = pair.simple_document.sentences.values_list("pk", flat=True)
    complex_ids = pair.complex_document.sentences.values_list("pk", flat=True)
    simple, complex_ = next((s, c) for s in simple_ids for c in complex_ids if (s, c) not in proposed)
    assert _label(anna, project, pair, simple, complex_, "partial").status_code == 200
    entries = _payload(anna.get(_url("annotate_pair", project, pair)))["candidates"][str(simple)]
    assert {"complex": complex_, "predicted": None, "score": None, "confidence": None, "basis": None} in entries
    assert _payload(anna.get(_url("annotate_pair", project, pair)))["labels"][f"{simple}:{complex_}"]["label"] == "partial"


def test_progress_counts_simple_sentences_with_at_least_one_label(anna, project, pair):
    s0, s1 = _sentence(pair, "simple", 0), _sentence(pair, "simple", 1)
    _label(anna, project, pair, s0, _sentence(pair, "complex", 0))
    progress = _label(anna, project, pair, s0, _sentence(pair, "complex", 1), "not_aligned").json()["progress"]
    assert progress == {"labelled": 1, "total": 5, "percent": 20}  # two labels, one simple sentence
    assert _label(anna, project, pair, s1, _sentence(pair, "complex", 1)).json()["progress"]["labelled"] == 2
    assert "2 / 5" in anna.get(_url("annotate_pair", project, pair)).content.decode()


def test_undo_returns_the_restored_state_and_says_when_nothing_is_left(anna, project, pair):
    simple, complex_ = _sentence(pair, "simple", 0), _sentence(pair, "complex", 0)
    first = _label(anna, project, pair, simple, complex_, "aligned").json()["event"]
    _label(anna, project, pair, simple, complex_, "partial", expected=first)
    body = anna.post(_url("label_undo", project, pair)).json()
    latest = LabelEvent.objects.order_by("-pk").first()
    assert body["undone"] is True
    assert (body["simple"], body["complex"], body["label"], body["event"]) == (simple, complex_, "aligned", latest.pk)
    assert latest.source == LabelEvent.Source.UNDO
    anna.post(_url("label_undo", project, pair))
    assert anna.post(_url("label_undo", project, pair)).json() == {
        "undone": False,
        "message": "Nothing to undo in this pair.",
        "progress": {"labelled": 0, "total": 5, "percent": 0},
    }


def test_diff_fragment_for_htmx_marks_dropped_and_new_words(anna, project, pair):
    url = _url("annotate_pair", project, pair)
    response = anna.get(
        url, {"simple": _sentence(pair, "simple", 0), "complex": _sentence(pair, "complex", 0)}, headers={"HX-Request": "true"}
    )
    fragment = response.content.decode()
    assert response.status_code == 200 and "<html" not in fragment
    assert "<del>council approved</del>" in fragment.replace(' class="replaced"', "")
    assert "Simple #1 ~ complex #1" in fragment
    wrong = anna.get(
        url, {"simple": _sentence(pair, "complex", 0), "complex": _sentence(pair, "complex", 0)}, headers={"HX-Request": "true"}
    )
    assert wrong.status_code == 400 and b"not a sentence of the simple document" in wrong.content


def test_marking_the_pair_done_completes_the_assignment(anna, project, pair, annotator):
    response = anna.post(_url("assignment_done", project, pair), headers={"HX-Request": "true"})
    assert response.status_code == 200 and "Marked done" in response.content.decode()
    assert Assignment.objects.get(project=project, annotator=annotator).completed_at is not None
    assert anna.post(_url("assignment_done", project, pair)).status_code == 302


def test_paragraph_groups_share_rows_and_leftover_paragraphs_sit_between_them(pair, suggestion_run):
    ParagraphAlignment.objects.filter(run=suggestion_run, pair=pair).delete()
    ParagraphAlignment.objects.create(run=suggestion_run, pair=pair, simple_paragraphs=[2], complex_paragraphs=[1, 2])  # 2:1 merge
    ParagraphAlignment.objects.create(run=suggestion_run, pair=pair, simple_paragraphs=[0], complex_paragraphs=[0])
    rows = screen.paragraph_rows(pair, suggestion_run)
    shown = [([b.number for b in row.complex], [b.number for b in row.simple], row.aligned) for row in rows]
    assert shown == [([1], [1], True), ([], [2], False), ([2, 3], [3], True)]
    assert [s.text for s in rows[2].simple[0].sentences] == ["Some people think it costs too much."]


def test_without_a_suggestion_run_the_page_shows_why_and_every_sentence(client, tram_corpus, owner, annotator, pair):
    project = services.project_create(name="No run", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=annotator, role="annotator")
    services.assignments_distribute(project=project)
    client.force_login(annotator)
    response = client.get(_url("annotate_pair", project, pair))
    page = response.content.decode()
    assert "has no suggestion run" in page
    assert page.count('class="sentence complex-sentence"') == 5 and page.count('class="sentence simple-sentence"') == 5
    assert _payload(response)["candidates"] == {}


def test_paragraph_correction_replaces_the_aligners_paragraphs_on_the_annotators_screen(client, owner, tram_corpus):

    from annotation import services as annotation_services
    from annotation.labelling.screen import paragraph_groups_for
    from annotation.models import ParagraphCorrection

    pair = tram_corpus.pairs.get()
    anna = get_user_model().objects.create_user("para", password="p-pass-123")
    project = annotation_services.project_create(name="Paragraphs", corpus=tram_corpus, created_by=owner, overlap=1)
    annotation_services.membership_set(project=project, user=anna, role="annotator")
    annotation_services.assignments_distribute(project=project)
    client.force_login(anna)
    url = reverse("annotation:paragraphs_step", args=[project.pk, pair.pk])
    assert "Step 1: which paragraphs align?" in client.get(url).content.decode()
    response = client.post(url, {"link": ["0:0", "1:1", "2:1"]})
    assert response.status_code == 302
    groups, own = paragraph_groups_for(project, anna, pair, None)
    assert own and [(g.complex_paragraphs, g.simple_paragraphs) for g in groups] == [([0], [0]), ([1, 2], [1])]
    bad = client.post(url, {"link": ["0:9"]}, follow=True)
    assert "Paragraph alignment not saved: paragraph link (0, 9) is outside the documents" in bad.content.decode()
    assert ParagraphCorrection.objects.count() == 1
    screen_html = client.get(reverse("annotation:annotate_pair", args=[project.pk, pair.pk])).content.decode()
    assert 'id="paragraphs-step"' in screen_html


def test_candidates_come_in_the_order_j_and_l_walk_them_best_suggestion_first(anna, project, pair, suggestion_run):
    payload = _payload(anna.get(_url("annotate_pair", project, pair)))
    checked = 0
    for simple_id, entries in payload["candidates"].items():
        rows = {c.complex_sentence_id: c for c in CandidateAlignment.objects.filter(run=suggestion_run, simple_sentence_id=int(simple_id))}
        kinds = [0 if entry["predicted"] in ("aligned", "partial") else 1 for entry in entries]
        assert kinds == sorted(kinds), "the aligner's suggestions come before its near misses"
        for kind in (0, 1):
            scores = [entry["score"] for entry, k in zip(entries, kinds) if k == kind]
            assert scores == sorted(scores, reverse=True), "each group is in score order, best first"
        suggested = [c for c in rows.values() if c.label in ("aligned", "partial")]
        if suggested:
            assert entries[0]["complex"] == max(suggested, key=lambda c: c.score).complex_sentence_id
            checked += 1
    assert checked == 2  # simple #1 and #2 have a suggestion; the others only near misses
    # Simple #2: its suggestion (complex #2), then the near misses by score (#4 at 0.128 before #3 at 0.095), not in document order.
    second = [entry["complex"] for entry in payload["candidates"][str(_sentence(pair, "simple", 1))]]
    assert second == [_sentence(pair, "complex", 1), _sentence(pair, "complex", 3), _sentence(pair, "complex", 2)]


def _item_event(client, project, pair, kind: str, text: str = ""):
    return client.post(_url("item_event_save", project, pair), {"kind": kind, "text": text})


def test_comment_flag_and_unflag_are_stored_as_events_and_shown_on_the_screen(anna, project, pair, annotator):
    from annotation.models import ItemEvent

    answer = _item_event(anna, project, pair, "comment", "  Paragraph 2 of the simple text is missing.  ")
    assert answer.status_code == 200
    assert answer.json()["notes"]["comments"][0]["text"] == "Paragraph 2 of the simple text is missing."
    assert _item_event(anna, project, pair, "flag").json()["notes"]["flagged"] is True
    notes = _payload(anna.get(_url("annotate_pair", project, pair)))["notes"]
    assert notes["flagged"] is True and [c["text"] for c in notes["comments"]] == ["Paragraph 2 of the simple text is missing."]
    assert _item_event(anna, project, pair, "unflag").json()["notes"]["flagged"] is False
    assert _payload(anna.get(_url("annotate_pair", project, pair)))["notes"]["flagged"] is False
    assert list(ItemEvent.objects.filter(annotator=annotator).values_list("kind", flat=True)) == ["comment", "flag", "unflag"]


def test_skip_is_stored_and_answers_where_to_go_next(anna, project, pair, annotator):
    from annotation.models import ItemEvent

    answer = _item_event(anna, project, pair, "skip").json()
    assert answer["next_url"] == reverse("annotation:project_detail", args=[project.pk])  # the annotator's only pair
    assert ItemEvent.objects.get(annotator=annotator).kind == "skip"
    assert _payload(anna.get(_url("annotate_pair", project, pair)))["notes"]["skipped_at"]


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        ("comment", "x" * 2001, "text: the comment has 2001 characters; at most 2000 are kept"),
        ("comment", "   ", "text: the comment is empty"),
        ("delete", "", "kind: unknown item event 'delete'"),
        ("undo", "", "kind: unknown item event 'undo'"),
    ],
)
def test_bad_item_events_are_refused_with_a_clear_400_and_nothing_is_stored(anna, project, pair, kind, text, message):
    from annotation.models import ItemEvent

    answer = _item_event(anna, project, pair, kind, text)
    assert answer.status_code == 400 and message in answer.json()["error"]
    assert not ItemEvent.objects.exists()


def test_outsiders_cannot_skip_flag_or_comment(client, outsider, project, pair):
    from annotation.models import ItemEvent

    client.force_login(outsider)
    assert _item_event(client, project, pair, "flag").status_code == 404
    assert not ItemEvent.objects.exists()


def test_a_comment_of_exactly_the_limit_is_kept_whole(anna, project, pair):
    from annotation.models import ITEM_COMMENT_MAX_CHARS, ItemEvent

    assert _item_event(anna, project, pair, "comment", "y" * ITEM_COMMENT_MAX_CHARS).status_code == 200
    assert len(ItemEvent.objects.get().text) == ITEM_COMMENT_MAX_CHARS

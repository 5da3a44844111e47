"""Queue mode and quality control: ordering, gold test items mixed in, accuracy and flags, undo, access."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_create, alignment_run_execute
from alignment.models import CandidateAlignment, DocumentPair
from annotation import services
from annotation.labelling import quality, queue
from annotation.models import GoldAnswer, GoldItem, LabelEvent


@pytest.fixture
def setup(tram_corpus, owner):
    run = alignment_run_create(
        corpus=tram_corpus,
        aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none"},
        measures=["tfidf_cosine", "jaccard"],
    )
    run = alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    anna = get_user_model().objects.create_user("anna", password="a-pass-123")
    project = services.project_create(name="Queue", corpus=tram_corpus, created_by=owner, overlap=1, suggestion_run=run)
    project.test_item_rate = 0.0
    project.save()
    services.membership_set(project=project, user=anna, role="annotator")
    services.assignments_distribute(project=project)
    return project, anna, run


def test_uncertainty_order_serves_the_marginal_closest_to_one_half_first(setup):
    project, anna, run = setup
    item = queue.queue_next(project, anna, "uncertainty")
    distances = sorted(abs(c.crf_marginal - 0.5) for c in CandidateAlignment.objects.filter(run=run))
    served = CandidateAlignment.objects.get(pk=item.item_id)
    assert item.kind == "candidate" and abs(served.crf_marginal - 0.5) == pytest.approx(distances[0])
    by_disagreement = queue.queue_next(project, anna, "disagreement")
    assert CandidateAlignment.objects.get(pk=by_disagreement.item_id).disagreement == max(
        CandidateAlignment.objects.filter(run=run).values_list("disagreement", flat=True)
    )


def test_answering_moves_on_and_undo_brings_the_item_back(setup):
    project, anna, run = setup
    first = queue.queue_next(project, anna)
    queue.queue_answer(project=project, annotator=anna, kind="candidate", item_id=first.item_id, label="aligned", seconds_spent=2.5)
    assert queue.queue_next(project, anna).item_id != first.item_id
    assert LabelEvent.objects.get().seconds_spent == 2.5
    left = queue.queue_left(project, anna)
    assert queue.queue_undo(project=project, annotator=anna) == queue.QueueUndo("the last label was undone", first.ref)
    assert LabelEvent.objects.count() == 2  # the undo is an event too
    assert queue.queue_left(project, anna) == left + 1  # back in the queue
    assert queue.queue_next(project, anna).item_id == first.item_id  # and first again in uncertainty order


def test_skip_takes_the_item_out_of_the_queue_and_undo_brings_it_back(setup):
    project, anna, run = setup
    first = queue.queue_next(project, anna)
    left = queue.queue_left(project, anna)
    assert left == CandidateAlignment.objects.filter(run=run).count()
    event = queue.queue_skip(project=project, annotator=anna, kind="candidate", item_id=first.item_id)
    assert (event.kind, event.simple_sentence_id, event.complex_sentence_id) == ("skip", first.simple.pk, first.complex.pk)
    assert queue.queue_next(project, anna).item_id != first.item_id
    assert queue.queue_left(project, anna) == left - 1
    assert not LabelEvent.objects.exists()  # a skip is not a label
    assert queue.queue_undo(project=project, annotator=anna) == queue.QueueUndo("the last skip was undone", first.ref)
    assert queue.queue_left(project, anna) == left
    assert queue.queue_next(project, anna).item_id == first.item_id
    assert queue.queue_undo(project=project, annotator=anna).message == "nothing to undo"


def test_queue_card_shows_the_article_the_aligners_confidence_in_its_label_and_what_is_left(client, setup):
    project, anna, run = setup
    client.force_login(anna)
    page = client.get(reverse("annotation:project_queue", args=[project.pk]))
    item, html = page.context["item"], page.content.decode()
    candidate = CandidateAlignment.objects.get(pk=item.item_id)
    assert candidate.pair.complex_document.title in html
    # One paragraph, so the CRF scored every candidate: its marginal is P(linked), the confidence is P(its label).
    sure = candidate.crf_marginal if candidate.label != "not_aligned" else 1 - candidate.crf_marginal
    suggestion = re.search(r'<p class="queue-suggestion" id="queue-suggestion">(.*?)</p>', html, re.S).group(1)
    assert f"aligner: {candidate.get_label_display().lower()}" in suggestion and f"confidence <strong>{sure:.2f}</strong>" in suggestion
    assert not re.search(r"score\s*[-−]?\d", suggestion)  # the raw score is the researcher's, not the annotator's
    assert f"<strong>{CandidateAlignment.objects.filter(run=run).count()}</strong> left" in html
    assert 'id="help"' in html and 'data-action="skip"' in html and 'id="guidelines"' in html


def test_queue_undo_redirects_to_the_item_it_brought_back_and_shows_it(client, setup):
    project, anna, run = setup
    client.force_login(anna)
    url = reverse("annotation:project_queue", args=[project.pk])
    first = client.get(url).context["item"]
    client.post(url + "?order=uncertainty", {"kind": "candidate", "item_id": first.item_id, "action": "skip"})
    assert client.get(url).context["item"].item_id != first.item_id
    answer = client.post(url + "?order=disagreement", {"action": "undo"})
    assert answer.status_code == 302 and answer["Location"] == f"{url}?order=disagreement&item={first.ref}"
    shown = client.get(answer["Location"])
    assert shown.context["item"].item_id == first.item_id and "The last skip was undone." in shown.content.decode()


def test_a_bad_skip_is_refused_with_a_message_and_nothing_stored(client, setup):
    from annotation.models import ItemEvent

    project, anna, run = setup
    client.force_login(anna)
    url = reverse("annotation:project_queue", args=[project.pk])
    page = client.post(url, {"kind": "candidate", "item_id": "abc", "action": "skip"}, follow=True)
    assert "item_id: &#x27;abc&#x27; is not a queue item id" in page.content.decode()
    page = client.post(url, {"kind": "candidate", "item_id": "999999", "action": "skip"}, follow=True)
    assert "no candidate 999999" in page.content.decode()
    assert not ItemEvent.objects.exists()


def test_an_unknown_or_foreign_item_in_the_address_falls_back_to_the_next_item(client, setup):
    project, anna, run = setup
    client.force_login(anna)
    url = reverse("annotation:project_queue", args=[project.pk])
    expected = client.get(url).context["item"].item_id
    for ref in ("candidate-999999", "gold-999999", "nonsense", "candidate-"):
        assert client.get(f"{url}?item={ref}").context["item"].item_id == expected


def test_every_nth_item_is_a_gold_test_item_and_accuracy_flags_careless_annotators(setup):
    project, anna, run = setup
    project.test_item_rate = 0.5  # every second item
    project.save()
    pair = DocumentPair.objects.get(corpus=project.corpus)
    simple = list(pair.simple_document.sentences.order_by("index"))
    complex_ = list(pair.complex_document.sentences.order_by("index"))
    for k in range(5):
        GoldItem.objects.create(project=project, simple_sentence=simple[k % len(simple)], complex_sentence=complex_[k], label="not_aligned")
    kinds = []
    for _ in range(10):
        item = queue.queue_next(project, anna)
        if item is None:
            break
        kinds.append(item.kind)
        queue.queue_answer(
            project=project, annotator=anna, kind=item.kind, item_id=item.item_id, label="aligned", seconds_spent=1.0
        )  # always "aligned": wrong on every gold item
    assert kinds[:4] == ["candidate", "gold", "candidate", "gold"]
    (row,) = quality.annotator_accuracy(project)
    assert row.answered == GoldAnswer.objects.count() >= 2 and row.correct == 0
    assert row.flagged == (row.answered >= quality.MIN_ANSWERS_TO_FLAG)


def test_bad_queue_answers_are_refused(setup):
    project, anna, run = setup
    with pytest.raises(ValueError, match="unknown label 'yes'"):
        queue.queue_answer(project=project, annotator=anna, kind="candidate", item_id=1, label="yes", seconds_spent=None)
    with pytest.raises(ValueError, match="no candidate 999999"):
        queue.queue_answer(project=project, annotator=anna, kind="candidate", item_id=999999, label="aligned", seconds_spent=None)
    assert not LabelEvent.objects.exists()


def test_queue_page_shows_one_item_and_records_the_keyed_answer(client, setup):
    project, anna, run = setup
    client.force_login(anna)
    page = client.get(reverse("annotation:project_queue", args=[project.pk]))
    item = page.context["item"]
    assert page.status_code == 200 and "<kbd>a</kbd>" in page.content.decode()
    client.post(
        reverse("annotation:project_queue", args=[project.pk]) + "?order=uncertainty",
        {"kind": "candidate", "item_id": item.item_id, "label": "partial", "seconds_spent": "3.2"},
    )
    event = LabelEvent.objects.get()
    assert (event.new_label, event.seconds_spent) == ("partial", 3.2)


def test_outsider_gets_404_from_the_queue(client, setup, outsider):
    client.force_login(outsider)
    assert client.get(reverse("annotation:project_queue", args=[setup[0].pk])).status_code == 404

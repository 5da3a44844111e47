"""Bulk accept (annotation.labelling.bulk): the estimate from the project's answered suggestions, the threshold for the
manager's target, the one-edit write with source ``bulk`` and the server's estimate, its undo, and the refusals."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from alignment.models import AlignmentRun, CandidateAlignment
from annotation import services
from annotation.export.card import CardStatistics, _provenance_lines
from annotation.export.selection import pair_exports
from annotation.labelling import bulk, bulk_estimate
from annotation.labelling.bulk_estimate import PrecisionEstimate, estimate_at, threshold_for
from annotation.labelling.confidence import confidences
from annotation.models import AnnotationProject, LabelEvent
from annotation.provenance import KEPT_FROM
from models_ml.aligning.calibration import calibration_write
from tests.annotation.conftest import label_now, lexical_run

JSON = {"HTTP_ACCEPT": "application/json"}


def test_the_estimate_is_smoothed_with_a_wilson_interval():
    estimate = estimate_at([(0.95, True)] * 20 + [(0.4, False)] * 5, 0.9)
    assert (estimate.count, estimate.right, round(estimate.precision, 4)) == (20, 20, round(21 / 22, 4))
    low, high = estimate.interval
    assert 0.83 < low < 0.85 and high == 1.0  # Wilson, 20 of 20: [.839, 1]
    assert PrecisionEstimate(0.5, 0, 0, "project").interval == (0.0, 1.0)


def test_the_threshold_is_the_lowest_that_meets_the_target_on_enough_answers():
    answers = [(0.99, True)] * 40 + [(0.8, True)] * 30 + [(0.75, False)] * 10 + [(0.6, False)] * 30
    chosen = threshold_for(answers, 0.95)
    assert chosen is not None and chosen.threshold == 0.76 and chosen.count == 70  # .75 would take in the 10 wrong ones
    assert threshold_for(answers, 0.999) is None  # 40 right of 40 reads 41/42 < .999
    assert threshold_for(answers[:29], 0.5) is None  # fewer than MIN_ANSWERED anywhere


@pytest.fixture
def crew(tram_corpus, owner, suggestion_run, pair):
    """Five annotators on the tram pair, in a project whose suggestions are the lexical run's."""
    users = [get_user_model().objects.create_user(f"ann{k}", password="a-pass-123") for k in range(5)]
    project = services.project_create(name="Bulk", corpus=tram_corpus, created_by=owner, overlap=5, suggestion_run=suggestion_run)
    for user in users:
        services.membership_set(project=project, user=user, role="annotator")
    services.assignments_distribute(project=project)
    suggested = list(
        CandidateAlignment.objects.filter(run=suggestion_run, pair=pair, label__in=("aligned", "partial"))
        .select_related("pair", "simple_sentence", "complex_sentence")
        .order_by("simple_sentence__index", "complex_sentence__index")
    )
    assert len(suggested) >= 2, suggested
    return project, users, suggested


def _answer(project, user, pair, suggested, wrong: set[int], *, done: bool = True):
    """``user`` accepts every suggestion but those in ``wrong`` (labelled not aligned, or left unlabelled when odd)."""
    for k, candidate in enumerate(suggested):
        if k in wrong and k % 2:
            continue  # unlabelled: not aligned once the pair is done
        label = "not_aligned" if k in wrong else candidate.label
        label_now(project, user, pair, candidate.simple_sentence_id, candidate.complex_sentence_id, label)
    if done:
        services.assignment_complete(project=project, annotator=user, pair=pair)


def test_answers_are_each_done_annotators_labels_of_the_suggestions_at_the_screens_confidence(crew, pair, suggestion_run):
    project, users, suggested = crew
    _answer(project, users[0], pair, suggested, wrong={0, 1})
    _answer(project, users[1], pair, suggested, wrong=set())
    _answer(project, users[2], pair, suggested, wrong={2}, done=False)  # not done: no answers yet
    shown = confidences(suggestion_run, suggested)
    expected = sorted(
        [(shown[c.pk].value, k not in {0, 1}) for k, c in enumerate(suggested)] + [(shown[c.pk].value, True) for c in suggested]
    )
    got = sorted(bulk.project_answers(project))
    assert [right for _, right in got] == [right for _, right in expected]
    assert [round(confidence, 5) for confidence, _ in got] == [round(confidence, 5) for confidence, _ in expected]


def _edit(client, project, pair, suggested, *, threshold="0.5", source="bulk", label=None, client_id="bulk-edit-000000001"):
    changes = [
        {"simple": c.simple_sentence_id, "complex": c.complex_sentence_id, "label": label or c.label, "source": source} for c in suggested
    ]
    data = {"changes": json.dumps(changes), "client_action_id": client_id, "seconds_spent": "2"}
    if threshold is not None:
        data["bulk_threshold"] = threshold
    return client.post(reverse("annotation:label_edit", args=[project.pk, pair.pk]), data, **JSON)


def _spot_checks_count(project, pair, suggested, owner) -> None:
    """A reviewer's decision on a bulk label (a spot check) makes it an answer, against the decision; the offer is new."""
    before = bulk.bulk_offer(project)
    for candidate, decided in zip(suggested, ("aligned", "not_aligned")):
        services.adjudicate(
            project=project, reviewer=owner, pair=pair, simple_sentence_id=candidate.simple_sentence_id,
            complex_sentence_id=candidate.complex_sentence_id, label=decided, expected_previous=None,
        )  # fmt: skip
        if decided == "aligned":
            assert bulk.bulk_offer(project).estimate.count == before.estimate.count + 1
    answers = bulk.project_answers(project)
    assert len(answers) == 3 * len(suggested) + 2 and sum(not right for _, right in answers) == 1


def _reviewers_and_exports_tell_them_apart(client, project, pair, suggested, owner, last, offer) -> None:
    """The project page counts and links bulk labels, the review shows them alone and marked, the export and its card
    and the agreement page tell them apart."""
    client.force_login(owner)
    page = client.get(reverse("annotation:project_detail", args=[project.pk]))
    assert (page.context["bulk"]["labels"], page.context["bulk"]["pairs"]) == (2 * len(suggested), 1)  # the undone edit too
    assert f"/pairs/{pair.pk}/review/?show=bulk".encode() in page.content
    review = client.get(reverse("annotation:pair_review", args=[project.pk, pair.pk]), {"show": "bulk"})
    assert len(review.context["states"]) == len(suggested) and all(state.bulk == {"ann3"} for state in review.context["states"])
    assert review.content.count(b'class="badge bulk-mark"') == len(suggested)
    everything = client.get(reverse("annotation:pair_review", args=[project.pk, pair.pk]), {"show": "all"})
    assert everything.content.count(b'class="badge bulk-mark"') == len(suggested)  # marked in every view
    # The export tells them apart: source bulk, the threshold and estimate in the label's suggestion, a line in the card.
    services.assignment_complete(project=project, annotator=last, pair=pair)  # four of five say aligned: a majority
    [(_, exported)] = list(pair_exports(project, [pair.pk], include_majority=True))
    bulk_labels = [a for item in exported.items for a in item.annotations if a["annotator"] == "ann3"]
    assert len(bulk_labels) == len(suggested) and all(a["source"] == "bulk" for a in bulk_labels)
    assert all(a["suggestion"]["bulk"]["threshold"] == offer.threshold for a in bulk_labels)
    assert not any("bulk" in a["suggestion"] for item in exported.items for a in item.annotations if a["annotator"] != "ann3")
    agreement = client.get(reverse("annotation:project_agreement", args=[project.pk]))
    assert agreement.context["bulk_labels"] == 2 * len(suggested) and b'id="bulk-note"' in agreement.content
    statistics = CardStatistics()
    statistics.add(exported, "train", Counter())
    assert statistics.sources["bulk"] == len(suggested)
    assert any(f"{len(suggested)} of these labels were **bulk accepted**" in line for line in _provenance_lines(statistics))


def test_a_bulk_accept_is_one_edit_with_the_servers_estimate_and_one_undo_takes_it_back(client, crew, pair, owner, monkeypatch):
    monkeypatch.setattr(bulk_estimate, "MIN_ANSWERED", 2)
    project, users, suggested = crew
    bulk.bulk_target_set(project, "0.8")  # a handful of answers, all right, reads (k + 1) / (k + 2): .875 for six
    for user in users[:3]:
        _answer(project, user, pair, suggested, wrong=set())
    offer = bulk.bulk_offer(project)
    assert offer.estimate is not None and offer.answered == 3 * len(suggested)
    client.force_login(users[4])
    page = client.get(reverse("annotation:annotate_pair", args=[project.pk, pair.pk]))
    assert page.context["bulk"]["estimate"]["threshold"] == offer.threshold
    assert b'id="annotate-bulk"' in page.content and b"accepts this pair's suggestions at confidence" in page.content
    answer = _edit(client, project, pair, suggested, threshold=str(offer.threshold))
    assert answer.status_code == 200, answer.content
    events = list(LabelEvent.objects.filter(annotator=users[4]))
    assert len(events) == len(suggested) and {e.source for e in events} == {"bulk"}
    bulk.bulk_target_set(project, "0.999")  # no threshold meets it now: a resend of the stored edit is still answered
    again = _edit(client, project, pair, suggested, threshold=str(offer.threshold))
    assert again.status_code == 200 and LabelEvent.objects.filter(annotator=users[4]).count() == len(suggested)
    bulk.bulk_target_set(project, "0.8")
    recorded = events[0].suggestion["bulk"]
    expected = estimate_at(bulk.project_answers(project), offer.threshold).as_dict()
    assert recorded == {"target": 0.8, **expected} and recorded["count"] == 3 * len(suggested)
    assert all(e.suggestion["bulk"] == recorded for e in events) and events[0].suggestion["run_id"] == project.suggestion_run_id
    undo = client.post(reverse("annotation:label_undo", args=[project.pk, pair.pk]), {"client_action_id": "bulk-undo-000000001"}, **JSON)
    assert undo.status_code == 200 and len(undo.json()["changes"]) == len(suggested)
    assert set(LabelEvent.objects.filter(annotator=users[4], source="undo").values_list("new_label", flat=True)) == {""}
    # Once done, bulk labels are no evidence: the answers are the three annotators' only.
    client.force_login(users[3])
    assert _edit(client, project, pair, suggested, threshold=str(offer.threshold), client_id="bulk-edit-000000002").status_code == 200
    services.assignment_complete(project=project, annotator=users[3], pair=pair)
    assert len(bulk.project_answers(project)) == 3 * len(suggested)
    _spot_checks_count(project, pair, suggested, owner)
    _reviewers_and_exports_tell_them_apart(client, project, pair, suggested, owner, users[4], offer)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"threshold": None}, "bulk_threshold: a bulk accept says which confidence it accepted from"),
        ({"threshold": "abc"}, "bulk_threshold: 'abc' is not a confidence from 0 to 1"),
        ({"threshold": "nan"}, "bulk_threshold: 'nan' is not a confidence from 0 to 1"),
        ({"threshold": "1.5"}, "bulk_threshold: '1.5' is not a confidence from 0 to 1"),
        ({"threshold": "0.01"}, "bulk_threshold: 0.01 is below the project's threshold"),
        ({"label": "not_aligned"}, "changes[0].label: a bulk accept accepts suggestions (aligned or partial), not 'not_aligned'"),
        ({"source": "human"}, "bulk_threshold: only a bulk accept (changes with source bulk) has a threshold"),
        ({"source": "undo"}, "changes[0].source: 'undo' is not one of human, suggestion, bulk"),
    ],
)
def test_a_bad_bulk_accept_is_refused_by_name_and_stores_nothing(client, crew, pair, monkeypatch, fields, error):
    monkeypatch.setattr(bulk_estimate, "MIN_ANSWERED", 2)
    project, users, suggested = crew
    bulk.bulk_target_set(project, "0.8")  # a handful of answers, all right, reads (k + 1) / (k + 2): .875 for six
    for user in users[:3]:
        _answer(project, user, pair, suggested, wrong=set())
    client.force_login(users[4])
    answer = _edit(client, project, pair, suggested, **fields)
    assert answer.status_code == 400 and answer.json()["error"].startswith(error), answer.json()
    assert not LabelEvent.objects.filter(annotator=users[4]).exists()


def test_no_bulk_accept_before_the_project_has_enough_answers(client, crew, pair):
    project, users, suggested = crew
    _answer(project, users[0], pair, suggested, wrong=set())
    assert bulk.bulk_offer(project).estimate is None  # a handful of answers, MIN_ANSWERED 30
    client.force_login(users[4])
    page = client.get(reverse("annotation:annotate_pair", args=[project.pk, pair.pk]))
    assert b"is not offered yet" in page.content
    answer = _edit(client, project, pair, suggested)
    assert answer.status_code == 400 and "offers no bulk accept yet" in answer.json()["error"]
    single = client.post(
        reverse("annotation:label_save", args=[project.pk, pair.pk]),
        {"simple_sentence_id": suggested[0].simple_sentence_id, "complex_sentence_id": suggested[0].complex_sentence_id,
         "label": "aligned", "expected_previous": "", "source": "bulk"},
        **JSON,
    )  # fmt: skip
    assert single.status_code == 400 and single.json()["error"] == "source: 'bulk' is not one of human, suggestion"


def test_the_target_is_the_managers_to_set_within_bounds(client, crew, owner):
    project, users, _ = crew
    url = reverse("annotation:project_bulk_target", args=[project.pk])
    client.force_login(users[0])
    assert client.post(url, {"bulk_precision_target": "0.9"}).status_code == 403
    client.force_login(owner)
    for bad in ("", "0.2", "1", "x"):
        client.post(url, {"bulk_precision_target": bad})
        project.refresh_from_db()
        assert project.bulk_precision_target == 0.97, bad
    answer = client.post(url, {"bulk_precision_target": "0.99"}, follow=True)
    project.refresh_from_db()
    assert project.bulk_precision_target == 0.99 and b"precision target is now 0.990" in answer.content
    bad = client.post(url, {"bulk_precision_target": "0.2"}, follow=True)
    assert b"bulk_precision_target: &#x27;0.2&#x27; is not a precision from 0.5 to 0.999" in bad.content


def _calibrated(run, tmp_path, answers):
    """The run's model directory: a calibration of ``answers`` (no weights needed to read it)."""
    (tmp_path / "checksums.json").write_text("{}\n", encoding="utf-8")
    calibration_write(tmp_path, answers, "a test calibration")
    run.config = {**run.config, "model_dir": str(tmp_path)}
    run.save(update_fields=["config"])


def test_a_new_project_falls_back_on_the_models_held_out_calibration_until_its_own_answers_can_judge(
    client, crew, pair, suggestion_run, tmp_path
):
    project, users, suggested = crew
    _calibrated(suggestion_run, tmp_path, [(0.95, True)] * 99 + [(0.6, False)] * 20)
    offer = bulk.bulk_offer(project)  # no answers of the project's own
    assert offer.estimate is not None and (offer.estimate.basis, offer.estimate.threshold, offer.estimate.count) == ("model", 0.61, 99)
    client.force_login(users[4])
    page = client.get(reverse("annotation:annotate_pair", args=[project.pk, pair.pk]))
    assert b"from the model&#x27;s held-out calibration" in page.content or b"from the model's held-out calibration" in page.content
    assert _edit(client, project, pair, suggested, threshold="0.61").status_code == 200
    recorded = LabelEvent.objects.filter(annotator=users[4]).first().suggestion["bulk"]
    assert (recorded["basis"], recorded["count"], recorded["right"]) == ("model", 99, 99)
    # A calibration altered after it was written is not trusted.
    (tmp_path / "calibration.json").write_text((tmp_path / "calibration.json").read_text().replace("99", "98"), encoding="utf-8")
    assert bulk.model_answers(project) is None


def test_the_projects_own_answers_overrule_the_model_once_there_are_enough(crew, pair, suggestion_run, tmp_path, monkeypatch):
    monkeypatch.setattr(bulk_estimate, "MIN_ANSWERED", 2)
    project, users, suggested = crew
    _calibrated(suggestion_run, tmp_path, [(0.99, True)] * 40)  # on its held-out documents, every suggestion right
    assert bulk.bulk_offer(project).estimate.basis == "model"
    for user in users[:2]:
        _answer(project, user, pair, suggested, wrong=set(range(len(suggested))))  # all wrong here
    assert bulk.bulk_offer(project).estimate is None  # the project's four answers say otherwise: nothing offered


def test_answers_count_only_against_the_suggestions_their_annotator_saw(crew, pair, suggestion_run, tram_corpus, monkeypatch):
    """A promoted version's re-alignment (the same suggestions here, from another run) is graded only by labels made
    while it was shown: the pairs done before may have trained its model. An adaptation that kept the pair's
    suggestions from the run they were labelled under keeps their answers."""
    project, users, suggested = crew
    _answer(project, users[0], pair, suggested, wrong={0})
    services.assignment_complete(project=project, annotator=users[1], pair=pair)  # done without a label: all wrong
    assert len(bulk.project_answers(project)) == 2 * len(suggested)

    promoted = lexical_run(tram_corpus, monkeypatch)
    AnnotationProject.objects.filter(pk=project.pk).update(suggestion_run=promoted)
    project.refresh_from_db()
    assert bulk.project_answers(project) == []  # labelled under the first run, or done before the promoted one finished
    _answer(project, users[2], pair, suggested, wrong={1})  # done while it is shown: its evidence
    assert sorted(right for _, right in bulk.project_answers(project)) == [False] + [True] * (len(suggested) - 1)

    kept = {**promoted.config, KEPT_FROM: {str(pair.pk): suggestion_run.pk}}  # as an adaptation's re-suggestion keeps them
    AlignmentRun.objects.filter(pk=promoted.pk).update(config=kept)
    project.refresh_from_db()
    answers = bulk.project_answers(project)  # users[0]'s and users[1]'s again; users[2] labelled under the promoted run
    assert len(answers) == 2 * len(suggested) and sum(not right for _, right in answers) == 1 + len(suggested)

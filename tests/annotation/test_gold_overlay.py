"""Human labels on the inspection page: which labels (verified gold first), the model's misses, and who may see them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

import alignment.aligning.service as aligning
from alignment.aligning.measures import run_measure
from alignment.human_labels import EXTRA, MISSED
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun, CandidateAlignment, DocumentPair
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.models import AnnotationProject

ADV = (
    "Honeybees visit thousands of flowers every day to collect nectar.\nThey turn the nectar into honey inside the hive.\n\n"
    "A hive can hold fifty thousand bees in summer.\nThe queen lays up to two thousand eggs a day.\n"
)
ELE = (
    "Bees visit many flowers every day.\nThey collect nectar.\nThey turn the nectar into honey in the hive.\n\n"
    "Many bees live in one hive.\nThe queen lays many eggs.\n"
)


@dataclass
class LabelledPair:
    """The Bees pair aligned by one run, and a project whose two annotators agree on two labels against the model.

    ``missed``: a candidate the model calls not aligned, both annotators *aligned*; ``extra``: a pair the
    model links, both annotators *not aligned*. ``vera`` views the project; ``anna`` annotates it.
    """

    pair: DocumentPair
    run: AlignmentRun
    project: AnnotationProject
    missed: CandidateAlignment
    extra: CandidateAlignment
    anna: object
    vera: object


def labelled_pair(owner, align, *, corpus_name: str = "Bees", adv: str = ADV, ele: str = ELE, language: str = "en") -> LabelledPair:
    """Import, align (``align(run)`` runs the run), and label as :class:`LabelledPair` says; the corpus is shared."""
    users = get_user_model().objects
    corpus, _ = corpus_get_or_create(name=corpus_name, language=language, owner=owner, is_shared=True)
    files = [(f"{corpus_name}-adv.txt", adv.encode()), (f"{corpus_name}-ele.txt", ele.encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    run = aligning.alignment_run_create(
        corpus=corpus,
        aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none"},
        measures=["tfidf_cosine", "char3_tfidf_cosine", "jaccard"],
    )
    align(run)
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    pair = DocumentPair.objects.get(corpus=corpus)
    anna, ben = users.create_user("anna", password="anna-pass-123"), users.create_user("ben", password="ben-pass-123")
    vera = users.create_user("vera", password="vera-pass-123")
    project = services.project_create(name=f"{corpus_name} gold", corpus=corpus, created_by=owner, overlap=2)
    for user in (anna, ben):
        services.membership_set(project=project, user=user, role="annotator")
    services.membership_set(project=project, user=vera, role="viewer")
    services.assignments_distribute(project=project)
    by_position = CandidateAlignment.objects.filter(run=run, pair=pair).order_by("simple_sentence__index", "complex_sentence__index")
    missed = by_position.filter(label="not_aligned").first()
    extra = by_position.filter(label="aligned").first()
    for user in (anna, ben):
        for candidate, label in ((missed, "aligned"), (extra, "not_aligned")):
            services.label_record(
                project=project, annotator=user, pair=pair, simple_sentence_id=candidate.simple_sentence_id,
                complex_sentence_id=candidate.complex_sentence_id, label=label, expected_previous=None,
            )  # fmt: skip
    return LabelledPair(pair, run, project, missed, extra, anna, vera)


@pytest.fixture
def labelled(owner, db) -> LabelledPair:
    return labelled_pair(owner, lambda run: aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure))


def _view(client, user, labelled: LabelledPair, **params):
    client.force_login(user)
    response = client.get(reverse("alignment:pair_inspect", args=[labelled.pair.pk]), params)
    return response, response.context["view"]


def _row(view, candidate):
    return next(row for row in view.rows if row.candidate.pk == candidate.pk)


def test_manager_sees_verified_gold_with_the_link_the_model_missed_and_the_one_it_added(client, owner, labelled):
    services.pair_verify(project=labelled.project, pair=labelled.pair, by=owner)
    response, view = _view(client, owner, labelled)
    assert view.overlay.labels.verified and view.overlay.labels.project == "Bees gold"
    missed, extra = _row(view, labelled.missed), _row(view, labelled.extra)
    assert (missed.human.label, missed.human.status, missed.verdict) == ("aligned", "verified", MISSED)
    assert (extra.human.label, extra.verdict) == ("not_aligned", EXTRA)
    html = response.content.decode()
    assert "verified gold of project “Bees gold”" in html and 'data-verdict="model missed"' in html
    # gold: every other pair the model links counts as not aligned, so it is an extra link too
    predicted = CandidateAlignment.objects.filter(run=labelled.run, pair=labelled.pair, label__in=["aligned", "partial"]).count()
    assert view.overlay.extra == predicted and view.overlay.missed == 1
    human = view.heatmap["human"]
    key = f"{labelled.missed.simple_sentence.index}:{labelled.missed.complex_sentence.index}"
    assert human[key] == {"label": "aligned", "status": "verified", "verdict": MISSED}


def test_before_verification_a_viewer_sees_the_annotators_labels_named_as_such(client, labelled):
    response, view = _view(client, labelled.vera, labelled)
    assert not view.overlay.labels.verified
    missed = _row(view, labelled.missed)
    assert (missed.human.label, missed.human.status, missed.verdict) == ("aligned", "agreed", MISSED)
    assert "anna: aligned" in missed.human.detail and "ben: aligned" in missed.human.detail
    assert view.overlay.extra == 1  # unlabelled pairs are unknown, not "not aligned", until the pair is verified
    assert "annotators&#x27; current labels in project “Bees gold” (not verified yet)" in response.content.decode()


def test_annotators_and_users_without_a_role_see_no_labels(client, outsider, labelled):
    for user in (labelled.anna, outsider):  # anna annotates the project; outsider sees the shared corpus, not the project
        response, view = _view(client, user, labelled)
        assert response.status_code == 200 and view.rows
        assert view.overlay is None and all(row.human is None and not row.verdict for row in view.rows)
        assert view.heatmap["human"] == {}
        html = response.content.decode()
        assert "model missed" not in html and "Bees gold" not in html and "<th>Humans</th>" not in html
        diff = client.get(reverse("alignment:candidate_diff", args=[labelled.missed.pk]), HTTP_HX_REQUEST="true")
        assert diff.status_code == 200 and 'id="diff-human"' not in diff.content.decode()


def test_staff_see_labels_of_every_project(client, staff, labelled):
    _, view = _view(client, staff, labelled)
    assert view.overlay is not None and _row(view, labelled.missed).verdict == MISSED


def test_the_diff_of_a_candidate_shows_the_humans_label_and_the_verdict(client, labelled):
    client.force_login(labelled.vera)
    html = client.get(reverse("alignment:candidate_diff", args=[labelled.missed.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert 'id="diff-human"' in html and "model missed" in html and "anna: aligned · ben: aligned" in html


def test_the_humans_filter_keeps_the_rows_where_the_model_disagrees(client, owner, labelled):
    _, view = _view(client, owner, labelled, human="disagrees")
    assert {row.candidate.pk for row in view.rows} == {labelled.missed.pk, labelled.extra.pk}
    _, labelled_only = _view(client, owner, labelled, human="labelled")
    assert {row.candidate.pk for row in labelled_only.rows} == {labelled.missed.pk, labelled.extra.pk}
    response, _ = _view(client, owner, labelled, human="wrong")
    assert response.status_code == 400 and "human: unknown filter &#x27;wrong&#x27;" in response.content.decode()


def test_a_verified_project_comes_before_one_with_more_labels(client, owner, labelled):
    other = services.project_create(name="Bees more", corpus=labelled.pair.corpus, created_by=owner, overlap=1)
    services.membership_set(project=other, user=labelled.anna, role="annotator")
    services.assignments_distribute(project=other)
    for candidate in CandidateAlignment.objects.filter(run=labelled.run)[:4]:
        services.label_record(
            project=other, annotator=labelled.anna, pair=labelled.pair, simple_sentence_id=candidate.simple_sentence_id,
            complex_sentence_id=candidate.complex_sentence_id, label="partial", expected_previous=None,
        )  # fmt: skip
    _, view = _view(client, owner, labelled)
    assert view.overlay.labels.project == "Bees more" and view.overlay.labels.other_projects == ("Bees gold",)
    services.pair_verify(project=labelled.project, pair=labelled.pair, by=owner)
    _, view = _view(client, owner, labelled)
    assert view.overlay.labels.project == "Bees gold" and view.overlay.labels.other_projects == ("Bees more",)

"""The dashboard's project-wide figures summed in PostgreSQL equal those computed from every rating in Python."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.adjudication.agreement import SCOPE_ALL_PAIRS, SCOPE_SHOWN, agreement_report
from annotation.adjudication.agreement_data import agreement_totals_in_python, pair_agreement_rows, project_ratings
from annotation.adjudication.agreement_sql import AgreementTotals, agreement_totals, agreement_totals_cached
from annotation.models import AnnotationProject, Assignment, LabelEvent, ProjectMembership
from tests.annotation.test_export_agreement import assert_same_report
from tests.page_scale_world import SENTENCES, world_build


def _event(project, pair, annotator, simple: int, complex_: int, label: str, **extra) -> LabelEvent:
    sentences = {side: list(getattr(pair, f"{side}_document").sentences.order_by("index")) for side in ("simple", "complex")}
    return LabelEvent(
        project=project, pair=pair, annotator=annotator, simple_sentence=sentences["simple"][simple],
        complex_sentence=sentences["complex"][complex_], new_label=label, **extra,
    )  # fmt: skip


@pytest.fixture
def varied(db) -> AnnotationProject:
    """The page-scale world of 12 pairs (anna done everywhere, ben nowhere, the aligner's diagonal), and more: carl,
    assigned six pairs and done with three, labels off the diagonal; ben undoes a label in four pairs and marks four
    pairs done; a reviewer's adjudication (not a rating); a pair whose assignments were taken back, labels and all."""
    world = world_build(12, name="Agree")
    project, owner = world.project, world.owner
    pairs = list(project.pairs.select_related("simple_document", "complex_document").order_by("pk"))
    carl = get_user_model().objects.create_user("carl")
    ProjectMembership.objects.create(project=project, user=carl, role="annotator")
    Assignment.objects.bulk_create(
        Assignment(project=project, pair=pair, annotator=carl, completed_at=timezone.now() if k % 2 else None)
        for k, pair in enumerate(pairs[:6])
    )
    events = [
        _event(project, pair, carl, k % SENTENCES, (k + 1) % SENTENCES, ("partial", "not_aligned", "aligned")[k % 3])
        for k, pair in enumerate(pairs[:6])
    ]
    events += [_event(project, pair, carl, 0, 0, "aligned") for pair in pairs[:4]]
    for pair in pairs[:4]:  # ben takes back his label on the first item: a later event, with none
        first = LabelEvent.objects.get(project=project, pair=pair, annotator=world.ben, simple_sentence__index=0, complex_sentence__index=0)
        events.append(_event(project, pair, world.ben, 0, 0, "", old_label=first.new_label, previous=first))
    events += [_event(project, pairs[5], owner, 1, 2, "partial", source=LabelEvent.Source.ADJUDICATION)]
    LabelEvent.objects.bulk_create(events)
    Assignment.objects.filter(project=project, pair__in=pairs[4:8], annotator=world.ben).update(completed_at=timezone.now())
    Assignment.objects.filter(project=project, pair=pairs[-1]).delete()
    return project


def assert_same_totals(got: AgreementTotals, expected: AgreementTotals) -> None:
    assert_same_report(got.shown, expected.shown)
    assert_same_report(got.all_pairs, expected.all_pairs)
    assert got.shown.label_counts == expected.shown.label_counts and got.all_pairs.label_counts == expected.all_pairs.label_counts
    for name in ("pairwise", "versus_aligner", "pairwise_all_items", "versus_aligner_all_items"):
        assert getattr(got, name) == getattr(expected, name), name


def test_the_sums_equal_the_ratings_in_python(varied) -> None:
    expected = agreement_totals_in_python(varied)
    assert expected.shown.annotators == ("agree-anna", "agree-ben", "carl")
    assert expected.all_pairs.items > expected.shown.items > 0 and expected.versus_aligner  # every part has something to compare
    defined = [report.krippendorff_alpha for report in (expected.shown, expected.all_pairs)]
    defined += [value for report in (expected.shown, expected.all_pairs) for value in report.cohen.values()]
    assert sum(value is not None for value in defined) >= 6, defined
    assert_same_totals(agreement_totals(varied), expected)


def test_each_pairs_row_equals_its_ratings_in_python(varied) -> None:
    """The per-pair rows count the items nobody labelled as one pattern; the same report as every rating one by one."""
    pairs = varied.pairs.select_related("complex_document", "simple_document").order_by("pk")
    rows = pair_agreement_rows(varied, pairs)
    ratings = project_ratings(varied, pairs)
    assert len(rows) == len(ratings) == 12
    for (pair, shown, all_pairs), expected in zip(rows, ratings, strict=True):
        assert pair == expected.pair
        assert_same_report(shown, agreement_report(expected.shown, scope=SCOPE_SHOWN))
        assert_same_report(all_pairs, agreement_report(expected.all_pairs, scope=SCOPE_ALL_PAIRS))
        assert all_pairs.label_counts == agreement_report(expected.all_pairs, scope=SCOPE_ALL_PAIRS).label_counts
    assert {row[2].items for row in rows} != {0}  # the rows have items to compare


def test_without_suggestions_and_without_labels_they_agree_too(varied) -> None:
    varied.suggestion_run = None
    varied.save()
    got = agreement_totals(varied)
    assert got.versus_aligner == {} and got.versus_aligner_all_items == {}
    assert_same_totals(got, agreement_totals_in_python(varied))
    empty = AnnotationProject.objects.create(name="Nothing yet", corpus=varied.corpus, created_by=varied.created_by)
    empty.pairs.add(*varied.pairs.all()[:2])
    assert_same_totals(agreement_totals(empty), agreement_totals_in_python(empty))


def test_the_cached_figures_last_until_a_label_or_an_assignment_changes(varied) -> None:
    first = agreement_totals_cached(varied)
    with CaptureQueriesContext(connection) as again:
        assert agreement_totals_cached(varied) == first
    assert len(again) == 2 and not any("WITH assigned" in query["sql"] for query in again)  # the roster and the state only
    pair = varied.pairs.order_by("pk").last()
    anna = varied.memberships.get(user__username="agree-anna").user
    Assignment.objects.create(project=varied, pair=pair, annotator=anna, completed_at=timezone.now())  # the taken-back pair, again
    LabelEvent.objects.bulk_create([_event(varied, pair, anna, 1, 0, "not_aligned")])
    relabelled = agreement_totals_cached(varied)
    assert relabelled != first and relabelled == agreement_totals(varied)
    Assignment.objects.filter(project=varied, pair=pair).update(completed_at=None)
    assert agreement_totals_cached(varied) == agreement_totals(varied) != relabelled

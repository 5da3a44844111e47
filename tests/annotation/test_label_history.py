"""The label history: append-only events, labels derived from them, undo, two-tab conflicts, roles."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.http import Http404

from annotation import selectors, services
from annotation.labels import current_labels
from annotation.models import Assignment, LabelEvent


@pytest.fixture
def project(tram_corpus, owner, annotator):
    project = services.project_create(name="Trams gold", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=annotator, role="annotator")
    assert services.assignments_distribute(project=project) == 1
    return project


def _ids(pair, simple_index: int, complex_index: int) -> dict:
    return {
        "simple_sentence_id": pair.simple_document.sentences.get(index=simple_index).pk,
        "complex_sentence_id": pair.complex_document.sentences.get(index=complex_index).pk,
    }


def test_labels_are_derived_from_the_latest_event_and_history_keeps_every_change(project, annotator, pair):
    first = services.label_record(
        project=project, annotator=annotator, pair=pair, label="aligned", expected_previous=None, **_ids(pair, 0, 0)
    )
    second = services.label_record(
        project=project, annotator=annotator, pair=pair, label="partial", expected_previous=first.pk, **_ids(pair, 0, 0)
    )
    services.label_record(project=project, annotator=annotator, pair=pair, label="aligned", expected_previous=None, **_ids(pair, 1, 0))
    labels = current_labels(project, annotator, pair.pk)
    key = tuple(_ids(pair, 0, 0).values())
    assert labels[key].new_label == "partial" and labels[key].pk == second.pk
    assert [(e.old_label, e.new_label) for e in LabelEvent.objects.filter(**_ids(pair, 0, 0))] == [("", "aligned"), ("aligned", "partial")]
    assert LabelEvent.objects.count() == 3


def test_a_stale_write_from_a_second_tab_is_refused_with_a_message(project, annotator, pair):
    first = services.label_record(
        project=project, annotator=annotator, pair=pair, label="aligned", expected_previous=None, **_ids(pair, 0, 0)
    )
    services.label_record(
        project=project, annotator=annotator, pair=pair, label="not_aligned", expected_previous=first.pk, **_ids(pair, 0, 0)
    )
    with pytest.raises(services.LabelConflict, match="changed elsewhere .* it is now not aligned"):
        services.label_record(
            project=project, annotator=annotator, pair=pair, label="partial", expected_previous=first.pk, **_ids(pair, 0, 0)
        )
    assert LabelEvent.objects.count() == 2


def test_undo_appends_the_inverse_and_repeated_undo_walks_back(project, annotator, pair):
    a = services.label_record(project=project, annotator=annotator, pair=pair, label="aligned", expected_previous=None, **_ids(pair, 0, 0))
    services.label_record(project=project, annotator=annotator, pair=pair, label="partial", expected_previous=a.pk, **_ids(pair, 0, 0))
    services.label_record(project=project, annotator=annotator, pair=pair, label="aligned", expected_previous=None, **_ids(pair, 2, 1))
    undo1 = services.label_undo(project=project, annotator=annotator, pair=pair)
    assert (undo1.simple_sentence_id, undo1.new_label, undo1.source) == (_ids(pair, 2, 1)["simple_sentence_id"], "", "undo")
    undo2 = services.label_undo(project=project, annotator=annotator, pair=pair)
    assert (undo2.old_label, undo2.new_label) == ("partial", "aligned")
    undo3 = services.label_undo(project=project, annotator=annotator, pair=pair)
    assert undo3.new_label == ""
    assert services.label_undo(project=project, annotator=annotator, pair=pair) is None
    assert LabelEvent.objects.count() == 6  # nothing was deleted or changed
    assert all(event.new_label == "" for event in current_labels(project, annotator, pair.pk).values())


def test_events_cannot_be_changed_or_deleted(project, annotator, pair):
    event = services.label_record(
        project=project, annotator=annotator, pair=pair, label="aligned", expected_previous=None, **_ids(pair, 0, 0)
    )
    event.new_label = "partial"
    with pytest.raises(ValidationError, match="append-only"):
        event.save()
    with pytest.raises(ValidationError, match="never deleted"):
        event.delete()
    assert LabelEvent.objects.get().new_label == "aligned"


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"label": "maybe"}, ValueError, "unknown label 'maybe'"),
        ({"swap": True}, ValueError, "is not a sentence of the simple document"),
    ],
)
def test_bad_label_writes_are_refused(project, annotator, pair, change, error, message):
    ids = _ids(pair, 0, 0)
    if change.get("swap"):
        ids = {"simple_sentence_id": ids["complex_sentence_id"], "complex_sentence_id": ids["simple_sentence_id"]}
    with pytest.raises(error, match=message):
        services.label_record(
            project=project, annotator=annotator, pair=pair, label=change.get("label", "aligned"), expected_previous=None, **ids
        )
    assert not LabelEvent.objects.exists()


def test_unassigned_annotator_cannot_write_and_outsider_gets_404(project, pair, outsider):
    services.membership_set(project=project, user=outsider, role="viewer")
    with pytest.raises(PermissionError, match="not assigned"):
        services.label_record(project=project, annotator=outsider, pair=pair, label="aligned", expected_previous=None, **_ids(pair, 0, 0))
    stranger = get_user_model().objects.create_user("stranger", password="x-pass-123")
    with pytest.raises(Http404):
        selectors.project_get_for_user(stranger, project.pk)
    assert selectors.project_get_for_user(outsider, project.pk)[1] == "viewer"
    with pytest.raises(Http404):
        selectors.assignment_get_for_user(outsider, project, pair.pk)


def test_distribution_respects_overlap_and_is_idempotent(tram_corpus, owner, annotator, outsider):
    project = services.project_create(name="Overlap", corpus=tram_corpus, created_by=owner, overlap=2)
    services.membership_set(project=project, user=annotator, role="annotator")
    services.membership_set(project=project, user=outsider, role="annotator")
    assert services.assignments_distribute(project=project) == 2
    assert services.assignments_distribute(project=project) == 0
    assert Assignment.objects.filter(project=project).count() == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"overlap": 0}, "overlap must be at least 1"), ({"pairs": []}, "has no document pairs")],
)
def test_bad_project_settings_are_refused(tram_corpus, owner, kwargs, message):
    with pytest.raises(ValueError, match=message):
        services.project_create(name="Bad", corpus=tram_corpus, created_by=owner, **kwargs)

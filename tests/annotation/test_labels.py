"""annotation.labels, the one home of labels: every copy of the label set is this one, and each
raw-SQL fast path gives what its ORM twin gives on the same data."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation import labels, selectors, services
from annotation.adjudication.agreement import LABELS as AGREEMENT_LABELS
from annotation.export.card import LABELS as CARD_LABELS
from annotation.labelling import screen
from annotation.models import GoldItem, LabelEvent
from annotation.projects import worklist
from models_ml import labels as ml_labels
from models_ml.similarity import cross_encoder
from webapp.api.annotation_serializers import LABELS as API_LABELS


def test_every_copy_of_the_label_set_is_the_one_in_models_ml():
    assert labels.LABELS == ml_labels.LABELS == ("aligned", "partial", "not_aligned")
    assert AGREEMENT_LABELS is ml_labels.LABELS and CARD_LABELS is ml_labels.LABELS
    assert labels.LINKED_LABELS == ("aligned", "partial")
    assert LabelEvent.Label.values == [*labels.LABELS, ""]
    assert [value for value, _ in GoldItem._meta.get_field("label").choices] == list(labels.LABELS)
    assert [value for value, _ in API_LABELS] == [*labels.LABELS, ""]
    # The cross-encoder keeps its own order (class indices stored in trained checkpoints) of the same words.
    assert sorted(cross_encoder.LABELS) == sorted(labels.LABELS)


def test_a_label_outside_the_set_is_refused_naming_the_set():
    assert labels.label_check("partial") == "partial"
    assert labels.label_check("", unlabelled=True) == ""
    with pytest.raises(ValueError, match=r"unknown label 'maybe'; labels: aligned, partial, not_aligned"):
        labels.label_check("maybe")
    with pytest.raises(ValueError, match="unknown label ''"):
        labels.label_check("")


def _guard_answers(team, user, simple_id: int, complex_id: int):
    """What the SQL guard and its ORM twin answer for one item: (event id, label) or the error, each."""
    answers = []
    for guard in (labels.write_guard, labels.write_guard_orm):
        try:
            with transaction.atomic():
                event = guard(team.project, user, team.pair, simple_id, complex_id)
            answers.append((event.pk, event.new_label) if event is not None else None)
        except (PermissionError, ValueError) as error:
            answers.append((type(error), str(error)))
    return answers


def test_the_sql_write_guard_and_its_orm_twin_agree(team_of_two):
    team, anna, ben = team_of_two, team_of_two.anna, team_of_two.ben
    s0, s1, c0, c1 = team.simple[0].pk, team.simple[1].pk, team.complex_[0].pk, team.complex_[1].pk
    team.label(anna, 0, 0, "aligned")
    team.label(ben, 0, 0, "partial")
    services.label_record(project=team.project, annotator=anna, pair=team.pair, simple_sentence_id=s0, complex_sentence_id=c0,
                          label="not_aligned", expected_previous=labels.latest_event(team.project, anna, s0, c0).pk)  # fmt: skip
    team.label(anna, 1, 1, "partial")
    services.label_undo(project=team.project, annotator=anna, pair=team.pair)  # anna's label on (s1, c1) is "" now
    services.adjudicate(project=team.project, reviewer=anna, pair=team.pair, simple_sentence_id=s0, complex_sentence_id=c0,
                        label="aligned", expected_previous=None)  # another stream: neither guard reads it  # fmt: skip
    stranger = get_user_model().objects.create_user("stranger")

    cases = {
        "relabelled": (anna, s0, c0),
        "other annotator": (ben, s0, c0),
        "undone": (anna, s1, c1),
        "never labelled": (ben, s1, c1),
        "not assigned": (stranger, s0, c0),
        "simple sentence from the complex side": (anna, c0, c0),
        "complex sentence from the simple side": (anna, s0, s1),
    }
    answers = {name: _guard_answers(team, *case) for name, case in cases.items()}
    for name, (sql, orm) in answers.items():
        assert sql == orm, name
    # ...and they are the right answers, so agreeing means something.
    assert answers["relabelled"][0][1] == "not_aligned"
    assert answers["other annotator"][0][1] == "partial"
    assert answers["undone"][0][1] == ""
    assert answers["never labelled"][0] is None
    assert answers["not assigned"][0][0] is PermissionError
    assert "simple document" in answers["simple sentence from the complex side"][0][1]
    assert "complex document" in answers["complex sentence from the simple side"][0][1]


def test_the_sql_progress_and_its_orm_twin_agree(team_of_two):
    team, anna = team_of_two, team_of_two.anna
    team.label(anna, 0, 0, "aligned")
    team.label(anna, 0, 1, "partial")  # a second link of the same simple sentence counts once
    team.label(anna, 2, 1, "not_aligned")  # "not aligned" is a label too
    team.label(anna, 1, 1, "partial")
    services.label_undo(project=team.project, annotator=anna, pair=team.pair)  # an undone label is no label
    team.label(team.ben, 3, 0, "aligned")  # someone else's label is not anna's progress
    services.adjudicate(project=team.project, reviewer=anna, pair=team.pair, simple_sentence_id=team.simple[4].pk,
                        complex_sentence_id=team.complex_[0].pk, label="aligned", expected_previous=None)  # fmt: skip

    fast = screen.pair_progress(team.project, anna, team.pair)
    orm = screen._progress(team.pair, labels.current_labels(team.project, anna, team.pair.pk))
    assert fast == orm
    assert (fast.labelled, fast.total) == (2, len(team.simple))
    # The task list's one-query figures and the project page's count the same for every assignment.
    for user in (anna, team.ben):
        expected = screen._progress(team.pair, labels.current_labels(team.project, user, team.pair.pk))
        (task,) = worklist.tasks_for(user)
        assert (task.labelled, task.total) == (expected.labelled, expected.total)
        rows = selectors.project_progress(team.project, selectors.project_progress_ids(team.project))
        (row,) = [row for row in rows if row["assignment"].annotator_id == user.pk]
        assert (row["touched"], row["total"]) == (expected.labelled, expected.total)
        own = selectors.project_progress_totals(team.project, annotator=user)  # the page's totals, summed in the database
        assert (own.assignments, own.touched, own.total) == (1, expected.labelled, expected.total)
    whole = selectors.project_progress_totals(team.project)
    assert (whole.touched, whole.total) == (2 + 1, 2 * len(team.simple))


def test_verified_pairs_follow_the_latest_verification(team_of_two, owner):
    team = team_of_two
    assert labels.verified_pair_ids(team.project) == set() and labels.pair_verified(team.project, team.pair) is None
    services.pair_verify(project=team.project, pair=team.pair, by=owner)  # no labels yet: nothing is pending
    assert labels.verified_pair_ids(team.project) == {team.pair.pk}
    assert labels.pair_verified(team.project, team.pair) is not None
    services.pair_verify(project=team.project, pair=team.pair, by=owner, verified=False)
    assert labels.verified_pair_ids(team.project) == set() and labels.pair_verified(team.project, team.pair) is None


def test_an_item_is_not_aligned_for_an_annotator_who_finished_and_unknown_for_one_still_working():
    own = {(1, 10): {7: "aligned"}, (2, 20): {7: ""}}  # annotator 7 labelled one item and undid another
    assignments = [(7, "anna", False), (8, "ben", True)]  # ben marked the pair done without labelling anything
    items = labels.item_labels(own, assignments, adjudicated=[(3, 30)])
    assert items == {(1, 10): {"anna": "aligned", "ben": "not_aligned"}, (3, 30): {"anna": None, "ben": "not_aligned"}}
    assert labels.agreed_label({"anna": "partial", "ben": "partial"}, adjudicate_all=False) == "partial"
    assert labels.agreed_label({"anna": "partial", "ben": "partial"}, adjudicate_all=True) is None
    assert labels.agreed_label({"anna": "partial", "ben": None}, adjudicate_all=False) is None
    assert labels.imported_label([(5, "aligned", "import"), (9, "partial", "import"), (12, "not_aligned", "human")]) == (9, "partial")

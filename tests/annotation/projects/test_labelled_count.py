"""``Assignment.labelled``, the count My tasks and the project page read instead of every label event, stays what the
events say through every way labels are written: a label set, changed, cleared and undone, an edit of several, a pair
given back, an API assignment and a gold import."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from annotation import labels, services
from annotation.intake.gold_import import gold_import
from annotation.models import Assignment
from annotation.projects import worklist
from tests.annotation.conftest import Team, tiny_gold_pair


def _recount(project, annotator, pair) -> int:
    """The count from the events themselves (the ORM's latest label per item), not from the kept column."""
    current = labels.current_labels(project, annotator, pair.pk)
    return len({simple for (simple, _), event in current.items() if event.new_label})


def _kept(team: Team, user) -> int:
    return Assignment.objects.get(project=team.project, pair=team.pair, annotator=user).labelled


def test_the_count_follows_labels_set_changed_cleared_and_undone(team_of_two: Team) -> None:
    team, anna = team_of_two, team_of_two.anna
    steps = [
        (lambda: team.label(anna, 0, 0, "aligned"), 1),
        (lambda: team.label(anna, 0, 1, "partial"), 1),  # a second link of the same simple sentence: still one sentence
        (lambda: team.label(anna, 2, 2, "not_aligned"), 2),  # "not aligned" is a label too
        (lambda: services.label_undo(project=team.project, annotator=anna, pair=team.pair), 1),
        (lambda: services.label_undo(project=team.project, annotator=anna, pair=team.pair), 1),  # 0-1 undone, 0-0 stays
        (lambda: services.label_undo(project=team.project, annotator=anna, pair=team.pair), 0),
    ]
    for step, expected in steps:
        step()
        assert _kept(team, anna) == _recount(team.project, anna, team.pair) == expected
    assert _kept(team, team.ben) == 0  # another annotator's labels on the same pair are theirs


def test_a_changed_and_a_cleared_label_move_the_count_only_when_it_moves(team_of_two: Team) -> None:
    team, anna = team_of_two, team_of_two.anna
    team.label(anna, 1, 1, "aligned")
    first = labels.latest_event(team.project, anna, team.simple[1].pk, team.complex_[1].pk)
    changed = services.label_record(
        project=team.project, annotator=anna, pair=team.pair, simple_sentence_id=team.simple[1].pk,
        complex_sentence_id=team.complex_[1].pk, label="partial", expected_previous=first.pk,
    )  # fmt: skip
    assert _kept(team, anna) == 1
    services.label_record(
        project=team.project, annotator=anna, pair=team.pair, simple_sentence_id=team.simple[1].pk,
        complex_sentence_id=team.complex_[1].pk, label="", expected_previous=changed.pk,
    )  # fmt: skip
    assert _kept(team, anna) == _recount(team.project, anna, team.pair) == 0
    assert [task.state for task in worklist.tasks_for(anna)] == ["not started"]  # a cleared label starts nothing


def test_a_pair_given_back_finds_the_labels_made_before(team_of_two: Team) -> None:
    team, anna = team_of_two, team_of_two.anna
    team.label(anna, 0, 0, "aligned")
    team.label(anna, 3, 3, "aligned")
    Assignment.objects.filter(project=team.project, annotator=anna).delete()
    assigned = services.assignment_create(project=team.project, pair=team.pair, annotator=anna)
    assert assigned.labelled == 2
    Assignment.objects.filter(project=team.project, annotator=anna).delete()
    services.assignments_distribute(project=team.project)
    assert _kept(team, anna) == 2
    assert [(task.state, task.labelled) for task in worklist.tasks_for(anna)] == [("in progress", 2)]


def test_a_gold_import_counts_its_labels(db) -> None:
    owner = get_user_model().objects.create_user("gold-owner", password="g-pass-123")
    pair = tiny_gold_pair()
    report = gold_import(project_name="Gold", corpus_name="Gold corpus", language="en", owner=owner, pairs=[pair])
    (assignment,) = Assignment.objects.filter(project=report.project)
    assert assignment.labelled == 2  # both simple sentences have a link; three labels
    assert _recount(report.project, owner, assignment.pair) == 2

"""The Models page's preview counts the gold in one query (gold_label_counts) and gets gold_items' counts."""

from __future__ import annotations

from collections import Counter

import pytest
from django.contrib.auth import get_user_model

from annotation.models import AnnotationProject, GoldAnswer, GoldItem, LabelEvent, PairVerification
from annotation.training.snapshot import gold_items, gold_label_counts, snapshot_create, snapshot_preview
from tests.page_scale_world import world_build


def _counted(project: AnnotationProject) -> dict[int, Counter]:
    by_pair: dict[int, Counter] = {}
    for pair_id, _, _, label in gold_items(project)[0]:
        by_pair.setdefault(pair_id, Counter())[label] += 1
    return dict(sorted(by_pair.items()))


def _relabel(project, user, pair, index: int, label: str, source: str = LabelEvent.Source.HUMAN) -> None:
    """A label after the user's latest on item (index, index) of ``pair``, or their first there."""
    simple = pair.simple_document.sentences.get(index=index)
    complex_ = pair.complex_document.sentences.get(index=index)
    previous = (
        LabelEvent.objects.filter(project=project, annotator=user, simple_sentence=simple, complex_sentence=complex_)
        .order_by("-pk")
        .first()
    )
    LabelEvent.objects.bulk_create([
        LabelEvent(project=project, pair=pair, annotator=user, simple_sentence=simple, complex_sentence=complex_, new_label=label,
                   old_label=previous.new_label if previous else "", previous=previous, source=source)
    ])  # fmt: skip


@pytest.fixture
def gold_world(db):
    """The page-scale world of 15 pairs (pairs 0, 5 and 10 verified, where anna and ben agree), and: ben changes his mind
    on a verified pair (an open item there), a reviewer adjudicates it; anna imports labels on an unverified pair and
    then relabels one of them by hand; a verified pair is withdrawn."""
    world = world_build(15, name="Gold")
    project, owner = world.project, world.owner
    pairs = list(project.pairs.select_related("simple_document", "complex_document").order_by("pk"))
    _relabel(project, world.ben, pairs[5], 1, "not_aligned")
    _relabel(project, world.ben, pairs[10], 0, "partial")
    _relabel(project, owner, pairs[10], 0, "partial", source=LabelEvent.Source.ADJUDICATION)
    for index in range(3):
        _relabel(project, world.anna, pairs[3], index, "aligned", source=LabelEvent.Source.IMPORT)
    _relabel(project, world.anna, pairs[3], 2, "not_aligned")
    PairVerification.objects.create(project=project, pair=pairs[0], verified=False, by=owner)
    return world


def test_the_preview_counts_equal_gold_items(gold_world) -> None:
    project = gold_world.project
    expected = _counted(project)
    assert None in expected[list(expected)[1]]  # an open item on a verified pair is counted as such (no final label)
    assert gold_label_counts(project) == expected


def test_flagged_annotators_and_adjudicating_everything_count_the_same_way(gold_world) -> None:
    project = gold_world.project
    pairs = list(project.pairs.order_by("pk")[1:6])
    gold = GoldItem.objects.bulk_create(
        GoldItem(project=project, simple_sentence=pair.simple_document.sentences.get(index=1),
                 complex_sentence=pair.complex_document.sentences.get(index=1), label="aligned")
        for pair in pairs
    )  # fmt: skip
    GoldAnswer.objects.bulk_create(GoldAnswer(gold_item=item, annotator=gold_world.ben, label="not_aligned") for item in gold)
    ben_counts = _counted(project)
    assert gold_label_counts(project) == ben_counts  # ben is flagged (0 of 5 right): his labels no longer open items
    project.exclude_flagged = False
    assert gold_label_counts(project) == _counted(project) != ben_counts
    project.adjudicate_all = True
    assert gold_label_counts(project) == _counted(project)


def test_the_preview_explains_missing_data_as_before(db) -> None:
    world = world_build(6, name="Few")  # pairs 0 and 5 verified: two of the three pairs training needs
    preview = snapshot_preview(world.project)
    assert "has 2 such document pair(s) with 6 label(s)" in preview["error"] and preview["pairs"] == 2
    assert preview["labels"] == {"aligned": 6}
    other = get_user_model().objects.create_user("other")
    assert snapshot_preview(AnnotationProject.objects.create(name="Empty", corpus=world.corpus, created_by=other))["pairs"] == 0


def test_the_models_page_preview_follows_a_new_verification(db) -> None:
    """The page keeps its preview in the cache: a verification (or a label, an assignment) makes it count again."""
    from annotation.training.views import _preview

    world = world_build(20, name="Cached")  # pairs 0, 5, 10 and 15 verified
    project = AnnotationProject.objects.select_related("suggestion_run").get(pk=world.project.pk)
    pair = project.pairs.select_related("simple_document", "complex_document").order_by("pk")[1]  # anna and ben differ on item 2
    _relabel(project, world.owner, pair, 2, "partial", source=LabelEvent.Source.ADJUDICATION)  # as a reviewer settles it
    before = _preview(project)
    assert not before["error"] and _preview(project) == before
    PairVerification.objects.create(project=project, pair=pair, verified=True, by=world.owner)  # no label changes
    after = _preview(project)
    assert sum(after["pairs"].values()) == sum(before["pairs"].values()) + 1


def test_the_models_page_shows_an_open_item_on_a_verified_pair(db, client) -> None:
    """Ben changes his mind on a verified pair after it was verified: the item is open again (no final label). The page
    answered 500 (sorting the labels met None); it shows the item as open, apart from the labels, and training can go on."""
    world = world_build(20, name="Open")  # pairs 0, 5, 10 and 15 verified, where anna and ben agree
    project = world.project
    pair = project.pairs.select_related("simple_document", "complex_document").order_by("pk")[5]
    _relabel(project, world.ben, pair, 1, "not_aligned")
    client.force_login(world.owner)
    page = client.get(f"/annotate/projects/{project.pk}/models/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "training-data-error" not in html and '<th class="num">None</th>' not in html  # not a label column
    assert "1 sentence pair of verified document pairs is open" in html
    preview = snapshot_preview(project)
    assert preview["labels"] == {"aligned": 11} and preview["open"] == 1
    snapshot = snapshot_create(project=project, created_by=world.owner)  # the open item links nothing: not aligned
    assert snapshot.counts["labels"] == {"aligned": 11} and snapshot.counts["open"] == 1
    assert sum(map(sum, (counts.values() for counts in snapshot.counts["labels_by_split"].values()))) == 11
    assert [item[3] for item in snapshot.items].count(None) == 1

"""Sentence splits and merges on the pair screen (issue 35 §4): the document's segmentation, carried labels,
refusals, undo, re-decoding, and exports on the current segmentation."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from alignment.aligning import service as aligning
from alignment.aligning.measures import run_measure
from alignment.errors import ServiceError
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, Document, Sentence
from alignment.segmenting.models import SegmentEdit
from alignment.segmenting.service import sentence_split, split_spans
from annotation import services
from annotation.labelling.screen import screen_build
from annotation.labelling.segmentation import redecoding_note, segment_edit
from annotation.labels import current_labels
from annotation.models import Assignment, GoldItem, LabelEvent, PairVerification
from tests.annotation.conftest import label_now, lexical_run


def texts(document_id: int) -> list[str]:
    return list(Sentence.objects.filter(document_id=document_id).order_by("index").values_list("text", flat=True))


def sentence(document_id: int, index: int) -> Sentence:
    return Sentence.objects.get(document_id=document_id, index=index)


def labelled(team, user) -> dict[tuple[int, int], str]:
    """The user's current labels on the pair (a cleared one, "", is no label)."""
    return {item: event.new_label for item, event in current_labels(team.project, user, team.pair.pk).items() if event.new_label}


def edit(team, user, operation: str, **options):
    return segment_edit(project=team.project, user=user, pair=team.pair, operation=operation, **options)


def test_a_split_adds_two_spans_of_the_same_text_and_numbers_the_document_again(team_of_two) -> None:
    team = team_of_two
    document = Document.objects.get(pk=team.pair.complex_document_id)
    raw_before = document.raw_text
    target = sentence(document.pk, 2)  # "Construction begins in spring and is expected to last three years."
    untouched = {s.pk: s.text for s in Sentence.objects.filter(document=document).exclude(pk=target.pk)}
    outcome = edit(team, team.anna, "split", sentence_id=target.pk, offset=target.text.index(" and is"))
    assert texts(document.pk)[2:4] == ["Construction begins in spring", "and is expected to last three years."]
    rows = list(Sentence.objects.filter(document=document).order_by("index"))
    assert [s.index for s in rows] == list(range(6))
    assert [(s.paragraph.index, s.index_in_paragraph) for s in rows] == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (2, 0)]
    document.refresh_from_db()
    assert document.raw_text == raw_before and all(document.raw_text[s.char_start : s.char_end] == s.text for s in rows)
    assert {s.pk: s.text for s in rows if s.pk in untouched} == untouched  # untouched sentences keep their rows and ids
    retired = Sentence.all_objects.get(pk=target.pk)
    assert retired.retired_by == outcome.edit and retired.text.startswith("Construction begins")
    assert (outcome.edit.kind, outcome.edit.before, outcome.edit.position, outcome.edit.by) == ("split", [target.pk], 2, team.anna)
    assert outcome.edit.after == [rows[2].pk, rows[3].pk] and "Sentence split." in outcome.message


@pytest.mark.parametrize(
    ("offset", "message"),
    [(0, "must lie inside the sentence"), (500, "must lie inside"), (1, "leaves one part empty"), ("3", "must lie inside")],
)
def test_a_split_point_outside_the_words_is_refused_by_name(offset, message) -> None:
    with pytest.raises(ValueError, match=message) as refused:
        split_spans(" Work starts.", offset)
    assert str(refused.value).startswith("offset:")


def test_a_merge_joins_two_sentences_of_a_paragraph_and_refuses_across_paragraphs(team_of_two) -> None:
    team = team_of_two
    simple_id = team.pair.simple_document_id
    with pytest.raises(ValueError, match="different paragraphs"):
        edit(team, team.anna, "merge", sentence_id=sentence(simple_id, 1).pk)
    with pytest.raises(ValueError, match="is the last of its document"):
        edit(team, team.anna, "merge", sentence_id=sentence(simple_id, 4).pk)
    assert len(texts(simple_id)) == 5 and not SegmentEdit.objects.exists()
    edit(team, team.anna, "merge", sentence_id=sentence(simple_id, 2).pk)
    assert texts(simple_id) == [
        "The city will build a new tram line.", "It will go from the harbour to the university.",
        "Work starts in spring. It will take three years.", "Some people think it costs too much.",
    ]  # fmt: skip


def test_a_merge_carries_the_labels_both_sentences_agree_on_and_keeps_the_history(team_of_two) -> None:
    team = team_of_two
    first = label_now(team.project, team.anna, team.pair, team.simple[2].pk, team.complex_[2].pk, "aligned", source="suggestion")
    label_now(team.project, team.anna, team.pair, team.simple[3].pk, team.complex_[2].pk, "aligned")
    label_now(team.project, team.anna, team.pair, team.simple[0].pk, team.complex_[0].pk, "aligned")  # untouched
    outcome = edit(team, team.anna, "merge", sentence_id=team.simple[2].pk)
    merged = sentence(team.pair.simple_document_id, 2)
    labels = current_labels(team.project, team.anna, team.pair.pk)
    assert labelled(team, team.anna) == {
        (team.simple[0].pk, team.complex_[0].pk): "aligned",
        (merged.pk, team.complex_[2].pk): "aligned",
    }
    carried = labels[(merged.pk, team.complex_[2].pk)]
    assert carried.source == "suggestion"  # the first of the two agreeing labels: its source and provenance go along
    assert carried.suggestion["carried_from"] == {"edit": outcome.edit.pk, "simple": team.simple[2].pk, "complex": team.complex_[2].pk}
    cleared = LabelEvent.objects.get(previous=first)
    assert (cleared.source, cleared.new_label, cleared.old_label) == ("segmentation", "", "aligned")
    assert (outcome.carried, outcome.dropped) == (1, 0) and outcome.edit.report["labels_carried"] == 1
    assert Assignment.objects.get(project=team.project, annotator=team.anna).labelled == 2


def test_a_merge_of_sentences_that_disagree_about_a_partner_is_refused_and_changes_nothing(team_of_two) -> None:
    team = team_of_two
    label_now(team.project, team.anna, team.pair, team.simple[2].pk, team.complex_[2].pk, "aligned")
    label_now(team.project, team.anna, team.pair, team.simple[3].pk, team.complex_[2].pk, "partial")
    events = LabelEvent.objects.count()
    with pytest.raises(ServiceError, match=r"sentences 3 and 4 disagree about sentence 3 of pair \d+ \(aligned / partial\)"):
        edit(team, team.anna, "merge", sentence_id=team.simple[2].pk)
    assert LabelEvent.objects.count() == events and len(texts(team.pair.simple_document_id)) == 5
    assert not SegmentEdit.objects.exists() and not Sentence.all_objects.filter(retired_by__isnull=False).exists()


def test_a_split_keeps_the_labels_on_both_parts_only_when_confirmed(team_of_two) -> None:
    team = team_of_two
    target = team.complex_[2]
    label_now(team.project, team.anna, team.pair, team.simple[2].pk, target.pk, "aligned")
    label_now(team.project, team.anna, team.pair, team.simple[3].pk, target.pk, "partial")
    outcome = edit(team, team.anna, "split", sentence_id=target.pk, offset=target.text.index(" and is"), keep_labels=True)
    parts = outcome.edit.after
    labels = labelled(team, team.anna)
    assert labels == {
        (team.simple[2].pk, parts[0]): "aligned", (team.simple[2].pk, parts[1]): "aligned",
        (team.simple[3].pk, parts[0]): "partial", (team.simple[3].pk, parts[1]): "partial",
    }  # fmt: skip
    assert (outcome.carried, outcome.dropped) == (4, 0)
    # undone (a merge of the two parts: they agree), the sentence is back with its id and its labels
    undone = edit(team, team.anna, "undo", side="complex", expected_undo=outcome.edit.pk)
    assert undone.edit.undoes == outcome.edit and sentence(team.pair.complex_document_id, 2).pk == target.pk
    labels = labelled(team, team.anna)
    assert labels == {(team.simple[2].pk, target.pk): "aligned", (team.simple[3].pk, target.pk): "partial"}
    assert [s.index for s in Sentence.objects.filter(document_id=team.pair.complex_document_id).order_by("index")] == list(range(5))
    with pytest.raises(ServiceError, match="no sentence edit of this document to undo"):
        edit(team, team.anna, "undo", side="complex")


def test_a_split_not_confirmed_drops_the_sentences_labels(team_of_two) -> None:
    team = team_of_two
    target = team.simple[1]
    label_now(team.project, team.anna, team.pair, target.pk, team.complex_[1].pk, "aligned")
    outcome = edit(team, team.anna, "split", sentence_id=target.pk, offset=target.text.index(" from"))
    assert (outcome.carried, outcome.dropped) == (0, 1) and "1 label of the split sentence removed" in outcome.message
    assert labelled(team, team.anna) == {}


def test_what_others_made_on_a_sentence_refuses_the_edit_with_the_reason(team_of_two, owner) -> None:
    team = team_of_two
    label_now(team.project, team.ben, team.pair, team.simple[4].pk, team.complex_[4].pk, "aligned")
    with pytest.raises(ServiceError, match=r"sentence 5 cannot be edited: ben labelled it in project 'Team'"):
        edit(team, team.anna, "split", sentence_id=team.simple[4].pk, offset=4)
    GoldItem.objects.create(project=team.project, simple_sentence=team.simple[0], complex_sentence=team.complex_[0], label="aligned")
    with pytest.raises(ServiceError, match=r"1 gold item names it in project 'Team'"):
        edit(team, team.anna, "split", sentence_id=team.simple[0].pk, offset=4)
    PairVerification.objects.create(project=team.project, pair=team.pair, verified=True, by=owner)  # as pair_verify stores it
    with pytest.raises(ServiceError, match=r"pair \d+ is verified in project 'Team' \(withdraw that first\)"):
        edit(team, team.anna, "split", sentence_id=team.simple[2].pk, offset=5)
    outsider = get_user_model().objects.create_user("carl", password="c-pass-123")
    with pytest.raises(PermissionError):
        edit(team, outsider, "split", sentence_id=team.simple[2].pk, offset=5)
    with pytest.raises(ServiceError, match="sentence: .* is not a current sentence of pair"):
        edit(team, team.anna, "split", sentence_id=999999, offset=5)
    assert not SegmentEdit.objects.exists()


def test_a_label_saved_on_a_sentence_an_edit_retired_is_refused_with_the_reason(team_of_two) -> None:
    team = team_of_two
    edit(team, team.anna, "merge", sentence_id=team.simple[2].pk)
    with pytest.raises(ValueError, match="was split or merged by a sentence edit; reload the page"):
        label_now(team.project, team.ben, team.pair, team.simple[3].pk, team.complex_[2].pk, "aligned")


def test_the_suggestions_are_decoded_again_for_the_new_sentences(team_of_two, monkeypatch) -> None:
    team = team_of_two
    run = lexical_run(team.project.corpus, monkeypatch)
    team.project.suggestion_run = run
    team.project.save(update_fields=["suggestion_run"])
    untouched = {s.pk for s in team.simple} - {team.simple[2].pk, team.simple[3].pk}
    before = _suggested(run, team.pair, untouched)
    outcome = edit(team, team.anna, "merge", sentence_id=team.simple[2].pk)
    # the stale result (counted by position) is gone; the run keeps the pair in scope; a small run decodes it again
    assert not AlignedPair.objects.filter(run=run).exists() and run.pairs.filter(pk=team.pair.pk).exists()
    [redecode] = AlignmentRun.objects.filter(pk__in=outcome.redecoding)
    assert redecode.config["redecode_into"] == [run.pk] and redecode.model_version == run.model_version
    assert "being decoded again" in redecoding_note(team.project, team.pair)
    assert "being decoded again" in screen_build(project=team.project, assignment=_assignment(team)).suggestion_note
    with pytest.raises(ServiceError, match=f"alignment run {redecode.pk} still aligns its pairs"):
        edit(team, team.anna, "split", sentence_id=team.simple[0].pk, offset=4)
    assert aligning.alignment_run_execute(run_id=redecode.pk, build_measure=run_measure).status == "succeeded"
    stored = AlignedPair.objects.get(run=run, pair=team.pair)
    assert (stored.simple_count, stored.complex_count) == (4, 5)
    current = set(Sentence.objects.values_list("pk", flat=True))
    candidates = CandidateAlignment.objects.filter(run=run, pair=team.pair)
    assert candidates.exists() and set(candidates.values_list("simple_sentence_id", flat=True)) <= current
    assert _suggested(run, team.pair, untouched) == before  # the untouched sentences' suggestions came back as they were
    run.refresh_from_db()
    assert run.config["kept_from"] == {str(team.pair.pk): redecode.pk} and run.pairs_done == 1
    assert redecoding_note(team.project, team.pair) == ""
    view = screen_build(project=team.project, assignment=_assignment(team))
    merged = sentence(team.pair.simple_document_id, 2).pk
    assert view.suggestion_note == "" and merged in view.payload["simple"] and str(merged) in view.payload["candidates"]


def _suggested(run, pair, simple_ids: set[int]) -> set[tuple[int, int, str]]:
    """The run's suggestions (aligned or partial) for these simple sentences of the pair."""
    rows = CandidateAlignment.objects.filter(run=run, pair=pair, label__in=["aligned", "partial"], simple_sentence_id__in=simple_ids)
    return set(rows.values_list("simple_sentence_id", "complex_sentence_id", "label"))


def _assignment(team) -> Assignment:
    return Assignment.objects.get(project=team.project, annotator=team.anna, pair=team.pair)


def test_the_export_reads_the_current_segmentation(team_of_two, owner, monkeypatch, tmp_path, settings) -> None:
    from annotation.export import service as export

    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)
    settings.EXPORT_DIR = tmp_path / "exports"
    team = team_of_two
    services.membership_set(project=team.project, user=owner, role="manager")
    label_now(team.project, team.anna, team.pair, team.simple[2].pk, team.complex_[2].pk, "aligned")
    edit(team, team.anna, "merge", sentence_id=team.simple[2].pk)
    merged = sentence(team.pair.simple_document_id, 2)
    label_now(team.project, team.ben, team.pair, merged.pk, team.complex_[2].pk, "aligned")
    job = export.export_job_create(project=team.project, created_by=owner, formats="jsonl", include_majority=True,
                                   fractions={"train": 1, "dev": 0, "test": 0})  # fmt: skip
    job = export.export_job_execute(job_id=job.pk)
    import json

    [row] = [json.loads(line) for line in (job.directory / "jsonl/train.jsonl").read_text().splitlines()]
    assert (row["simple_index"], row["label"], row["status"]) == (2, "aligned", "majority")
    assert "Work starts in spring. It will take three years." in json.dumps(row)


def test_sentence_split_in_the_alignment_layer_refuses_a_document_a_run_is_aligning(tram_corpus, owner) -> None:
    run = aligning.alignment_run_create(corpus=tram_corpus, aligner_config={"measure": "tfidf_cosine"}, measures=["jaccard"])
    target = Sentence.objects.filter(document__level="ele").order_by("index").first()
    with pytest.raises(ServiceError, match=f"alignment run {run.pk} still aligns its pairs"):
        sentence_split(sentence_id=target.pk, offset=4, by=owner)
    assert not SegmentEdit.objects.exists()


def test_agreement_rates_the_current_sentences(team_of_two) -> None:
    from annotation.adjudication.agreement_data import project_ratings

    team = team_of_two
    label_now(team.project, team.anna, team.pair, team.simple[2].pk, team.complex_[2].pk, "aligned")
    edit(team, team.anna, "merge", sentence_id=team.simple[2].pk)
    merged = sentence(team.pair.simple_document_id, 2)
    label_now(team.project, team.ben, team.pair, merged.pk, team.complex_[2].pk, "partial")
    [ratings] = project_ratings(team.project, [team.pair])
    assert ratings.sentences[0] == [team.simple[0].pk, team.simple[1].pk, merged.pk, team.simple[4].pk]
    assert ratings.explicit == {"anna": {(merged.pk, team.complex_[2].pk): "aligned"}, "ben": {(merged.pk, team.complex_[2].pk): "partial"}}


def _post(client, team, **data):
    from django.urls import reverse

    return client.post(reverse("annotation:segment_edit", args=[team.project.pk, team.pair.pk]), data, follow=True)


def test_the_screen_form_edits_and_says_so_and_refuses_bad_fields_by_name(team_of_two, client) -> None:
    team = team_of_two
    client.force_login(team.anna)
    answer = _post(client, team, operation="merge", sentence=team.simple[2].pk)
    assert answer.status_code == 200 and "Sentences merged." in answer.content.decode()
    assert "merge of simple sentences 3 and 4 (anna," in answer.content.decode()  # the Sentence edits card
    for data, message in (
        ({"operation": "split", "sentence": team.simple[0].pk, "offset": "x"}, "offset: &#x27;x&#x27; is not a sentence or event id"),
        ({"operation": "split", "sentence": team.simple[0].pk, "offset": 2**40}, "offset: 1099511627776 is out of range"),
        ({"operation": "shred", "sentence": team.simple[0].pk}, "operation: &#x27;shred&#x27; is not one of split, merge, undo"),
        ({"operation": "split", "sentence": team.simple[2].pk, "offset": 3}, "is not a current sentence of pair"),  # merged away
        ({"operation": "undo", "side": "complex"}, "there is no sentence edit of this document to undo"),
    ):
        page = _post(client, team, **data).content.decode()
        assert "The sentences were not changed: " in page and message in page, (data, message)
    assert SegmentEdit.objects.count() == 1
    undo = _post(client, team, operation="undo", side="simple", expected_undo=SegmentEdit.objects.get().pk)
    assert "Sentence edit undone." in undo.content.decode() and len(texts(team.pair.simple_document_id)) == 5
    outsider = get_user_model().objects.create_user("carl", password="c-pass-123")
    client.force_login(outsider)
    assert _post(client, team, operation="merge", sentence=team.simple[2].pk).status_code == 404
    assert SegmentEdit.objects.count() == 2

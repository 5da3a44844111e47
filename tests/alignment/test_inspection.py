"""The inspection view of a pair: run choice, heatmap payload, candidate table, word diff, access, bad input."""

from __future__ import annotations

import pytest
from django.urls import reverse

from alignment.aligning import scoring
from alignment.aligning.service import alignment_run_create
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.inspection import word_diff
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, DocumentPair
from alignment.services import corpus_get_or_create

LEXICAL = ["tfidf_cosine", "char3_tfidf_cosine", "jaccard"]
TFIDF_CONFIG = {"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none"}
BEES_ADV = (
    "Honeybees visit thousands of flowers every day to collect nectar.\nThey turn the nectar into honey inside the hive.\n\n"
    "A hive can hold fifty thousand bees in summer.\n"
)
BEES_ELE = (
    "Bees visit many flowers every day.\nThey collect nectar.\nThey turn the nectar into honey in the hive.\n\n"
    "Many bees live in one hive.\n"
)
RAIN = (
    "Heavy rain flooded the main road through the village on Monday.\nThe school stayed closed for two days.\n",
    "Rain flooded the main road in the village.\nThe school was closed for two days.\n",
)


@pytest.fixture
def bees(owner):
    """A corpus with two articles (two paragraphs in Bees) and no run yet; returns the Bees pair."""
    corpus, _ = corpus_get_or_create(name="Inspect", language="en", owner=owner)
    files = [("Bees-adv.txt", BEES_ADV.encode()), ("Bees-ele.txt", BEES_ELE.encode())]
    files += [("Rain-adv.txt", RAIN[0].encode()), ("Rain-ele.txt", RAIN[1].encode())]
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit"))
    assert not report.errors, report.errors
    return DocumentPair.objects.get(corpus=corpus, complex_document__external_id="Bees")


def _align(pair: DocumentPair, run_worker, **config) -> AlignmentRun:
    run = alignment_run_create(corpus=pair.corpus, pairs=[pair], aligner_config={**TFIDF_CONFIG, **config}, measures=LEXICAL)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    return run


@pytest.fixture
def aligned(bees, run_worker):
    return bees, _align(bees, run_worker)


def _inspect(client, pair, **params):
    return client.get(reverse("alignment:pair_inspect", args=[pair.pk]), params)


def _row_ids(response) -> list[int]:
    return [row.candidate.pk for row in response.context["view"].rows]


def test_latest_run_is_shown_by_default_and_an_older_run_stays_selectable(client, owner, bees, run_worker):
    older = _align(bees, run_worker)
    newer = _align(bees, run_worker, null_score=0.3)
    client.force_login(owner)
    response = _inspect(client, bees)
    assert response.status_code == 200
    view = response.context["view"]
    assert view.run == newer and [run.pk for run in view.runs] == [newer.pk, older.pk]
    assert {row.candidate.run_id for row in view.rows} == {newer.pk}
    assert (
        f'<option value="{older.pk}" data-measures="tfidf_cosine char3_tfidf_cosine jaccard crf_marginal">#{older.pk}'
        in response.content.decode()
    )

    response = _inspect(client, bees, run=older.pk)
    assert response.context["view"].run == older
    assert {row.candidate.run_id for row in response.context["view"].rows} == {older.pk}


def test_heatmap_payload_is_the_stored_matrix_with_blocks_path_and_candidates(client, owner, aligned):
    pair, run = aligned
    client.force_login(owner)
    payload = _inspect(client, pair).context["view"].heatmap
    stored = scoring.unpack_matrices(AlignedPair.objects.get(run=run, pair=pair).matrices)
    assert payload["measure"] == "tfidf_cosine" == run.primary_measure
    assert (payload["rows"], payload["cols"]) == stored["tfidf_cosine"].shape == (4, 3)
    assert payload["values"][0][0] == round(float(stored["tfidf_cosine"][0, 0]), 3)
    assert payload["max"] == max(max(row) for row in payload["values"])
    assert payload["simple"][1] == "They collect nectar."
    # paragraph_variant "none" aligns all paragraphs as one block covering every sentence
    assert payload["blocks"] == [{"row0": 0, "row1": 3, "col0": 0, "col1": 2}]
    assert [1, 0] in payload["viterbi"]  # "They collect nectar." is part of the first complex sentence
    first = CandidateAlignment.objects.get(run=run, simple_sentence__index=1, complex_sentence__index=0)
    assert payload["candidates"]["1:0"] == first.pk


def test_measure_switch_changes_the_heatmap_payload(client, owner, aligned):
    pair, _ = aligned
    client.force_login(owner)
    tfidf = _inspect(client, pair, measure="tfidf_cosine").context["view"].heatmap
    jaccard_response = _inspect(client, pair, measure="jaccard")
    jaccard = jaccard_response.context["view"].heatmap
    marginal = _inspect(client, pair, measure="crf_marginal").context["view"].heatmap
    assert jaccard["measure"] == "jaccard" and jaccard["values"] != tfidf["values"]
    assert marginal["measure"] == "crf_marginal" and marginal["values"] != tfidf["values"]
    assert 'id="heatmap-data"' in jaccard_response.content.decode()


def test_sort_orders_rows_by_score_disagreement_and_position(client, owner, aligned):
    pair, _ = aligned
    client.force_login(owner)
    by_score = [row.candidate.score for row in _inspect(client, pair, sort="-score").context["view"].rows]
    assert by_score == sorted(by_score, reverse=True) and by_score[0] > by_score[-1]
    ascending = [row.candidate.score for row in _inspect(client, pair, sort="score").context["view"].rows]
    assert ascending == sorted(ascending)
    spread = [row.candidate.disagreement for row in _inspect(client, pair, sort="-disagreement").context["view"].rows]
    assert spread == sorted(spread, reverse=True)
    positions = [
        (row.candidate.simple_sentence.index, row.candidate.complex_sentence.index) for row in _inspect(client, pair).context["view"].rows
    ]
    assert positions == sorted(positions)


def test_label_and_disagreement_filters_keep_only_matching_rows(client, owner, aligned):
    pair, run = aligned
    client.force_login(owner)
    every = _row_ids(_inspect(client, pair, label="all"))
    predicted = _inspect(client, pair, label="predicted").context["view"].rows
    assert predicted and all(row.candidate.label in ("aligned", "partial") for row in predicted)
    assert len(predicted) < len(every)
    not_aligned = _inspect(client, pair, label="not_aligned").context["view"].rows
    assert {row.candidate.label for row in not_aligned} == {"not_aligned"}
    threshold = sorted(CandidateAlignment.objects.filter(run=run).values_list("disagreement", flat=True))[len(every) // 2]
    kept = _inspect(client, pair, min_disagreement=threshold).context["view"].rows
    assert kept and all(row.candidate.disagreement >= threshold for row in kept) and len(kept) < len(every)


def test_htmx_sort_request_returns_only_the_candidate_table(client, owner, aligned):
    pair, _ = aligned
    client.force_login(owner)
    response = client.get(
        reverse("alignment:pair_inspect", args=[pair.pk]), {"sort": "-score"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="candidates"
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section class="card" id="candidates">')
    assert "heatmap-data" not in html and "<html" not in html


def test_word_diff_marks_dropped_new_and_replaced_words():
    diff = word_diff("Honeybees visit thousands of flowers every day to collect nectar.", "Bees visit many flowers every day.")
    complex_marks = [(s.text, s.replaced) for s in diff.complex_segments if s.kind == "del"]
    simple_marks = [(s.text, s.replaced) for s in diff.simple_segments if s.kind == "ins"]
    assert complex_marks == [("Honeybees", True), ("thousands of", True), ("to collect nectar", False)]
    assert simple_marks == [("Bees", True), ("many", True)]
    assert "".join((" " if s.space_before else "") + s.text for s in diff.simple_segments) == "Bees visit many flowers every day."


def test_candidate_diff_fragment_shows_marked_words_scores_and_group(client, owner, aligned):
    _, run = aligned
    client.force_login(owner)
    candidate = CandidateAlignment.objects.get(run=run, simple_sentence__index=0, complex_sentence__index=0)
    response = client.get(reverse("alignment:candidate_diff", args=[candidate.pk]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert '<del class="replaced">thousands of</del>' in html and "<del>to collect nectar</del>" in html
    assert '<ins class="replaced">many</ins>' in html
    assert "jaccard" in html and f"{candidate.crf_marginal:.3f}" in html
    assert candidate.group_index is not None
    assert "simple #2 ~ complex #1" in html  # "They collect nectar." belongs to the same group


def test_candidate_parameter_opens_the_diff_in_the_full_page(client, owner, aligned):
    pair, run = aligned
    client.force_login(owner)
    candidate = CandidateAlignment.objects.get(run=run, simple_sentence__index=0, complex_sentence__index=0)
    html = _inspect(client, pair, candidate=candidate.pk).content.decode()
    assert "<del>to collect nectar</del>" in html
    assert f'id="cand-{candidate.pk}" class="candidate-row selected"' in html
    plain = client.get(reverse("alignment:candidate_diff", args=[candidate.pk]))
    assert plain.status_code == 302 and plain.url.endswith(f"?run={run.pk}&candidate={candidate.pk}")


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"run": "999999"}, "run: run 999999"),
        ({"run": "abc"}, "run: &#x27;abc&#x27; is not an id"),
        ({"measure": "bleu"}, "measure: &#x27;bleu&#x27; was not scored"),
        ({"sort": "random"}, "sort: unknown order"),
        ({"label": "maybe"}, "label: unknown label filter"),
        ({"min_disagreement": "lots"}, "min_disagreement: &#x27;lots&#x27; is not a number"),
        ({"min_disagreement": "nan"}, "min_disagreement: &#x27;nan&#x27; is not a number"),
        ({"candidate": "999999"}, "candidate: candidate 999999 does not belong"),
    ],
)
def test_bad_parameter_gives_a_message_naming_it_not_a_500(client, owner, aligned, params, named):
    pair, run = aligned
    client.force_login(owner)
    response = _inspect(client, pair, **params)
    assert response.status_code == 400
    assert named in response.content.decode()
    assert response.context["view"].run == run and response.context["view"].rows  # the defaults still show the pair


def test_outsider_gets_404_for_the_page_and_the_diff(client, outsider, aligned):
    pair, run = aligned
    client.force_login(outsider)
    candidate = CandidateAlignment.objects.filter(run=run).first()
    assert _inspect(client, pair).status_code == 404
    assert client.get(reverse("alignment:candidate_diff", args=[candidate.pk]), HTTP_HX_REQUEST="true").status_code == 404


def test_pair_without_a_run_shows_the_empty_state(client, owner, bees):
    client.force_login(owner)
    response = _inspect(client, bees)
    assert response.status_code == 200
    assert "No alignment run exists yet for this pair" in response.content.decode()
    assert reverse("alignment:corpus_detail", args=[bees.corpus_id]) in response.content.decode()


def test_large_pair_without_stored_matrices_shows_a_note_and_the_table(client, owner, bees, run_worker, monkeypatch):
    monkeypatch.setattr(scoring, "HEATMAP_MAX_CELLS", 4)  # Bees is 4 x 3 = 12 cells
    run = _align(bees, run_worker)
    assert AlignedPair.objects.get(run=run).matrices in (b"", memoryview(b""))
    client.force_login(owner)
    response = _inspect(client, bees)
    html = response.content.decode()
    assert response.status_code == 200 and response.context["view"].heatmap is None
    assert "were not stored: 4 × 3 = 12 cells" in html and 'id="heatmap"' not in html
    assert response.context["view"].rows


def test_table_is_capped_with_a_note_when_more_candidates_match(client, owner, aligned, monkeypatch):
    from alignment import inspection

    pair, run = aligned
    monkeypatch.setattr(inspection, "TABLE_ROW_LIMIT", 3)
    client.force_login(owner)
    response = _inspect(client, pair)
    total = CandidateAlignment.objects.filter(run=run, pair=pair).count()
    assert len(response.context["view"].rows) == 3 < total == response.context["view"].matching
    assert f"Showing the first 3 of {total} matching candidates" in response.content.decode()

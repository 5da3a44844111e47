"""What the inspection view and the run page say about numbers that are right but surprising.

A row labelled *aligned* with CRF marginal 0.000 is a pair of an n:m group that its simple
sentence's own CRF state does not cover; a top-scoring pair outside the aligned paragraphs
was never scored by the CRF. A run over a few small pairs spends milliseconds in the
measures, which one decimal of seconds printed as "0.0 s".
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from alignment.aligning.service import alignment_run_create
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, DocumentPair
from alignment.services import corpus_get_or_create
from alignment.templatetags.durations import duration

LEXICAL = ["tfidf_cosine", "jaccard"]
# Simple #1 merges both complex sentences (a span state); simple #2 repeats only the second one, so
# the two simple sentences form one 2:2 group although simple #2's own state covers complex #2 only.
BRIDGE = (
    "The council opened a new bridge over the river on Monday.\nThe bridge cost twelve million euros to build.\n",
    "The council opened a new bridge and it cost twelve million euros.\nThe bridge cost twelve million euros to build.\n",
)
# Two paragraphs on each side: with paragraph alignment, cross-paragraph pairs are candidates (top-k by score)
# that the CRF never decodes.
BEES = (
    "Honeybees visit thousands of flowers every day to collect nectar.\nThey turn the nectar into honey inside the hive.\n\n"
    "A hive can hold fifty thousand bees in summer.\n",
    "Bees visit many flowers every day.\nThey collect nectar.\nThey turn the nectar into honey in the hive.\n\nMany bees live in one hive.\n",
)


def _pair(owner, name: str, texts: tuple[str, str]) -> DocumentPair:
    corpus, _ = corpus_get_or_create(name=f"Explain {name}", language="en", owner=owner)
    files = [(f"{name}-adv.txt", texts[0].encode()), (f"{name}-ele.txt", texts[1].encode())]
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit"))
    assert not report.errors, report.errors
    return DocumentPair.objects.get(corpus=corpus)


def _align(pair: DocumentPair, run_worker, **config) -> AlignmentRun:
    aligner_config = {"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none", **config}
    run = alignment_run_create(corpus=pair.corpus, pairs=[pair], aligner_config=aligner_config, measures=LEXICAL)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    return run


def _candidate(run: AlignmentRun, simple: int, complex_: int) -> CandidateAlignment:
    return CandidateAlignment.objects.get(run=run, simple_sentence__index=simple, complex_sentence__index=complex_)


def test_aligned_row_with_zero_marginal_is_marked_via_group_with_the_sentence_own_choice(client, owner, run_worker):
    pair = _pair(owner, "Bridge", BRIDGE)
    run = _align(pair, run_worker)
    assert AlignedPair.objects.get(run=run).viterbi == [[0, 1], [1]]  # the situation this test is about
    via_group = _candidate(run, 1, 0)
    assert via_group.label == "aligned" and via_group.crf_marginal < 0.0005  # what confused the researcher
    client.force_login(owner)
    response = client.get(reverse("alignment:pair_inspect", args=[pair.pk]))
    rows = {row.candidate.pk: row for row in response.context["view"].rows}
    note = rows[via_group.pk].marginal_note
    assert note is not None and note.tag == "via group"
    assert "simple #2's own CRF choice is complex #2, not complex #1" in note.text
    assert rows[_candidate(run, 1, 1).pk].marginal_note is None  # its own choice needs no explanation
    assert rows[_candidate(run, 0, 0).pk].marginal_note is None
    page = response.content.decode()
    assert 'id="marginal-legend"' in page and '<span class="marginal-tag">via group</span>' in page
    assert "not scored" not in page  # the legend explains only the tags the table shows

    diff = client.get(reverse("alignment:candidate_diff", args=[via_group.pk]), headers={"HX-Request": "true"})
    assert 'id="marginal-note"' in diff.content.decode() and "own CRF choice is complex #2" in diff.content.decode()
    full = client.get(reverse("alignment:pair_inspect", args=[pair.pk]), {"candidate": via_group.pk})
    assert full.context["view"].selected_note.tag == "via group"


def test_candidate_outside_the_aligned_paragraphs_is_marked_not_scored(client, owner, run_worker):
    pair = _pair(owner, "Bees", BEES)
    run = _align(pair, run_worker, paragraph_variant="newsela")
    outside = _candidate(run, 3, 0)  # "Many bees live in one hive." x the first paragraph's first sentence
    assert outside.crf_marginal == 0.0 and outside.label == "not_aligned"
    client.force_login(owner)
    response = client.get(reverse("alignment:pair_inspect", args=[pair.pk]))
    rows = {row.candidate.pk: row for row in response.context["view"].rows}
    assert rows[outside.pk].marginal_note.tag == "not scored"
    assert '<span class="marginal-tag">not scored</span>: the pair lies outside the aligned paragraphs' in response.content.decode()
    inside = _candidate(run, 0, 0)
    assert inside.label == "aligned" and rows[inside.pk].marginal_note is None


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(None, "–"), (0, "0 s"), (0.0004, "< 1 ms"), (0.0427, "43 ms"), (0.61, "610 ms"), (2.44, "2.4 s"), (185.2, "3 min 5 s")],
)
def test_duration_never_rounds_a_measured_time_to_zero(seconds, shown):
    assert duration(seconds) == shown


def test_run_page_shows_milliseconds_in_measures_and_explains_the_times(client, owner, run_worker):
    pair = _pair(owner, "Bridge", BRIDGE)
    run = _align(pair, run_worker)
    AlignmentRun.objects.filter(pk=run.pk).update(measure_seconds=0.0427, encoder_seconds=0.0)  # a small run's real figure
    client.force_login(owner)
    page = client.get(reverse("alignment:alignment_run_detail", args=[run.pk])).content.decode()
    assert '<dd class="small" id="measure-time">43 ms<br><span class="muted">encoder 0 s</span>' in page
    assert "0.0 s" not in page
    assert 'id="time-help"' in page and "the similarity matrices of the run's 2 measures" in page


def test_queued_run_shows_a_dash_not_zero_seconds(client, owner):
    pair = _pair(owner, "Bridge", BRIDGE)
    run = alignment_run_create(corpus=pair.corpus, pairs=[pair], aligner_config={"measure": "jaccard"}, measures=["jaccard"])
    client.force_login(owner)
    page = client.get(reverse("alignment:alignment_run_detail", args=[run.pk])).content.decode()
    assert '<dd class="small" id="measure-time">–</dd>' in page and '<dd class="small" id="aligner-time">–</dd>' in page

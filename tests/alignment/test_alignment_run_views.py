"""Starting, watching, cancelling and resuming alignment runs from the pages and from manage.py align."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from alignment.aligning.service import alignment_run_create
from alignment.models import AlignmentRun, Corpus, DocumentPair

LEXICAL_FORM = {"measure": "tfidf_cosine", "paragraph_variant": "none", "also_score": ["jaccard", "char3_tfidf_cosine"]}


def test_owner_starts_a_corpus_run_from_the_corpus_page(client, owner, tram_corpus):
    client.force_login(owner)
    page = client.get(reverse("alignment:corpus_detail", args=[tram_corpus.pk]))
    assert b"Align all 1 pair" in page.content
    response = client.post(reverse("alignment:corpus_align", args=[tram_corpus.pk]), LEXICAL_FORM)
    run = AlignmentRun.objects.get()
    assert response.status_code == 302 and response.url == reverse("alignment:alignment_run_detail", args=[run.pk])
    assert run.scope == "corpus" and run.pairs_total == 1 and run.created_by == owner
    assert run.measures == ["tfidf_cosine", "jaccard", "char3_tfidf_cosine"]
    assert run.config["aligner"]["paragraph_variant"] == "none"


def test_owner_aligns_one_pair_from_the_pair_page(client, owner, tram_corpus):
    client.force_login(owner)
    pair = DocumentPair.objects.get(corpus=tram_corpus)
    client.post(reverse("alignment:pair_align", args=[pair.pk]), LEXICAL_FORM)
    run = AlignmentRun.objects.get()
    assert run.scope == "pairs" and list(run.pairs.all()) == [pair]


def test_bad_form_input_starts_nothing_and_says_why(client, owner, tram_corpus):
    client.force_login(owner)
    response = client.post(reverse("alignment:corpus_align", args=[tram_corpus.pk]), {"measure": "telepathy"}, follow=True)
    assert not AlignmentRun.objects.exists()
    assert "The run was not started: measure: Select a valid choice" in response.content.decode()


def test_viewer_of_a_shared_corpus_sees_runs_but_cannot_start_or_cancel(client, outsider, tram_corpus):
    Corpus.objects.filter(pk=tram_corpus.pk).update(is_shared=True)
    run = alignment_run_create(corpus=tram_corpus, aligner_config={"measure": "jaccard"}, measures=["jaccard"])
    client.force_login(outsider)
    assert client.get(reverse("alignment:alignment_run_detail", args=[run.pk])).status_code == 200
    assert b"Align all" not in client.get(reverse("alignment:corpus_detail", args=[tram_corpus.pk])).content
    assert client.post(reverse("alignment:corpus_align", args=[tram_corpus.pk]), LEXICAL_FORM).status_code == 403
    assert client.post(reverse("alignment:alignment_run_cancel", args=[run.pk])).status_code == 403
    run.refresh_from_db()
    assert run.status == "queued" and AlignmentRun.objects.count() == 1


def test_outsider_gets_404_for_a_private_run(client, outsider, tram_corpus):
    run = alignment_run_create(corpus=tram_corpus, aligner_config={"measure": "jaccard"}, measures=["jaccard"])
    client.force_login(outsider)
    for name in ("alignment_run_detail", "alignment_run_progress"):
        assert client.get(reverse(f"alignment:{name}", args=[run.pk])).status_code == 404
    assert client.post(reverse("alignment:alignment_run_cancel", args=[run.pk])).status_code == 404


def test_run_page_shows_progress_label_counts_and_throughput(client, owner, tram_corpus, run_worker):
    run = alignment_run_create(corpus=tram_corpus, aligner_config={"measure": "tfidf_cosine", "null_score": 0.15}, measures=["jaccard"])
    client.force_login(owner)
    queued = client.get(reverse("alignment:alignment_run_progress", args=[run.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert "every 1s" in queued and "waiting for a worker" in queued and "Cancel" in queued
    run_worker(["alignment"])
    run.refresh_from_db()
    page = client.get(reverse("alignment:alignment_run_detail", args=[run.pk])).content.decode()
    assert "every 1s" not in page  # the fragment stops polling once the run ended
    assert "1 of 1 pairs aligned (100%)" in page
    assert f'<dd id="count-aligned">{run.label_counts.get("aligned", 0)}</dd>' in page
    assert f"{run.pairs_per_second:.2f}" in page
    assert reverse("alignment:pair_inspect", args=[run.pairs.get().pk]) + f"?run={run.pk}" in page


def test_each_poll_of_the_run_card_also_brings_the_pairs_table_with_links_to_the_pairs(client, owner, tram_corpus, run_worker):
    run = alignment_run_create(corpus=tram_corpus, aligner_config={"measure": "tfidf_cosine", "null_score": 0.15}, measures=["jaccard"])
    pair = run.pairs.get()
    client.force_login(owner)
    poll = reverse("alignment:alignment_run_progress", args=[run.pk])
    queued = client.get(poll, HTTP_HX_REQUEST="true").content.decode()
    assert '<div id="run-pairs" hx-swap-oob="true">' in queued and "pending" in queued and "Inspect</a>" not in queued
    assert f'<a href="{reverse("alignment:pair_detail", args=[pair.pk])}">' in queued  # a row links to its pair at once
    on_a_page = client.get(reverse("alignment:alignment_run_detail", args=[run.pk]), {"pairs_page": "1"}).content.decode()
    assert f'hx-get="{poll}?pairs_page=1"' in on_a_page  # polling keeps the page of pairs on screen
    run_worker(["alignment"])
    done = client.get(poll, HTTP_HX_REQUEST="true").content.decode()
    assert "every 1s" not in done and '<div id="run-pairs" hx-swap-oob="true">' in done  # the last poll: the final table
    assert '<span class="status status-succeeded">done</span>' in done and "pending" not in done
    assert f'{reverse("alignment:pair_inspect", args=[pair.pk])}?run={run.pk}">Inspect</a>' in done
    page = client.get(reverse("alignment:alignment_run_detail", args=[run.pk])).content.decode()
    assert '<div id="run-pairs">' in page and "hx-swap-oob" not in page


def test_cancel_and_resume_buttons_change_the_run(client, owner, tram_corpus):
    run = alignment_run_create(corpus=tram_corpus, aligner_config={"measure": "jaccard"}, measures=["jaccard"])
    client.force_login(owner)
    fragment = client.post(reverse("alignment:alignment_run_cancel", args=[run.pk]), HTTP_HX_REQUEST="true").content.decode()
    run.refresh_from_db()
    assert run.status == "cancelled" and "Resume" in fragment
    client.post(reverse("alignment:alignment_run_resume", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == "queued"


def test_align_command_runs_now_and_prints_the_counts(tram_corpus, capsys):
    call_command("align", "--corpus", "Trams", "--measure", "tfidf_cosine", "--measures", "jaccard", "--now")
    run = AlignmentRun.objects.get()
    assert run.status == "succeeded" and run.pairs_done == 1
    out = capsys.readouterr().out
    assert f"Run {run.pk} succeeded: 1 pairs, {run.candidates_written} candidates" in out


def test_align_command_queues_by_default_and_cancels(tram_corpus, capsys):
    call_command("align", "--corpus", "Trams", "--measure", "jaccard")
    run = AlignmentRun.objects.get()
    assert run.status == "queued"
    call_command("align", "--corpus", "Trams", "--cancel", str(run.pk))
    run.refresh_from_db()
    assert run.status == "cancelled"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--corpus", "Nope"], "no corpus called 'Nope'"),
        (["--corpus", "Trams", "--pair", "999999"], "no document pair with id 999999"),
        (["--corpus", "Trams", "--measures", "jaccard,bogus"], "unknown similarity measure 'bogus'"),
        (["--corpus", "Trams", "--config", "/nonexistent.json"], "/nonexistent.json: cannot read the aligner config"),
        (["--corpus", "Trams", "--resume", "424242"], "no alignment run with id 424242"),
    ],
)
def test_align_command_bad_input_names_the_problem(tram_corpus, argv, message):
    with pytest.raises(CommandError, match=message):
        call_command("align", *argv)
    assert not AlignmentRun.objects.exists()


def test_the_learned_measure_needs_a_model_and_another_measure_leaves_the_model_out(owner, tram_corpus, settings):
    from alignment.aligning.service import alignment_config_build

    config, version = alignment_config_build(model_dir=settings.ALIGNER_MODEL_DIR)
    assert config["aligner"]["measure"] == "learned" and config["aligner"]["scorer"] and "sha256" in version
    config, version = alignment_config_build(aligner_config={"measure": "jaccard"}, model_dir=settings.ALIGNER_MODEL_DIR)
    assert config["model_dir"] == "" and config["aligner"]["measure"] == "jaccard" and version.startswith("untrained")
    with pytest.raises(ValueError, match="learned pair scorer needs a trained model"):
        alignment_config_build(aligner_config={"measure": "learned"}, model_dir="")


def test_manage_py_align_uses_the_default_model_unless_told_untrained(tram_corpus, settings, capsys):
    call_command("align", "--corpus", "Trams", "--now")
    run = AlignmentRun.objects.get()
    assert run.status == "succeeded" and run.config["model_dir"] == settings.ALIGNER_MODEL_DIR
    assert run.config["aligner"]["measure"] == "learned" and "sha256" in run.model_version
    call_command("align", "--corpus", "Trams", "--model", "untrained", "--measure", "jaccard")
    untrained = AlignmentRun.objects.exclude(pk=run.pk).get()
    assert untrained.config["model_dir"] == "" and untrained.model_version.startswith("untrained")


def test_the_run_page_names_the_model_as_every_page_does(client, owner, tram_corpus):
    """Before: the run page printed the model folder and checksum, and the inspection page's run list too."""
    call_command("align", "--corpus", "Trams", "--now")
    run = AlignmentRun.objects.get()
    client.force_login(owner)
    page = client.get(reverse("alignment:alignment_run_detail", args=[run.pk])).content.decode()
    assert "<dt>Model</dt><dd>the shipped default model" in page
    pair = run.aligned_pairs.get().pair
    inspect = client.get(reverse("alignment:pair_inspect", args=[pair.pk])).content.decode()
    assert f"#{run.pk} · " in inspect and "· the shipped default model ·" in inspect

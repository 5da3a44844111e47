"""``manage.py mine``: start (with the start page's settings and defaults), watch with a progress bar, cancel, list;
bad settings stop with one error naming the flag and leave no job and no queued task."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment.mining.models import MinedPair, MiningJob
from tests.alignment.mining_support import SIMPLE, mineable_corpus, mining_run, mining_step, news_corpora

PREPARE = "alignment.mining_prepare"


@pytest.fixture
def corpora(owner):
    return news_corpora(owner)


def mine(*args: str) -> str:
    out = StringIO()
    call_command("mine", *args, stdout=out)
    return out.getvalue()


def prepare_tasks() -> int:
    return ProcrastinateJob.objects.filter(task_name=PREPARE).count()


def test_start_queues_one_job_for_the_worker_and_the_same_settings_find_it_again(corpora, django_capture_on_commit_callbacks):
    source, target = corpora
    with django_capture_on_commit_callbacks(execute=True):
        said = mine("start", "--corpus", "Complex news", "--target", str(target.pk), "--set", "k_documents=2", "--set", "theta_s=0.6")
    job = MiningJob.objects.get()
    assert f"Mining job {job.pk} (LHA, Complex news → Simple news) queued" in said and f"manage.py mine watch {job.pk}" in said
    assert (job.source_corpus, job.target_corpus, job.created_by) == (source, target, None)
    assert job.config["k_documents"] == 2 and job.config["theta_s"] == 0.6 and job.config["min_overlap"] == 0.4  # the form's value
    assert ProcrastinateJob.objects.get(task_name=PREPARE).args == {"job_id": job.pk}
    again = mine("start", "--corpus", str(source.pk), "--target", "Simple news", "--set", "theta_s=0.6", "--set", "k_documents=2")
    assert f"Mining job {job.pk} (LHA, Complex news → Simple news) already exists with these settings (queued)" in again
    assert MiningJob.objects.count() == 1


def test_settings_left_out_are_the_start_pages_so_the_page_finds_the_commands_job(corpora, client, owner):
    source, target = corpora
    mine("start", "--corpus", "Complex news", "--target", "Simple news")
    job = MiningJob.objects.get()
    client.force_login(owner)
    form = client.get(f"/corpora/{source.pk}/mine/").context["form"]
    shown = {name: form.get_initial_for_field(field, name) for name, field in form.fields.items()}
    posted = {name: "" if value is None else value for name, value in shown.items()}
    response = client.post(f"/corpora/{source.pk}/mine/", {**posted, "method": "lha", "target_corpus": target.pk})
    assert response.status_code == 302 and response["Location"] == f"/mining/{job.pk}/"  # the same job: the same settings
    assert MiningJob.objects.count() == 1


def test_an_emptied_filter_is_off_as_on_the_page(corpora):
    mine("start", "--corpus", "Complex news", "--target", "Simple news", "--set", "min_overlap=", "--set", "theta_d=")
    job = MiningJob.objects.get()
    assert job.config["min_overlap"] is None and job.config["theta_d"] == 0.5  # off; θd: dense LHA's default


def test_a_muss_job_mines_within_the_one_corpus_as_the_user_named(corpora, owner):
    said = mine("start", "--corpus", "Simple news", "--method", "muss", "--set", "k=4", "--user", "owner")
    job = MiningJob.objects.get()
    assert job.method == "muss" and job.target_corpus_id == job.source_corpus_id and job.config["k"] == 4
    assert job.created_by == owner
    assert job.config["min_margin"] == 1.06 and f"Mining job {job.pk} (MUSS, Simple news) queued" in said


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--set", "k_documents=0"], "--set k_documents: Ensure this value is greater than or equal to 1."),
        (["--set", "theta_s=high"], "--set theta_s: Enter a number."),
        (["--set", "window=3"], "--set window: not a setting of LHA jobs; their settings: target_corpus, retrieval, k_documents"),
        (["--set", "retrieval=sparse"], "--set retrieval: Select a valid choice. sparse is not one of the available choices."),
        (["--set", "k_documents"], "--set 'k_documents': write a setting as NAME=VALUE"),
        (["--set", "target_corpus=3"], "--set target_corpus: give it as --target"),
        (["--method", "muss", "--set", "k_documents=3"], "--set k_documents: not a setting of MUSS jobs"),
        (["--method", "muss", "--set", "min_margin=-1"], "--set min_margin: Ensure this value is greater than or equal to 0.0."),
        (["--method", "laser"], "argument --method: invalid choice: 'laser'"),
        (["--target", "Nowhere"], "--target: no corpus called 'Nowhere'"),
        (["--target", "Bare"], "--target: corpus 'Bare': 2 of 2 sentences have no vector from"),
        (["--set", "k_documents=3", "--user", "outsider"], "--user outsider: only the owner of corpus 'Complex news' and staff"),
        (["--user", "nobody"], "--user: no user called 'nobody'"),
    ],
)
def test_bad_settings_stop_with_one_error_naming_the_flag_and_queue_nothing(
    corpora, owner, outsider, arguments, message, django_capture_on_commit_callbacks
):
    mineable_corpus(owner, "Bare", {"Tram": SIMPLE["Tram"]}, vectors=False)
    target = [] if "--target" in arguments or "muss" in arguments else ["--target", "Simple news"]
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(CommandError) as refused:
        mine("start", "--corpus", "Complex news", *target, *arguments)
    assert message in str(refused.value)
    assert not MiningJob.objects.exists() and prepare_tasks() == 0


def test_lha_without_a_target_or_towards_itself_names_the_flag(corpora):
    source, _ = corpora
    with pytest.raises(CommandError, match=r"^--target: This field is required\.$"):
        mine("start", "--corpus", "Complex news")
    with pytest.raises(CommandError, match=rf"^--target: corpus {source.pk} is not one you may mine towards: give another corpus"):
        mine("start", "--corpus", "Complex news", "--target", "Complex news")
    assert not MiningJob.objects.exists()


def test_watch_draws_the_bar_until_the_job_succeeds(corpora, monkeypatch):
    """No worker: each wait of the command runs one step of the job here, as a worker elsewhere would meanwhile."""
    mine("start", "--corpus", "Complex news", "--target", "Simple news", "--set", "k_documents=1")
    job = MiningJob.objects.get()
    waits: list[float] = []
    monkeypatch.setattr("alignment.management.commands.mine.sleep", lambda seconds: waits.append(seconds) or mining_step(job))
    said = mine("watch", str(job.pk), "--interval", "0.01")
    job.refresh_from_db()
    assert job.status == "succeeded" and waits and set(waits) == {0.01}
    draws = said.split("\r")
    assert "Queued: it starts when a worker" in draws[0]
    assert any(f"Mining job {job.pk}:   0%" in draw and "queued, 0 pairs" in draw for draw in draws)
    pairs = MinedPair.objects.filter(job=job).count()
    assert pairs >= 3 and f"Mining job {job.pk}: 100%" in draws[-1] and "3/3 source documents" in draws[-1]
    assert f"succeeded, {pairs} pairs" in draws[-1] and f"Mining job {job.pk} succeeded: {pairs} pairs" in said


def test_start_with_watch_waits_for_the_end(corpora, monkeypatch):
    def work(seconds: float) -> None:
        mining_step(MiningJob.objects.get())

    monkeypatch.setattr("alignment.management.commands.mine.sleep", work)
    said = mine("start", "--corpus", "Complex news", "--target", "Simple news", "--watch", "--interval", "0.5")
    job = MiningJob.objects.get()
    assert job.status == "succeeded" and f"Mining job {job.pk} succeeded" in said


def test_watch_exits_with_status_1_naming_the_reason_when_the_job_fails(corpora, monkeypatch):
    mine("start", "--corpus", "Complex news", "--target", "Simple news")
    job = MiningJob.objects.get()
    monkeypatch.setattr("alignment.management.commands.mine.sleep", lambda seconds: job.mark_failed("shard 0: MemoryError: out of memory"))
    with pytest.raises(CommandError) as failed:
        mine("watch", str(job.pk), "--interval", "0.01")
    assert failed.value.returncode == 1
    assert str(failed.value) == f"mining job {job.pk} failed: shard 0: MemoryError: out of memory"


def test_cancel_stops_the_job_and_watch_then_exits_with_status_1(corpora, outsider):
    mine("start", "--corpus", "Complex news", "--target", "Simple news")
    job = MiningJob.objects.get()
    mining_step(job)  # prepared: running, its shard waiting
    with pytest.raises(CommandError, match="--user outsider: only the owner of corpus 'Complex news'"):
        mine("cancel", str(job.pk), "--user", "outsider")
    job.refresh_from_db()
    assert not job.cancel_requested
    said = mine("cancel", str(job.pk), "--user", "owner")
    assert f"Mining job {job.pk} is running, cancel requested" in said
    job = mining_run(job)  # the shard sees the request before its first document
    assert job.status == "cancelled" and job.documents_done == 0
    with pytest.raises(CommandError, match=f"mining job {job.pk} was cancelled after 0 of 3 source documents") as stopped:
        mine("watch", str(job.pk), "--interval", "0.01")
    assert stopped.value.returncode == 1
    assert "has ended (cancelled): nothing to cancel" in mine("cancel", str(job.pk))


def test_watch_and_cancel_name_a_missing_job(db):
    for action in ("watch", "cancel"):
        with pytest.raises(CommandError, match="no mining job with id 999"):
            mine(action, "999")
    with pytest.raises(CommandError, match="--interval: 0.0 is not a number of seconds above 0"):
        mine("watch", "999", "--interval", "0")


def test_list_shows_the_jobs_with_their_status_and_filters_them(corpora):
    mine("start", "--corpus", "Complex news", "--target", "Simple news")
    mine("start", "--corpus", "Simple news", "--method", "muss")
    lha, muss = MiningJob.objects.order_by("pk")
    mining_run(lha)
    lines = mine("list").splitlines()
    assert lines[0].split() == ["id", "method", "status", "done", "pairs", "corpora"]
    assert lines[1].split()[:4] == [str(muss.pk), "muss", "queued", "0%"] and lines[1].endswith("Simple news")
    assert lines[2].split()[:5] == [str(lha.pk), "lha", "succeeded", "100%", str(MinedPair.objects.filter(job=lha).count())]
    assert [line.split()[0] for line in mine("list", "--method", "lha").splitlines()[1:]] == [str(lha.pk)]
    assert [line.split()[0] for line in mine("list", "--status", "queued").splitlines()[1:]] == [str(muss.pk)]
    assert [line.split()[0] for line in mine("list", "--corpus", "Complex news").splitlines()[1:]] == [str(lha.pk)]

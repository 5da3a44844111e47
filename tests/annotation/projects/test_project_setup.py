"""Setting a project up: members found by search, annotators invited, runs of this corpus only, the overlap kept honest."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from alignment.models import AlignmentRun, Corpus
from annotation import services
from annotation.models import AnnotationProject, ProjectMembership
from annotation.projects import members
from tests.annotation.conftest import label_now, tram_project


@pytest.fixture
def project(tram_corpus, owner, annotator):
    project = services.project_create(name="Trams gold", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=annotator, role="annotator")
    return project


def _detail(client, project) -> str:
    return client.get(reverse("annotation:project_detail", args=[project.pk])).content.decode()


def test_the_member_form_adds_annotators_unless_told_otherwise(client, owner, project):
    client.force_login(owner)
    page = _detail(client, project)
    assert re.search(r'<option value="annotator" selected>', page)
    get_user_model().objects.create_user("ben", password="b-pass-123")
    client.post(reverse("annotation:project_members", args=[project.pk]), {"username": "ben", "role": "annotator"})
    assert ProjectMembership.objects.get(project=project, user__username="ben").role == "annotator"


def test_member_search_lists_usernames_by_prefix_for_managers_only(client, owner, project, annotator):
    users = get_user_model().objects
    for name in ["bert", "Bea", "carl"] + [f"bx{i:02d}" for i in range(12)]:
        users.create_user(name, password="x-pass-123456")
    users.create_user("bob", password="x-pass-123456", is_active=False)
    url = reverse("annotation:project_member_search", args=[project.pk])
    client.force_login(owner)
    options = re.findall(r'<option value="([^"]+)">', client.get(url, {"username": "be"}).content.decode())
    assert options == ["Bea", "bert"]
    assert len(re.findall(r"<option", client.get(url, {"username": "b"}).content.decode())) == 10
    assert "<option" not in client.get(url, {"username": "x" * 151}).content.decode()  # too long: nothing, no error
    assert "<option" not in client.get(url).content.decode()
    client.force_login(annotator)
    assert client.get(url, {"username": "be"}).status_code == 403


def test_a_manager_invites_an_annotator_who_chooses_a_password_once(client, owner, project):
    client.force_login(owner)
    response = client.post(
        reverse("annotation:project_member_invite", args=[project.pk]), {"username": "nina", "email": "nina@example.org"}, follow=True
    )
    nina = get_user_model().objects.get(username="nina")
    assert not nina.has_usable_password() and nina.email == "nina@example.org"
    assert ProjectMembership.objects.get(project=project, user=nina).role == "annotator"
    link = re.search(r"http://testserver(/accounts/invite/[^\s<]+/)", response.content.decode()).group(1)
    client.logout()
    form_page = client.get(link, follow=True)
    assert "Choose a password" in form_page.content.decode() and "nina" in form_page.content.decode()
    form_url = form_page.redirect_chain[-1][0]
    weak = client.post(form_url, {"new_password1": "12345678", "new_password2": "12345678"})
    assert "This password is too common" in weak.content.decode()
    done = client.post(form_url, {"new_password1": "tram-lines-42x", "new_password2": "tram-lines-42x"}, follow=True)
    assert "Password set. Log in as nina." in done.content.decode()
    logged_in = client.post(reverse("login"), {"username": "nina", "password": "tram-lines-42x"})
    assert logged_in.status_code == 302 and "/accounts/login/" not in logged_in.url
    client.logout()
    assert "This invite link does not work" in client.get(link, follow=True).content.decode()


def test_an_invite_is_refused_for_a_taken_name_and_renewed_for_a_pending_invitee(client, owner, project, annotator):
    client.force_login(owner)
    url = reverse("annotation:project_member_invite", args=[project.pk])
    page = client.post(url, {"username": "ANNA"}, follow=True).content.decode()
    assert "Account not created: a user called &#x27;ANNA&#x27; exists already" in page
    assert "Account not created" in client.post(url, {"username": "no spaces"}, follow=True).content.decode()
    assert "Account not created" in client.post(url, {"username": "ok", "email": "not-an-address"}, follow=True).content.decode()
    client.post(url, {"username": "nina"})
    renewed = client.post(url, {"username": "nina"}, follow=True).content.decode()
    assert "nina is an annotator of this project" in renewed and get_user_model().objects.filter(username="nina").count() == 1


def test_an_invited_name_of_another_project_cannot_be_taken_over(client, owner, project, tram_corpus):
    other = services.project_create(name="Other", corpus=tram_corpus, created_by=owner, overlap=1)
    client.force_login(owner)
    client.post(reverse("annotation:project_member_invite", args=[other.pk]), {"username": "nina"})
    ProjectMembership.objects.filter(project=other).exclude(user=owner).delete()
    page = client.post(reverse("annotation:project_member_invite", args=[project.pk]), {"username": "nina"}, follow=True).content.decode()
    assert "exists already" in page


def test_an_unmet_overlap_is_warned_about_and_counted_in_the_progress(client, owner, tram_corpus, annotator):
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, [annotator], "Double")
    project.overlap = 2
    project.save()
    client.force_login(owner)
    response = client.post(reverse("annotation:project_assign", args=[project.pk]), follow=True)
    page = response.content.decode()
    assert "1 pair still has fewer than 2 annotators: the project has 1 annotator" in page
    assert 'id="overlap-warning"' in page
    for s in simple:
        label_now(project, annotator, pair, s, complex_[0])
    assert re.search(r'id="project-progress">50%<', _detail(client, project))
    client.force_login(annotator)  # the annotator's own progress is theirs alone
    assert re.search(r'id="project-progress">100%<', _detail(client, project))


def test_the_run_list_holds_the_chosen_corpus_runs_only(client, owner, tram_corpus):
    other = Corpus.objects.create(name="Other corpus", language="en", owner=owner)
    mine = AlignmentRun.objects.create(corpus=tram_corpus, status="succeeded")
    theirs = AlignmentRun.objects.create(corpus=other, status="succeeded")
    client.force_login(owner)
    url = reverse("annotation:project_create")
    runs = lambda page: set(map(int, re.findall(r'<option value="(\d+)">#', page)))  # noqa: E731 - a one-line reader
    assert runs(client.get(url).content.decode()) == set()
    assert runs(client.get(url, {"corpus": tram_corpus.pk}).content.decode()) == {mine.pk}
    assert runs(client.get(url, {"corpus": other.pk}).content.decode()) == {theirs.pk}
    refused = client.post(url, {"name": "P", "corpus": tram_corpus.pk, "suggestion_run": theirs.pk, "overlap": 1, "strategy": "documents"})
    assert "that is not a finished alignment run of the chosen corpus" in refused.content.decode()
    assert not AnnotationProject.objects.filter(name="P").exists()
    assert client.get(url, {"corpus": "9" * 40}).status_code == 200


def test_time_per_label_per_annotator_and_for_the_project(client, owner, tram_corpus, annotator, settings):
    settings.ANNOTATION_IDLE_SECONDS = 600
    ben = get_user_model().objects.create_user("ben", password="b-pass-123")
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, [annotator, ben], "Timed")
    for user, seconds in ((annotator, [2.0, 4.0, 30.0, 5000.0]), (ben, [6.0, 86400.0])):
        for i, spent in enumerate(seconds):
            label_now(project, user, pair, simple[i], complex_[0], seconds_spent=spent)
    services.label_undo(project=project, annotator=ben, pair=pair)  # an undo is not a label: it adds no time
    rows = {row.annotator: row for row in members.label_times(project)}
    # 5000 s and 86400 s are idle (a tab left open): counted, but not in the median, mean or hours
    assert (rows["anna"].labels, rows["anna"].idle, rows["anna"].median_seconds, rows["anna"].mean_seconds) == (4, 1, 4.0, 12.0)
    assert (rows["ben"].labels, rows["ben"].idle, rows["ben"].median_seconds) == (2, 1, 6.0)
    assert (rows[None].labels, rows[None].idle, rows[None].median_seconds) == (6, 2, 5.0)
    assert rows[None].total_hours == pytest.approx(42 / 3600)
    times = lambda: re.search(r'id="label-times">(.*?)</section>', _detail(client, project), re.S).group(1)  # noqa: E731 - as runs
    client.force_login(owner)
    assert "<strong>whole project</strong>" in times() and ">ben</td>" in times()
    client.force_login(annotator)  # an annotator sees their own figure only
    assert ">anna</td>" in times() and ">ben</td>" not in times() and "whole project" not in times()


def test_no_link_on_the_project_page_leads_to_a_page_the_member_may_not_open(client, owner, project, annotator, tram_corpus):
    project.suggestion_run = AlignmentRun.objects.create(corpus=tram_corpus, status="succeeded")
    project.save()
    corpus_url = reverse("alignment:corpus_detail", args=[tram_corpus.pk])
    run_url = reverse("alignment:alignment_run_detail", args=[project.suggestion_run_id])
    client.force_login(annotator)  # the corpus is the owner's and not shared: the annotator cannot open it
    sources = re.search(r'id="project-sources">(.*?)</span>', _detail(client, project), re.S).group(1)
    assert f"run #{project.suggestion_run_id}" in sources and "href" not in sources
    assert client.get(corpus_url).status_code == 404 and client.get(run_url).status_code == 404
    client.force_login(owner)
    sources = re.search(r'id="project-sources">(.*?)</span>', _detail(client, project), re.S).group(1)
    assert f'href="{corpus_url}"' in sources and f'href="{run_url}"' in sources

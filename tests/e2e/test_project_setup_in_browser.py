"""Project set-up in Chromium: finding a member by typing, an invite link, and review decisions that swap one row."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from playwright.sync_api import Page, expect
from procrastinate.contrib.django.models import ProcrastinateJob

from annotation import services
from annotation.models import Assignment, LabelEvent, ProjectMembership
from annotation.projects import assigning
from tests.annotation.conftest import tram_project
from tests.e2e.shots import shot
from tests.e2e.worker import work


def _login(page: Page, base: str, username: str, password: str) -> None:
    page.goto(base + "/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page).not_to_have_url(re.compile(r"/accounts/login/"))


@pytest.fixture
def team_project(transactional_db, tram_corpus, owner):
    users = get_user_model().objects
    anna, ben = users.create_user("anna", password="anna-pass-123"), users.create_user("ben", password="ben-pass-123")
    users.create_user("berta", password="berta-pass-123")
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, [anna, ben], "Trams")
    for user, label in ((anna, "aligned"), (ben, "partial")):
        services.label_record(
            project=project,
            annotator=user,
            pair=pair,
            simple_sentence_id=simple[0],
            complex_sentence_id=complex_[0],
            label=label,
            expected_previous=None,
        )
    return project, pair


def test_a_manager_finds_a_member_by_typing_and_invites_an_annotator(page: Page, live_server, team_project) -> None:
    project, _ = team_project
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/")
    expect(page.locator("#id_role")).to_have_value("annotator")
    page.locator("#id_username").press_sequentially("ber", delay=50)
    expect(page.locator("#member-options option")).to_have_count(1)
    expect(page.locator("#member-options option")).to_have_attribute("value", "berta")
    page.locator("#id_username").fill("berta")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".messages")).to_contain_text("berta is now annotator")
    assert ProjectMembership.objects.get(project=project, user__username="berta").role == "annotator"

    page.locator("#id_invite_username").fill("nina")
    page.get_by_role("button", name="Create and get an invite link").click()
    message = page.locator(".messages li").first
    expect(message).to_contain_text("nina is an annotator of this project")
    shot(page, "project-members.png", full_page=True)
    link = re.search(r"https?://\S+/accounts/invite/\S+/", message.inner_text()).group(0)
    page.context.clear_cookies()
    page.goto(link)
    page.get_by_label("New password").fill("tram-lines-42x")
    page.get_by_label("The same again").fill("tram-lines-42x")
    shot(page, "invite-accept.png", full_page=True)
    page.get_by_role("button", name="Set the password").click()
    expect(page.locator(".messages")).to_contain_text("Password set. Log in as nina.")
    _login(page, live_server.url, "nina", "tram-lines-42x")


def test_a_review_decision_swaps_its_row_without_reloading_the_page(page: Page, live_server, team_project) -> None:
    project, pair = team_project
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/review/")
    page.evaluate("window.__notReloaded = true")
    row = page.locator("tr.review-disagreement").first
    expect(row.get_by_role("button", name="not aligned")).to_be_visible()
    row_id = row.get_attribute("id")
    row.get_by_role("button", name="partial", exact=True).click()
    decided = page.locator(f"#{row_id}")
    expect(decided).to_have_class(re.compile("review-adjudicated"))
    expect(page.locator("#review-lead")).to_contain_text("0 of 1 labelled sentence pairs still need a decision")
    assert page.evaluate("window.__notReloaded") is True
    assert LabelEvent.objects.filter(source="adjudication", new_label="partial").count() == 1
    shot(page, "review-decided.png", full_page=True)


def test_an_annotator_finds_their_work_in_my_tasks_and_filters_it(page: Page, live_server, team_project) -> None:
    project, pair = team_project
    _login(page, live_server.url, "anna", "anna-pass-123")
    page.get_by_role("link", name="My tasks").click()
    expect(page.locator("#tasks tbody tr")).to_have_count(1)
    expect(page.locator("#tasks .status")).to_have_text("in progress")
    shot(page, "my-tasks.png", full_page=True)
    page.get_by_role("link", name=re.compile(r"^done")).click()
    expect(page.locator("#tasks tbody")).to_contain_text("No done tasks")
    page.get_by_role("link", name=re.compile(r"^in progress")).click()
    page.get_by_role("link", name="Continue").click()
    expect(page).to_have_url(re.compile(rf"/annotate/projects/{project.pk}/pairs/{pair.pk}/$"))


def test_a_large_project_is_assigned_in_the_background_the_page_says_so_and_it_can_be_stopped(
    page: Page, live_server, transactional_db, tram_corpus, owner, settings
) -> None:
    settings.ASSIGN_INLINE_MAX_PAIRS = 0  # the tram project's one pair is "large" here
    with connection.cursor() as cursor:  # jobs earlier tests left queued (Procrastinate's tables are not flushed)
        cursor.execute("TRUNCATE procrastinate_jobs CASCADE")
    anna = get_user_model().objects.create_user("anna", password="anna-pass-123")
    project = services.project_create(name="Trams", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=anna, role="annotator")
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/")
    page.get_by_role("button", name="Assign pairs to annotators").click()
    expect(page.locator(".messages")).to_contain_text("Assigning the project's pairs in the background.")
    expect(page.locator("#assigning-note")).to_contain_text("0 of 1 assignments so far")
    expect(page.locator("#overlap-warning")).to_have_count(0)  # not "add annotators": they are being given pairs
    shot(page, "project-assign-background.png", full_page=True)
    assert not Assignment.objects.filter(project=project).exists()
    assert ProcrastinateJob.objects.filter(task_name=assigning.ASSIGN_TASK, status="todo").count() == 1
    page.get_by_role("button", name="Stop assigning").click()  # a manager changes their mind: nothing was given out
    expect(page.locator(".messages")).to_contain_text("Stopped giving pairs out: 0 of 1 pairs have an annotator so far.")
    expect(page.locator("#assigning-note")).to_have_count(0)
    assert ProcrastinateJob.objects.filter(task_name=assigning.ASSIGN_TASK, status="todo").count() == 0
    page.get_by_role("button", name="Assign pairs to annotators").click()  # and presses again
    expect(page.locator("#assigning-note")).to_be_visible()
    work(["maintenance"])  # the real worker, until the queue is empty
    expect(page.locator("#assignments")).to_contain_text("anna")  # the note's poll reloaded the page
    expect(page.locator("#assigning-note")).to_have_count(0)

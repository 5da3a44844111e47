"""Forms in Chromium: step 1's paragraph links saved through ParagraphLinksForm, and a service's refusal
shown next to the field it names (a taken project name)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from annotation import services
from annotation.models import AnnotationProject, ParagraphCorrection
from tests.e2e.shots import shot
from tests.e2e.test_project_setup_in_browser import _login


@pytest.fixture
def paragraph_project(transactional_db, tram_corpus, owner):
    anna = get_user_model().objects.create_user("anna", password="anna-pass-123")
    project = services.project_create(name="Trams", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=anna, role="annotator")
    services.assignments_distribute(project=project)
    return project, tram_corpus.pairs.get(), anna


def test_an_annotator_ticks_paragraph_links_and_the_sentences_follow_them(page: Page, live_server, paragraph_project):
    project, pair, anna = paragraph_project
    _login(page, live_server.url, "anna", "anna-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/paragraphs/")
    expect(page.get_by_role("heading", name="Step 1: which paragraphs align?")).to_be_visible()
    boxes = page.locator('#paragraph-form input[name="link"]')
    for index in range(boxes.count()):
        boxes.nth(index).set_checked(boxes.nth(index).get_attribute("value") in ("0:0", "1:1"))
    shot(page, "H6-paragraph-links.png", full_page=True)
    page.get_by_role("button", name="Save and label the sentences").click()
    expect(page.locator(".messages")).to_contain_text("Paragraph alignment saved; the sentences below follow it.")
    assert ParagraphCorrection.objects.get(project=project, annotator=anna).groups == [[[0], [0]], [[1], [1]]]


def test_a_taken_project_name_is_shown_under_the_name_field(page: Page, live_server, paragraph_project, tram_corpus):
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/new/?corpus={tram_corpus.pk}")
    page.get_by_label("Name").fill("Trams")
    page.get_by_role("button", name="Create project").click()
    expect(page.locator("#field-name .errorlist")).to_have_text("a project called 'Trams' exists already")
    shot(page, "H6-project-name-taken.png", full_page=True)
    assert AnnotationProject.objects.count() == 1

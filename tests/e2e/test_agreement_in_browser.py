"""The agreement page in Chromium says the scope of every figure, and its pairwise P/R/F1 is over the items both
annotators labelled (as INCEpTION computes it), next to Cohen's kappa over the same items; the F1 over all items
stays only in its own, labelled column."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from annotation import services
from tests.annotation.conftest import label_now, tram_project
from tests.e2e.shots import shot
from tests.e2e.test_project_setup_in_browser import _login


@pytest.fixture
def uneven_team(transactional_db, tram_corpus, owner):
    """annotator labels four sentence pairs and marks the pair done; annot2 labels two of them and is still working.

    By hand, with annot2 as reference (names sort that way): both labelled items 0 and 1; annot2 links item 0 only,
    annotator links both: TP 1, FP 1, FN 0, F1 2/3. Over all four items annotator's links on the two items annot2 has
    not labelled count against them too: TP 1, FP 3, F1 2/5.
    """
    users = get_user_model().objects
    first, second = users.create_user("annot2", password="annot2-pass-123"), users.create_user("annotator", password="a-pass-123")
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, [first, second], "Uneven")
    for k, label in enumerate(("aligned", "partial", "aligned", "aligned")):
        label_now(project, second, pair, simple[k], complex_[k], label)
    label_now(project, first, pair, simple[0], complex_[0], "aligned")
    label_now(project, first, pair, simple[1], complex_[1], "not_aligned")
    services.assignment_complete(project=project, annotator=second, pair=pair)
    return project


def test_the_pairwise_f1_is_over_items_both_labelled_and_every_scope_is_named(page: Page, live_server, uneven_team) -> None:
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{uneven_team.pk}/agreement/")
    expect(page.locator("#prf-scope")).to_contain_text("two annotators are compared on the items both labelled")
    expect(page.locator("#prf-scope")).to_contain_text("F1 over all items either side labelled")
    row = page.locator('[data-prf="annot2|annotator"]')
    expect(row.locator("[data-items]")).to_have_text("2")
    expect(row.locator("[data-f1]")).to_have_text("0.667")
    expect(row.locator("[data-f1-all]")).to_have_text("0.400 (4 items)")
    expect(page.locator("#prf thead")).to_contain_text("F1 over all items")
    cohen = page.locator("#scope-shown table tbody tr").first
    expect(cohen).to_contain_text("annot2 · annotator")
    expect(cohen.locator("td").nth(5)).to_have_text("2")  # Cohen's kappa over the same two items
    expect(cohen.locator("td").nth(2)).to_have_text("50 %")  # beside it: raw agreement, PABAK, the prevalent label
    expect(cohen.locator("td").nth(3)).to_have_text("0.250")
    expect(page.locator("#scope-shown thead")).to_contain_text("items both labelled")
    expect(page.locator("h2", has_text="Confusion matrix")).to_contain_text("items both labelled")
    shot(page, "agreement-scopes.png", full_page=True)

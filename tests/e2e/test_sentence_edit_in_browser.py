"""Fixing a sentence split on the pair screen in Chromium (issue 35 §4): e opens the dialog on the selected sentence,
a click on a word splits it there (the labels kept on both parts when confirmed), the suggestions are decoded again,
the "Sentence edits" card undoes it, and a merge across paragraphs is not offered."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from alignment.aligning import service as aligning
from alignment.aligning.measures import run_measure
from alignment.models import AlignmentRun, Sentence
from alignment.segmenting.models import SegmentEdit
from annotation.labels import current_labels
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login, _screen_url, annotation_setup  # noqa: F401 - a fixture


def test_a_sentence_is_split_at_a_word_decoded_again_and_the_split_undone(page: Page, live_server, annotation_setup) -> None:
    project, pair, run = annotation_setup
    complex_first = pair.complex_document.sentences.order_by("index").first()
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    page.keyboard.press("j")  # the first simple sentence and its best suggestion
    page.locator(f"#c-{complex_first.pk}").click()
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Saved")

    page.keyboard.press("e")  # the dialog, on the selected simple sentence (the current complex one is the other choice)
    dialog = page.locator("#segment-box")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#segment-sides label")).to_have_count(2)
    dialog.locator("#segment-sides label").nth(1).click()  # the complex sentence: "Honeybees visit ... to collect nectar."
    expect(dialog.locator("#segment-keep")).to_be_visible()
    dialog.get_by_role("button", name="to", exact=True).click()  # the second part starts at "to collect nectar."
    expect(dialog.locator("#segment-preview")).to_contain_text("2: to collect nectar.")
    dialog.get_by_label(re.compile("Keep my labels")).check()
    shot(page, "sentence-split-dialog.png")
    dialog.get_by_role("button", name="Split here").click()

    expect(page.locator(".messages")).to_contain_text("Sentence split. 2 labels carried over.")
    expect(page.locator(".complex-sentence .sent-text").first).to_have_text("Honeybees visit thousands of flowers every day")
    expect(page.locator(".complex-sentence .sent-text").nth(1)).to_have_text("to collect nectar.")
    expect(page.locator("#suggestion-note")).to_contain_text("being decoded again")
    edit = SegmentEdit.objects.get()
    labels = {item: e.new_label for item, e in current_labels(project, edit.by, pair.pk).items() if e.new_label}
    assert set(labels.values()) == {"aligned"} and {complex_id for _, complex_id in labels} == set(edit.after)

    redecode = AlignmentRun.objects.exclude(pk=run.pk).get()  # no worker in this test: the run goes in this process
    assert aligning.alignment_run_execute(run_id=redecode.pk, build_measure=run_measure).status == "succeeded"
    page.reload()
    expect(page.locator("#suggestion-note")).to_have_count(0)
    expect(page.locator("#segment-history")).to_contain_text("split of complex sentence 1 (anna,")
    shot(page, "sentence-split-done.png")

    page.get_by_role("button", name=re.compile("^Undo split of complex sentence 1")).click()
    expect(page.locator(".messages")).to_contain_text("Sentence edit undone.")
    expect(page.locator(".complex-sentence .sent-text").first).to_have_text(complex_first.text)
    assert Sentence.objects.filter(document=pair.complex_document).order_by("index").first().pk == complex_first.pk

    last_of_paragraph = pair.simple_document.sentences.order_by("index")[2]  # "They turn the nectar into honey in the hive."
    page.locator(f"#s-{last_of_paragraph.pk}").click()
    page.keyboard.press("e")
    expect(page.locator("#segment-merge")).to_be_disabled()
    expect(page.locator("#segment-merge-note")).to_contain_text("last sentence of its paragraph")
    page.keyboard.press("Escape")
    expect(page.locator("#segment-box")).to_be_hidden()

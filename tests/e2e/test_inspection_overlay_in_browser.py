"""The researcher's inspection page in Chromium: human labels over the heatmap and the table, the state in the
address across run and measure switches, the heatmap by keyboard, long German words that wrap."""

from __future__ import annotations

import contextlib
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

import alignment.aligning.service as aligning
from alignment.aligning.measures import run_measure
from annotation import services
from tests.annotation.test_gold_overlay import LabelledPair, labelled_pair
from tests.e2e.shots import shot
from tests.e2e.test_csp import _login

MARGIN_LEFT, MARGIN_TOP = 34, 20  # heatmap.js
HUMAN_PURPLE, VERDICT_MAGENTA = (105, 65, 198), (193, 21, 116)
HOLD_POLLS = 1000  # 10 ms apart


def _align(run) -> None:
    aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)


@pytest.fixture
def labelled(transactional_db, owner) -> LabelledPair:
    labelled = labelled_pair(owner, _align)
    services.pair_verify(project=labelled.project, pair=labelled.pair, by=owner)
    return labelled


def _cell_px(page: Page) -> int:
    size = page.evaluate("() => { const d = JSON.parse(document.getElementById('heatmap-data').textContent); return [d.rows, d.cols]; }")
    return max(2, min(44, 600 // max(size)))


def _pixel(page: Page, x: float, y: float) -> tuple[int, int, int]:
    """The canvas pixel at CSS position (x, y), whatever the device pixel ratio."""
    return tuple(
        page.evaluate(
            """([x, y]) => { const c = document.getElementById('heatmap'), r = c.width / c.getBoundingClientRect().width;
                 return Array.from(c.getContext('2d').getImageData(Math.floor(x * r), Math.floor(y * r), 1, 1).data.slice(0, 3)); }""",
            [x, y],
        )
    )


def _near(colour: tuple[int, int, int], expected: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 12 for a, b in zip(colour, expected))


def test_gold_labels_show_on_the_heatmap_and_the_table_with_the_link_the_model_missed(page: Page, live_server, labelled):
    _login(page, live_server.url, "vera", "vera-pass-123")  # a viewer of the project
    page.goto(f"{live_server.url}/pairs/{labelled.pair.pk}/inspect/")
    expect(page.locator("#human-source")).to_contain_text("verified gold of project “Bees gold”")
    expect(page.locator("#count-missed")).to_have_text("1")

    row = page.locator(f"#cand-{labelled.missed.pk}")
    expect(row).to_have_attribute("data-verdict", "model missed")
    expect(row.locator("td.human")).to_contain_text("aligned")
    expect(row.locator(".verdict-tag")).to_have_text("model missed")
    expect(row.locator(".badge").first).to_have_text("not aligned")  # the model's own label stays beside it

    cell = _cell_px(page)
    j, i = labelled.missed.simple_sentence.index, labelled.missed.complex_sentence.index
    x, y = MARGIN_LEFT + i * cell, MARGIN_TOP + j * cell
    assert _near(_pixel(page, x + 3, y + 3), HUMAN_PURPLE)  # the human link's corner triangle
    assert _near(_pixel(page, x + cell - 2, y + cell / 2), VERDICT_MAGENTA)  # the model-disagrees frame
    free_j, free_i = page.evaluate(
        """() => { const d = JSON.parse(document.getElementById('heatmap-data').textContent);
                   for (let j = 0; j < d.rows; j++) for (let i = 0; i < d.cols; i++) if (!d.human[`${j}:${i}`]) return [j, i]; }"""
    )  # a cell nobody labelled and no verdict: no purple corner
    assert not _near(_pixel(page, MARGIN_LEFT + free_i * cell + 3, MARGIN_TOP + free_j * cell + 3), HUMAN_PURPLE)

    page.get_by_label("Humans").select_option("disagrees")
    expect(page).to_have_url(re.compile(r"human=disagrees"))
    expect(page.locator("tr.candidate-row[data-verdict]")).to_have_count(page.locator("tr.candidate-row").count())
    row.locator("td.text").first.click()
    expect(page.locator("#diff-human")).to_contain_text("model missed")
    shot(page, "screenshot-inspect.png", full_page=True)


def test_switching_measure_and_run_keeps_sort_and_filters_and_the_address_reproduces_the_page(page: Page, live_server, labelled):
    older = labelled.run
    newer = aligning.alignment_run_create(
        corpus=labelled.pair.corpus, pairs=[labelled.pair], measures=["jaccard"],
        aligner_config={"measure": "tfidf_cosine", "null_score": 0.3, "paragraph_variant": "none"},
    )  # fmt: skip
    _align(newer)
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/pairs/{labelled.pair.pk}/inspect/?run={older.pk}")
    page.evaluate("window.__sameDocument = true")
    page.get_by_role("link", name=re.compile(r"^Disagreement")).click()  # htmx: the table only
    expect(page).to_have_url(re.compile(r"sort=-disagreement"))
    expect(page.get_by_role("link", name="Disagreement ↓")).to_be_visible()  # the table swapped in: its filters are the new ones
    page.locator("select[name=label]").select_option("predicted")
    expect(page).to_have_url(re.compile(r"label=predicted"))
    page.locator("tr.candidate-row td.text").first.click()
    expect(page).to_have_url(re.compile(r"candidate=\d+"))
    open_pair = parse_qs(urlsplit(page.url).query)["candidate"][0]
    assert page.evaluate("window.__sameDocument") is True

    page.get_by_label("Heatmap measure").select_option("jaccard")
    expect(page).to_have_url(re.compile(r"measure=jaccard"))
    expect(page.locator("#heatmap")).to_be_visible()
    query = parse_qs(urlsplit(page.url).query)
    assert query["measure"] == ["jaccard"] and query["sort"] == ["-disagreement"] and query["label"] == ["predicted"]
    assert query["candidate"] == [open_pair] and query["run"] == [str(older.pk)]
    expect(page.locator("select[name=label]")).to_have_value("predicted")
    expect(page.locator("th a", has_text="Disagreement")).to_contain_text("↓")
    expect(page.locator("#diff h2")).to_contain_text("Candidate: simple #")
    expect(page.locator("#heatmap-meaning")).to_contain_text("Jaccard overlap")  # what the heatmap's numbers are
    spreads = [float(text) for text in page.locator("tr.candidate-row td:last-child").all_inner_texts()]
    assert spreads == sorted(spreads, reverse=True)
    model_labels = page.locator("tr.candidate-row").evaluate_all("(rows) => rows.map((row) => row.querySelector('.badge').textContent)")
    assert model_labels and set(model_labels) <= {"aligned", "partial"}

    page.get_by_label("Run").select_option(str(newer.pk))  # the newer run scored jaccard too, so the measure stays
    expect(page).to_have_url(re.compile(rf"run={newer.pk}"))
    expect(page.locator("#heatmap")).to_be_visible()
    query = parse_qs(urlsplit(page.url).query)
    assert query["run"] == [str(newer.pk)] and query["sort"] == ["-disagreement"] and query["label"] == ["predicted"]
    assert query["measure"] == ["jaccard"] and "candidate" not in query  # candidates belong to one run

    shared = page.url
    other = page.context.new_page()
    other.goto(shared)
    expect(other.get_by_label("Run")).to_have_value(str(newer.pk))
    expect(other.get_by_label("Heatmap measure")).to_have_value("jaccard")
    expect(other.locator("select[name=label]")).to_have_value("predicted")
    expect(other.locator("th a", has_text="Disagreement")).to_contain_text("↓")
    other.close()


def test_a_filter_changed_while_a_sort_is_on_its_way_keeps_both(page: Page, live_server, labelled):
    # The sort's answer is held back until the filter has been changed in the table it is about to replace: before, the
    # filter's request went out with the old sort, the sort's with the old filter, and the last answer undid the other.
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/pairs/{labelled.pair.pk}/inspect/?run={labelled.run.pk}")
    held = []

    def hold_the_first_sort(route):
        if held:
            route.continue_()
        else:
            held.append(route)

    page.route(re.compile(r".*sort=-disagreement.*"), hold_the_first_sort)
    page.get_by_role("link", name=re.compile(r"^Disagreement")).click()  # htmx: the table only, its answer held
    for _ in range(HOLD_POLLS):  # until the sort's request is held (a hang guard, not a timing assertion)
        if held:
            break
        page.wait_for_timeout(10)
    page.locator("select[name=label]").select_option("predicted")
    expect(page).to_have_url(re.compile(r"label=predicted"))
    with contextlib.suppress(PlaywrightError):  # the held sort was replaced by the filter's request: it may be gone
        held[0].continue_()
    expect(page.get_by_role("link", name="Disagreement ↓")).to_be_visible()
    expect(page.locator("select[name=label]")).to_have_value("predicted")
    query = parse_qs(urlsplit(page.url).query)
    assert query["sort"] == ["-disagreement"] and query["label"] == ["predicted"]
    page.wait_for_timeout(300)  # a late answer of the held sort would swap the table again: none comes
    expect(page.locator("select[name=label]")).to_have_value("predicted")
    assert parse_qs(urlsplit(page.url).query)["label"] == ["predicted"]


def test_the_heatmap_works_by_keyboard(page: Page, live_server, labelled):
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/pairs/{labelled.pair.pk}/inspect/")
    page.get_by_label("Heatmap measure").focus()
    canvas = page.locator("#heatmap")
    for _ in range(10):  # Tab from the measure select reaches the heatmap
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "heatmap":
            break
    expect(canvas).to_be_focused()
    assert page.evaluate("getComputedStyle(document.querySelector('.heatmap-scroll')).outlineStyle") == "solid"  # visible focus
    live = page.locator("#heatmap-cursor")
    expect(live).to_contain_text("Simple #1:")  # the cursor starts on the first candidate
    j, i = labelled.missed.simple_sentence.index, labelled.missed.complex_sentence.index
    page.keyboard.press("Home")
    for _ in range(10):
        page.keyboard.press("ArrowUp")
    for _ in range(j):
        page.keyboard.press("ArrowDown")
    for _ in range(i):
        page.keyboard.press("ArrowRight")
    expect(live).to_contain_text(f"Simple #{j + 1}:")
    expect(live).to_contain_text(f"Complex #{i + 1}:")
    expect(live).to_contain_text("Humans: aligned, verified")
    expect(live).to_contain_text("Model vs humans: model missed")
    expect(page.locator("#heatmap-tooltip")).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.locator("#diff h2")).to_contain_text(f"simple #{j + 1} ~ complex #{i + 1}")
    expect(page.locator("#diff-human")).to_contain_text("model missed")
    expect(page.locator(f"#cand-{labelled.missed.pk}")).to_have_class(re.compile(r"\bselected\b"))
    expect(page).to_have_url(re.compile(rf"candidate={labelled.missed.pk}"))
    expect(canvas).to_be_focused()  # the diff came in beside it; the cursor stays where it was
    shot(page, "inspect-keyboard.png")


GERMAN_ADV = (
    "Die Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichenherstellungsbetriebsleitung tagte am Montag in Wien.\n"
    "Sie beriet über neue Fahrpläne für den Sommer.\n"
)
GERMAN_ELE = (
    "Die Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichenherstellungsbetriebsleitung traf sich.\nSie sprach über Fahrpläne.\n"
)


def test_long_german_compounds_wrap_in_the_diff_and_the_table(page: Page, live_server, transactional_db, owner):
    labelled = labelled_pair(owner, _align, corpus_name="Wien", adv=GERMAN_ADV, ele=GERMAN_ELE, language="de")
    first = labelled.pair.candidates.order_by("simple_sentence__index", "complex_sentence__index").first()
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/pairs/{labelled.pair.pk}/inspect/?candidate={first.pk}")
    for side in ("#diff-complex", "#diff-simple"):
        overflow = page.evaluate(f"() => {{ const e = document.querySelector('{side}'); return e.scrollWidth - e.clientWidth; }}")
        assert overflow <= 1, f"{side} is {overflow}px wider than its panel"
    diff_box = page.locator("#diff").bounding_box()
    assert diff_box["x"] + diff_box["width"] <= 1280
    cell_widths = page.evaluate("() => Array.from(document.querySelectorAll('td.text')).map((td) => td.getBoundingClientRect().width)")
    assert max(cell_widths) <= 22 * 15 + 20  # max-width 22rem (15 px) and its padding: the compound wrapped
    shot(page, "inspect-german-compound.png", full_page=True)

"""The annotator's keyboard flow in Chromium: j a accepts every suggestion (keys counted), the jump list
links any complex sentence, and s / f / c skip, flag and comment on the pair, all stored as events."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

import alignment.aligning.service as aligning
from alignment.aligning.measures import run_measure
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun, CandidateAlignment, DocumentPair
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.models import Assignment, ItemEvent, LabelEvent
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login, _screen_url

# Twenty sentences on twenty different subjects, in four paragraphs, and a simpler version of each.
COMPLEX = [
    [
        "The volcano erupted violently, covering the surrounding villages with thick grey ash.",
        "Farmers in the valley lost most of their rice harvest to the sudden flood.",
        "The orchestra rehearsed the symphony for three weeks before the premiere.",
        "Astronomers discovered a comet orbiting far beyond the planet Neptune.",
        "The bakery on the corner sells fresh croissants every morning at dawn.",
    ],
    [
        "A rare white tiger was born at the city zoo last Thursday.",
        "Engineers designed the suspension bridge to withstand powerful earthquakes.",
        "The marathon runner collapsed from exhaustion just before the finish line.",
        "Local librarians organised a poetry contest for teenagers in the spring.",
        "The chess champion defended her title against a young challenger from Norway.",
    ],
    [
        "Heavy snowfall closed the mountain pass and stranded hundreds of skiers.",
        "The museum unveiled a restored medieval tapestry depicting a royal hunt.",
        "Scientists trained dolphins to recognise symbols on an underwater screen.",
        "The government announced new taxes on sugary drinks and sweets.",
        "A fisherman rescued two kayakers after their boat capsized near the lighthouse.",
    ],
    [
        "The startup built a robot that folds laundry in under a minute.",
        "Archaeologists unearthed Roman coins beneath a supermarket car park.",
        "Wildfires destroyed thousands of acres of pine forest during the drought.",
        "The violinist played a concerto on a violin made three centuries ago.",
        "Parents protested against the closure of the village primary school.",
    ],
]
SIMPLE = [
    [
        "The volcano erupted and covered villages with grey ash.",
        "A flood destroyed the rice harvest of the farmers.",
        "The orchestra rehearsed the symphony for weeks.",
        "Astronomers found a comet beyond Neptune.",
        "The bakery sells fresh croissants every morning.",
    ],
    [
        "A white tiger was born at the zoo.",
        "Engineers made the bridge strong against earthquakes.",
        "The marathon runner collapsed before the finish line.",
        "Librarians organised a poetry contest for teenagers.",
        "The chess champion kept her title against a challenger.",
    ],
    [
        "Snowfall closed the mountain pass and stranded skiers.",
        "The museum showed a medieval tapestry of a royal hunt.",
        "Scientists trained dolphins to recognise symbols.",
        "The government announced taxes on sugary drinks.",
        "A fisherman rescued two kayakers near the lighthouse.",
    ],
    [
        "The startup built a robot that folds laundry.",
        "Archaeologists found Roman coins under a car park.",
        "Wildfires destroyed pine forest in the drought.",
        "The violinist played a concerto on an old violin.",
        "Parents protested against closing the village school.",
    ],
]


def _presplit(paragraphs: list[list[str]]) -> bytes:
    return ("\n\n".join("\n".join(sentences) for sentences in paragraphs) + "\n").encode()


@pytest.fixture
def twenty_sentence_pair(transactional_db, owner, monkeypatch):
    """A project over one 20-simple-sentence pair aligned by a run with predictions, assigned to "anna"."""
    corpus, _ = corpus_get_or_create(name="News", language="en", owner=owner)
    files = [("News-adv.txt", _presplit(COMPLEX)), ("News-ele.txt", _presplit(SIMPLE))]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # the run executes in-process below
    run = aligning.alignment_run_create(
        corpus=corpus,
        aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "newsela"},
        measures=["tfidf_cosine", "jaccard"],
    )
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    annotator = get_user_model().objects.create_user("anna", password="anna-pass-123")
    project = services.project_create(name="News gold", corpus=corpus, created_by=owner, overlap=1, suggestion_run=run)
    services.membership_set(project=project, user=annotator, role="annotator")
    services.assignments_distribute(project=project)
    return project, DocumentPair.objects.get(corpus=corpus), run


@pytest.fixture
def two_pairs(transactional_db, owner, monkeypatch):
    """Two 20-sentence pairs ("News" and "Later", the same sentences) aligned by one run, both assigned to "anna"."""
    corpus, _ = corpus_get_or_create(name="News", language="en", owner=owner)
    files = [(f"{name}-{level}.txt", _presplit(text)) for name in ("News", "Later") for level, text in (("adv", COMPLEX), ("ele", SIMPLE))]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # the run executes in-process below
    run = aligning.alignment_run_create(
        corpus=corpus,
        aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "newsela"},
        measures=["tfidf_cosine", "jaccard"],
    )
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    annotator = get_user_model().objects.create_user("anna", password="anna-pass-123")
    project = services.project_create(name="News gold", corpus=corpus, created_by=owner, overlap=1, suggestion_run=run)
    services.membership_set(project=project, user=annotator, role="annotator")
    services.assignments_distribute(project=project)
    return project, list(DocumentPair.objects.filter(corpus=corpus).order_by("pk")), run


def _best_suggestions(run, pair) -> dict[int, int]:
    """simple sentence id -> the complex sentence j focuses (best-scored aligned/partial candidate)."""
    best: dict[int, int] = {}
    for candidate in CandidateAlignment.objects.filter(run=run, pair=pair, label__in=["aligned", "partial"]).order_by("-score"):
        best.setdefault(candidate.simple_sentence_id, candidate.complex_sentence_id)
    return best


def test_a_whole_pair_labelled_finished_and_the_next_pair_started_with_keys_only_costs_at_most_2_1_keys_a_decision(
    page: Page, live_server, two_pairs
):
    project, pairs, run = two_pairs
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_label("Username").fill("anna")
    page.get_by_label("Password").fill("anna-pass-123")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/annotate/tasks/$"))  # an annotator lands on My tasks
    page.locator("#tasks").get_by_role("link", name="Start", exact=True).first.click()
    expect(page).to_have_url(re.compile(r"/pairs/\d+/$"))
    first = next(pair for pair in pairs if page.url.endswith(f"/pairs/{pair.pk}/"))
    second = next(pair for pair in pairs if pair != first)
    simple_ids = list(first.simple_document.sentences.order_by("index").values_list("pk", flat=True))
    best = _best_suggestions(run, first)
    assert len(simple_ids) == 20 and set(best) == set(simple_ids), "the aligner suggests a pair for every simple sentence"
    expect(page.locator("#annotate[data-ready]")).to_be_attached()  # the keys are bound

    keys: list[str] = []

    def press(key: str) -> None:
        page.keyboard.press(key)
        keys.append(key)

    for _ in simple_ids:
        press("j")
        press("a")
    expect(page.locator("#progress-count")).to_have_text("20 / 20", timeout=20_000)
    press("d")  # every sentence labelled: done at once, and on to the next pair
    expect(page).to_have_url(re.compile(rf"/pairs/{second.pk}/$"), timeout=20_000)
    expect(page.locator("#annotate[data-ready]")).to_be_attached()
    press("j")
    press("a")
    expect(page.locator("#progress-count")).to_have_text("1 / 20")
    expect(page.locator("#pending")).to_be_hidden()

    decisions = len(simple_ids) + 1  # the first pair's labels and the next pair's first label; finishing is counted in the keys
    assert len(keys) / decisions <= 2.1, f"{len(keys)} keys for {decisions} decisions"
    assert len(keys) == 43 and set(keys) == {"j", "a", "d"}  # no mouse, no Tab
    stored = {(e.simple_sentence_id, e.complex_sentence_id): e.new_label for e in LabelEvent.objects.filter(project=project, pair=first)}
    assert stored == {(simple_id, best[simple_id]): "aligned" for simple_id in simple_ids}
    assert Assignment.objects.get(project=project, pair=first).completed_at is not None
    assert LabelEvent.objects.filter(project=project, pair=second, new_label="aligned").count() == 1
    shot(page, "annotate_next_pair.png", full_page=True)

    page.keyboard.press("d")  # 19 sentences without a label: asked first
    expect(page.locator("#finish-box")).to_be_visible()
    expect(page.locator("#finish-left")).to_have_text("19 of 20 simple sentences have no label of yours")
    page.keyboard.press("Escape")
    expect(page.locator("#finish-box")).to_be_hidden()
    assert Assignment.objects.get(project=project, pair=second).completed_at is None
    page.keyboard.press("d")
    page.keyboard.press("Enter")  # the last open pair: My tasks says so, and lists what is done
    expect(page).to_have_url(re.compile(r"/annotate/tasks/$"))
    expect(page.locator(".messages")).to_contain_text("That was your last open pair: all 2 pairs assigned to you are marked done.")
    expect(page.locator("#tasks .status")).to_have_text(["done", "done"])


def test_jump_list_links_any_complex_sentence_and_s_f_c_are_stored_as_item_events(page: Page, live_server, twenty_sentence_pair):
    project, pair, run = twenty_sentence_pair
    simple = list(pair.simple_document.sentences.order_by("index"))
    complex_ = list(pair.complex_document.sentences.order_by("index"))
    target = complex_[17]  # "Wildfires destroyed thousands of acres…": nowhere near the violinist's candidates
    proposed = set(CandidateAlignment.objects.filter(run=run, simple_sentence=simple[18]).values_list("complex_sentence_id", flat=True))
    assert target.pk not in proposed
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))

    page.keyboard.press("g")  # nothing selected yet: a hint, no list
    expect(page.locator("#save-status")).to_contain_text("Select a simple sentence first")
    expect(page.locator("#jump")).to_be_hidden()
    for _ in range(19):
        page.keyboard.press("j")
    expect(page.locator(f"#s-{simple[18].pk}")).to_have_class(re.compile(r"\bselected\b"))
    page.keyboard.press("g")
    expect(page.locator("#jump")).to_be_visible()
    expect(page.locator("#jump-filter")).to_be_focused()
    expect(page.locator("#jump-list .jump-item")).to_have_count(20)
    page.keyboard.type("pine forest")
    expect(page.locator("#jump-list .jump-item")).to_have_count(1)
    expect(page.locator("#jump-list .jump-item.active")).to_contain_text("Wildfires destroyed")
    shot(page, "annotate_jump_list.png")
    page.keyboard.press("Enter")
    expect(page.locator("#jump")).to_be_hidden()
    expect(page.locator(f"#c-{target.pk}")).to_have_class(re.compile(r"\bcurrent\b"))
    expect(page.locator("#current-pair")).to_contain_text("not proposed by the aligner")
    page.keyboard.press("n")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    assert LabelEvent.objects.get(simple_sentence=simple[18], complex_sentence=target).new_label == "not_aligned"

    page.keyboard.press("g")  # by number: "4" puts complex #4 first
    page.keyboard.type("4")
    expect(page.locator("#jump-list .jump-item.active .sent-no")).to_have_text("4")
    page.keyboard.press("Escape")
    expect(page.locator("#jump")).to_be_hidden()

    page.keyboard.press("f")
    expect(page.locator("#flag-mark")).to_be_visible()
    page.keyboard.press("c")
    expect(page.locator("#comment-text")).to_be_focused()
    page.keyboard.type("Simple #19 drops the age of the violin.")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#comments")).to_contain_text("Simple #19 drops the age of the violin.")
    expect(page.locator("#save-status")).to_contain_text("Saved ✓ comment")
    page.keyboard.press("?")
    expect(page.locator("#help")).to_contain_text("jump list")
    page.keyboard.press("Escape")
    page.reload()
    expect(page.locator("#flag-mark")).to_be_visible()  # stored, not only shown
    expect(page.locator("#comments")).to_contain_text("drops the age of the violin")
    page.keyboard.press("s")  # the annotator's only pair: skipping goes back to the project page
    expect(page).to_have_url(re.compile(rf"/annotate/projects/{project.pk}/$"))
    assert list(ItemEvent.objects.filter(project=project, pair=pair).values_list("kind", "text")) == [
        ("flag", ""),
        ("comment", "Simple #19 drops the age of the violin."),
        ("skip", ""),
    ]

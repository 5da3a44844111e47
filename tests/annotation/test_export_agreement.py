"""The export card's streaming statistics equal what the whole-project computations give.

The card no longer keeps every rating (agreement) or every sentence digest (unique sentences):
:class:`AgreementCounts` keeps running sums and PostgreSQL counts the sentences. These tests
compare both with the computations they replace: :func:`annotation.adjudication.agreement.agreement_report`
over every rating, and a Python set of the exported sentence texts.
"""

from __future__ import annotations

import random

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from alignment.models import DocumentPair
from annotation import services
from annotation.adjudication.agreement import LABELS, SCOPE_SHOWN, AgreementReport, agreement_report, pairwise_alignment_prf
from annotation.export import service as export
from annotation.export.agreement_counts import AgreementCounts
from annotation.export.card import UniqueSentences
from annotation.export.selection import candidate_pair_ids, pair_exports
from annotation.models import Assignment
from tests.annotation.gold_set import build_gold_project


def assert_same_report(got: AgreementReport, expected: AgreementReport) -> None:
    assert got.scope == expected.scope and got.annotators == expected.annotators
    assert got.items == expected.items
    assert got.cohen.keys() == expected.cohen.keys()
    for pair, value in expected.cohen.items():
        assert (got.cohen[pair] is None) == (value is None), pair
        if value is not None:
            assert got.cohen[pair] == pytest.approx(value, abs=1e-9), pair
    assert got.cohen_undefined == expected.cohen_undefined and got.cohen_items == expected.cohen_items
    assert got.confusion_matrices == expected.confusion_matrices and got.label_counts == expected.label_counts
    assert (got.fleiss is None) == (expected.fleiss is None)
    if expected.fleiss is not None:
        assert got.fleiss == pytest.approx(expected.fleiss, abs=1e-9)
    assert (got.fleiss_undefined, got.fleiss_items, got.fleiss_annotators) == (
        expected.fleiss_undefined, expected.fleiss_items, expected.fleiss_annotators,
    )  # fmt: skip
    assert (got.krippendorff_alpha is None) == (expected.krippendorff_alpha is None)
    if expected.krippendorff_alpha is not None:
        assert got.krippendorff_alpha == pytest.approx(expected.krippendorff_alpha, abs=1e-9)
    assert got.krippendorff_undefined == expected.krippendorff_undefined


def streamed(ratings: dict[str, dict], items: list) -> AgreementReport:
    counts = AgreementCounts()
    for item in items:
        counts.add(item, {name: labels.get(item) for name, labels in ratings.items()})
    return counts.report(scope=SCOPE_SHOWN)


@pytest.mark.slow
def test_running_counts_equal_the_agreement_report_on_random_ratings() -> None:
    rng = random.Random(7)
    defined = {"cohen": 0, "fleiss": 0, "alpha": 0}
    for _ in range(300):
        names = [f"a{k}" for k in range(rng.randint(1, 5))]
        labels = rng.choice([LABELS, LABELS[:2], LABELS[2:]])  # one label only: the undefined cases
        items = [(rng.randint(0, 10**6), k) for k in range(rng.randint(0, 40))]
        missing = rng.choice([0.0, 0.2, 0.6])
        ratings: dict[str, dict] = {}
        for item in items:
            for name in names:
                if rng.random() >= missing:
                    ratings.setdefault(name, {})[item] = rng.choice(labels)
        expected = agreement_report(ratings, scope=SCOPE_SHOWN)
        assert_same_report(streamed(ratings, items), expected)
        defined["cohen"] += sum(value is not None for value in expected.cohen.values())
        defined["fleiss"] += expected.fleiss is not None
        defined["alpha"] += expected.krippendorff_alpha is not None
    assert min(defined.values()) > 20  # the comparison covered real values, not only undefined ones


def test_running_counts_match_a_hand_checked_example_and_refuse_unknown_labels() -> None:
    ratings = {
        "ann": {1: "aligned", 2: "aligned", 3: "partial", 4: "not_aligned", 5: "aligned"},
        "bob": {1: "aligned", 2: "partial", 3: "partial", 4: "not_aligned"},
        "cat": {1: "aligned", 2: "aligned", 3: "not_aligned", 4: "not_aligned", 5: "partial"},
    }
    report = streamed(ratings, [1, 2, 3, 4, 5])
    assert_same_report(report, agreement_report(ratings, scope=SCOPE_SHOWN))
    assert report.items == 5 and report.fleiss_items == 4 and report.cohen_items[("ann", "bob")] == 4
    assert report.confusion("bob", "ann") == [[1, 0, 0], [1, 1, 0], [0, 0, 1]]
    # Coincidences by hand: aligned-aligned 4, partial-partial 1, not-not 3, aligned-partial 2 + 2, partial-not 1 + 1;
    # n = (6, 4, 4), so alpha = 1 - 6 / (2 * (24 + 24 + 16) / 13) = 1 - 78 / 128.
    assert report.krippendorff_alpha == pytest.approx(1 - 78 / 128, abs=1e-12)
    counts = AgreementCounts()
    with pytest.raises(ValueError, match=r"annotator 'ann' gave item \(1, 2\) the unknown label 'yes'"):
        counts.add((1, 2), {"ann": "yes"})
    assert counts.annotators == ()


@pytest.fixture
def team_gold(owner):
    """The six verified gold pairs of gina, plus hugo and iris who labelled some of them, disagreeing now and then."""
    project, _ = build_gold_project(owner)
    users = get_user_model().objects
    hugo, iris = users.create_user("hugo", password="hugo-pass-123"), users.create_user("iris", password="iris-pass-123")
    pairs = list(DocumentPair.objects.filter(corpus=project.corpus).order_by("pk"))
    for user, labelled in ((hugo, pairs[:4]), (iris, pairs[1:3])):
        services.membership_set(project=project, user=user, role="annotator")
        for pair in labelled:
            Assignment.objects.create(project=project, pair=pair, annotator=user)
    adjudicated: dict[tuple[int, int], int] = {}
    for number, pair in enumerate(pairs[:4]):
        simple = list(pair.simple_document.sentences.order_by("index"))
        complex_ = list(pair.complex_document.sentences.order_by("index"))
        for k in range(4):
            for user, flip in ((hugo, (k + number) % 3 == 0), (iris, k == number)):
                if user is iris and pair not in pairs[1:3]:
                    continue
                label = ("partial" if user is hugo else "not_aligned") if flip else "aligned"
                services.label_record(
                    project=project, annotator=user, pair=pair, simple_sentence_id=simple[k].pk,
                    complex_sentence_id=complex_[k].pk, label=label, expected_previous=None,
                )  # fmt: skip
                if flip:  # a reviewer settles it, so the verified pair still exports the item, with everyone's labels
                    adjudicated[(pair.pk, k)] = services.adjudicate(
                        project=project, reviewer=owner, pair=pair, simple_sentence_id=simple[k].pk,
                        complex_sentence_id=complex_[k].pk, label="aligned", expected_previous=adjudicated.get((pair.pk, k)),
                    ).pk  # fmt: skip
        if number == 1:
            services.assignment_complete(project=project, annotator=iris, pair=pair)  # her unlabelled items: not aligned
    return project


def test_export_card_figures_equal_the_whole_project_computation(team_gold, owner, monkeypatch) -> None:
    project = team_gold
    monkeypatch.setattr(UniqueSentences, "FLUSH_ROWS", 3)  # many inserts, the same sentence in several of them
    ratings: dict[str, dict] = {}
    simple_texts, complex_texts = set(), set()
    for _, exported in pair_exports(project, candidate_pair_ids(project, include_majority=False), include_majority=False):
        for item in exported.items if exported else []:
            simple_texts.add(item.simple.text)
            complex_texts.add(item.complex.text)
            for annotator, label in item.labels.items():
                if label:
                    ratings.setdefault(annotator, {})[(item.simple.pk, item.complex.pk)] = label
    expected = agreement_report(ratings, scope=SCOPE_SHOWN)
    assert expected.annotators == ("gina", "hugo", "iris")
    assert expected.fleiss is not None and expected.krippendorff_alpha is not None and expected.cohen[("gina", "hugo")] is not None
    assert expected.krippendorff_alpha < 1 and expected.fleiss_items > 0  # disagreements, and items all three rated

    job = export.export_job_execute(job_id=export.export_job_create(project=project, created_by=owner, formats="csv").pk)
    card = (job.directory / "README.md").read_text()
    assert f"- annotators: 3; items with two or more labels: {expected.items}" in card
    assert f"- Fleiss' kappa: {expected.fleiss:.3f} over {expected.fleiss_items} items" in card
    assert f"- Krippendorff's alpha (nominal): {expected.krippendorff_alpha:.3f}" in card
    assert "Scope: the exported sentence pairs (not the agreement page's shown candidates" in card
    pairwise = pairwise_alignment_prf(ratings)  # INCEpTION's scope: the items both labelled, as Cohen's kappa
    for (a, b), value in expected.cohen.items():
        shown = f"{value:.3f}" if value is not None else expected.cohen_undefined[(a, b)]
        f1 = f"{pairwise[(a, b)].f1:.3f}"
        assert pairwise[(a, b)].items == expected.cohen_items[(a, b)]
        assert (
            f"- {a} / {b}: Cohen's kappa {shown}, alignment F1 (Task 1) {f1} over the {expected.cohen_items[(a, b)]} items both labelled"
        ) in card
    simple_tokens = sum(len(text.split()) for text in simple_texts) / len(simple_texts)
    complex_tokens = sum(len(text.split()) for text in complex_texts) / len(complex_texts)
    assert f"- unique simple sentences: {len(simple_texts)}, average length {simple_tokens:.1f} tokens" in card
    assert f"- unique complex sentences: {len(complex_texts)}, average length {complex_tokens:.1f} tokens" in card
    assert sentence_tables() == 0  # the temporary table of sentence digests is gone


def sentence_tables() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'export_sentences_%%'")
        return cursor.fetchone()[0]


def test_a_failing_export_drops_its_sentence_table(team_gold, owner, monkeypatch) -> None:
    from annotation.export.writers import CsvWriter

    monkeypatch.setattr(UniqueSentences, "FLUSH_ROWS", 3)  # the table exists before the failure
    created = []
    original = UniqueSentences.flush

    def flush(self) -> None:
        original(self)
        created.append(self.table)

    def failing(self, exported, split):
        if len(created) > 2:
            raise OSError("No space left on device")
        return original_write(self, exported, split)

    original_write = CsvWriter.write_pair
    monkeypatch.setattr(UniqueSentences, "flush", flush)
    monkeypatch.setattr(CsvWriter, "write_pair", failing)
    job = export.export_job_create(project=team_gold, created_by=owner, formats="csv")
    with pytest.raises(OSError, match="No space left"):
        export.export_job_execute(job_id=job.pk)
    assert created[0] is not None and sentence_tables() == 0


def test_an_export_leaves_sacrebleus_tokenizer_caches_empty(team_gold, owner) -> None:
    """sacrebleu caches 2**16 tokenized sentences per tokenizer; an export empties them after each pair."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    Tokenizer13a()("Cached before the export.")
    assert Tokenizer13a.__call__.cache_info().currsize > 0
    job = export.export_job_execute(job_id=export.export_job_create(project=team_gold, created_by=owner, formats="simplification").pk)
    assert job.status == job.Status.SUCCEEDED and Tokenizer13a.__call__.cache_info().currsize == 0

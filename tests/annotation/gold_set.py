"""A small gold set written for the retraining tests: six articles, each a complex and a simple version.

Simple sentence k paraphrases complex sentence k with few shared words, so the untrained
Jaccard aligner (null threshold 0.45) links little and a trained one can learn to link more.
``build_gold_project`` imports them, aligns them with Jaccard, and labels and verifies every
pair as the gold says (suggestions outside the gold are labelled not aligned).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model

from alignment.aligning import service as aligning
from alignment.aligning.measures import run_measure
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun, CandidateAlignment, DocumentPair
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.models import AnnotationProject

ARTICLES = {
    "Bridge": (
        [
            "Engineers closed the old stone bridge across the river for urgent repairs.",
            "Heavy trucks had damaged the arches over many decades of traffic.",
            "The repairs will cost the regional government about two million euros.",
            "Cyclists may still cross the bridge on a narrow temporary path.",
        ],
        ["Workers shut an old bridge.", "Lorries hurt the arches.", "Fixing it costs millions.", "Bikes still get over on a path."],
    ),
    "Volcano": (
        [
            "The volcano on the northern island erupted again early on Sunday morning.",
            "Thick clouds of ash forced the airport to cancel dozens of flights.",
            "Scientists had warned for weeks that pressure inside the mountain was rising.",
            "Nearby villages were evacuated as a precaution before the lava flowed.",
        ],
        [
            "A volcano blew up once more.",
            "Ash stopped many planes.",
            "Experts had said so for weeks.",
            "People left villages before lava came.",
        ],
    ),
    "Library": (
        [
            "The city library reopened its doors after a renovation lasting two years.",
            "Visitors can now borrow electronic books with their library card at home.",
            "A new reading room on the top floor offers a view over the old harbour.",
            "Opening hours were extended until ten in the evening on weekdays.",
        ],
        [
            "The library opened again after two years.",
            "People can borrow e-books at home.",
            "A new reading room has a view of the harbour.",
            "It is open until ten on weekdays.",
        ],
    ),
    "Marathon": (
        [
            "More than twenty thousand runners took part in the spring marathon this year.",
            "The winner crossed the finish line in just over two hours and six minutes.",
            "Volunteers handed out water and fruit at stations along the whole route.",
            "Several streets in the centre remained closed to cars until late afternoon.",
        ],
        [
            "Twenty thousand runners ran the marathon.",
            "The winner finished in about two hours.",
            "Volunteers gave out water and fruit.",
            "Some streets were closed to cars.",
        ],
    ),
    "Bakery": (
        [
            "The family bakery on the market square celebrated its hundredth anniversary.",
            "Its bread is still baked in a wood oven that the founder built himself.",
            "The current owner is the great-grandson of the baker who opened the shop.",
            "Customers queued in the rain to buy the special anniversary cake.",
        ],
        [
            "The bakery is one hundred years old.",
            "The bread is baked in a wood oven.",
            "The owner is the founder's great-grandson.",
            "People queued in the rain for cake.",
        ],
    ),
    "Garden": (
        [
            "Pupils at the primary school planted a vegetable garden behind the gym.",
            "They grow tomatoes, beans and pumpkins and water the beds every morning.",
            "The harvest is cooked in the school kitchen and served at lunch.",
            "Teachers say the children now eat far more vegetables than before.",
        ],
        [
            "Kids made a garden at school.",
            "Tomatoes and beans grow there.",
            "Cooks use what grows for lunch.",
            "Children like vegetables more now.",
        ],
    ),
}
RUN_CONFIG = {"measure": "jaccard", "paragraph_variant": "none"}


def import_articles(owner, name: str = "Gold articles"):
    corpus, _ = corpus_get_or_create(name=name, language="en", owner=owner)
    files = []
    for title, (complex_sentences, simple_sentences) in ARTICLES.items():
        files.append((f"{title}-adv.txt", ("\n".join(complex_sentences) + "\n").encode()))
        files.append((f"{title}-ele.txt", ("\n".join(simple_sentences) + "\n").encode()))
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit"))
    assert not report.errors, report.errors
    return corpus


def align_now(corpus, pairs=None) -> AlignmentRun:
    run = aligning.alignment_run_create(corpus=corpus, pairs=pairs, aligner_config=RUN_CONFIG, measures=["jaccard", "tfidf_cosine"])
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    return run


def label_pair_as_gold(project: AnnotationProject, annotator, pair: DocumentPair) -> None:
    """Link simple k to complex k; every other suggestion of the project's run is labelled not aligned."""
    simple = list(pair.simple_document.sentences.order_by("index"))
    complex_ = list(pair.complex_document.sentences.order_by("index"))
    gold = {(s.pk, c.pk) for s, c in zip(simple, complex_)}
    suggested = set(
        CandidateAlignment.objects.filter(run=project.suggestion_run, pair=pair).values_list("simple_sentence_id", "complex_sentence_id")
    )
    for simple_id, complex_id in sorted(gold | suggested):
        label = "aligned" if (simple_id, complex_id) in gold else "not_aligned"
        services.label_record(
            project=project, annotator=annotator, pair=pair, simple_sentence_id=simple_id, complex_sentence_id=complex_id,
            label=label, expected_previous=None,
        )  # fmt: skip
    services.assignment_complete(project=project, annotator=annotator, pair=pair)


def build_gold_project(owner, *, labelled: int | None = None, verify: bool = True) -> tuple[AnnotationProject, object]:
    """Import, align, and label (and verify) the first ``labelled`` pairs (default: all); returns (project, annotator)."""
    corpus = import_articles(owner)
    run = align_now(corpus)
    annotator = get_user_model().objects.create_user("gina", password="gina-pass-123")
    project = services.project_create(name="Gold retraining", corpus=corpus, created_by=owner, overlap=1, suggestion_run=run)
    services.membership_set(project=project, user=owner, role="manager")
    services.membership_set(project=project, user=annotator, role="annotator")
    services.assignments_distribute(project=project)
    pairs = list(DocumentPair.objects.filter(corpus=corpus).order_by("pk"))
    for pair in pairs[: len(pairs) if labelled is None else labelled]:
        label_pair_as_gold(project, annotator, pair)
        if verify:
            services.pair_verify(project=project, pair=pair, by=owner)
    return project, annotator

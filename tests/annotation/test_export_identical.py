"""Exports of a fixed project state come out byte for byte as they did before the export was made faster.

The project below has every kind of label an export sees: verified pairs (one with a note), a
verification that was withdrawn, adjudications, majorities and disagreements, an undo and a
relabel, imported gold (relabelled), a flagged annotator left out, an annotator still working,
n:m groups, a copied sentence, two paragraphs per document and the aligner's suggestions. Its
primary keys (sequences reset) and timestamps (a clock that ticks one second a call) are fixed,
so the files are too. GOLDEN holds the listing :func:`export_write` returned for it with the code
before issue 17's rewrite (the per-pair queries), for two sets of options; the dataset card lists
every data file's SHA-256 and the zip holds them all, so one listing pins every byte. Recomputed once
since, on purpose: the card names each agreement figure's scope and the suggestions behind the labels,
and the JSONL gives each annotation its ``suggestion`` and takes ``aligner`` from the run the labels were
made with (null for imported and adjudication-only items, where nothing was suggesting); every other
byte of the CSV, Parquet, TSV and simplification files is unchanged.

If an intended change of the output breaks this test, recompute GOLDEN (print the listing) and
say in the commit what changed in the files. A new pyarrow may also change Parquet's bytes.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from alignment.models import DocumentPair
from annotation import services
from annotation.adjudication.review import pair_item_states
from annotation.export.selection import _item_labels, _Page, candidate_pair_ids, pair_exports
from annotation.export.service import export_options_clean, export_write
from annotation.labels import current_labels
from annotation.models import AnnotationProject, GoldAnswer, GoldItem, LabelEvent
from tests.annotation.gold_set import align_now

ARTICLES = {
    "Harbour": (
        [
            "The old harbour was rebuilt after the storm of last winter.",
            "Fishing boats returned in March.",
            "",
            "The new quay is two hundred metres long and made of concrete.",
            "It cost the town four million euros.",
            "Tourists now arrive by ferry every morning.",
        ],
        [
            "The harbour was rebuilt.",
            "Fishing boats returned in March.",
            "",
            "The new quay is long.",
            "It is made of concrete.",
            "It cost four million euros.",
        ],
    ),
    "Forest": (
        [
            "A fire burned part of the forest near the lake in July.",
            "Firefighters worked for three days to stop it.",
            "",
            "Nobody was hurt, but many trees were lost.",
            "The council will plant ten thousand new trees.",
        ],
        [
            "A forest fire burned in July.",
            "Firefighters stopped it after three days.",
            "",
            "Nobody was hurt.",
            "New trees will be planted.",
        ],
    ),
    "School": (
        [
            "The village school will close at the end of the year.",
            "Only twelve pupils are still enrolled.",
            "",
            "Parents protested in front of the town hall.",
            "Children will take a bus to the next town.",
        ],
        ["The village school will close.", "Twelve pupils are left.", "", "Parents protested.", "Children will go by bus."],
    ),
    "Museum": (
        ["The museum opened a hall of old maps.", "Some maps are five hundred years old.", "", "Entry is free on Sundays."],
        ["The museum has a hall of old maps.", "Some maps are very old.", "", "Entry is free on Sundays."],
    ),
    "Station": (
        ["The railway station gets a new roof.", "Work starts in May."],
        ["The station gets a roof.", "Work starts in May."],
    ),
}

ALL_FORMATS: dict = {}
FILTERED = {
    "include_majority": True, "seed": 5, "fractions": {"train": 0.5, "dev": 0.25, "test": 0.25}, "drop_identical": True,
    "score_metric": "bleu", "score_min": 1.0, "score_max": 95.0,
}  # fmt: skip
# export_write's listing: (file, bytes, sha256). Last changed when the assignments were given out a chunk at a time and
# read the clock once a chunk instead of once an assignment (the JSONL's label times, from the fixed clock, moved;
# every other byte of the data files was the same, compared file by file).
GOLDEN: dict[str, list[tuple[str, int, str]]] = {
    "all_formats": [
        ("README.md", 6326, "676494806b07066aad1cbb3f012e3cc63691a8eeff8792309332f34598bd7d4f"),
        ("csv/dev.csv", 318, "4044a2444d1e585c4bce227c04058a64474ab32968dbb604a631280ab3a3251e"),
        ("csv/test.csv", 581, "907341da7398e9bd38a6874dd8224e0377092e57d952e2f054f608b5e301f6c4"),
        ("csv/train.csv", 1597, "6514a2f7bc7e4e2d2ce0d2a477a8f457fe387f88cd81920cb2d836fbcdfe57b2"),
        ("jsonl/dev.jsonl", 971, "b803b3c9a8b8827135f6647b3d5db2ebb3ae133b4e4f31b9c5e5df252ad022da"),
        ("jsonl/test.jsonl", 2035, "647f36fd4319b60fdb43fff975a541c3854858f3a0f916e2cc7544761dff44cc"),
        ("jsonl/train.jsonl", 15723, "117c54793c7f0db11d130e3ea344155b7dd34c3cacac9593282420977cd03638"),
        ("parquet/dev.parquet", 4448, "d24e439cc242258f5fa8c9dc3f329717c8b8c8411cb21a7f7b99558e8c90d25c"),
        ("parquet/test.parquet", 4533, "3201e0dc578ba6de22a4ac2a30dd0ee83d510a313578bbe759c5a972c3dd1695"),
        ("parquet/train.parquet", 5000, "49949238a4e51e810b67cdb0672aab0000301bf2fe662ba3faadf9101e502018"),
        ("simplification/dev.jsonl", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("simplification/test.jsonl", 791, "15a90bb71f015bbbe1278c41132cd1757121d4c27ecd35036437f4230d7a4834"),
        ("simplification/train.jsonl", 1452, "9b0b1765182e785d879c8385f2122de8df23f5b832c1ce958cb2ec62be279b4b"),
        ("wiki-manual/dev.tsv", 107, "e9c33eb4689f9d98eb1cb44f89eb8385e878786f8ad79c418a44bf8cc94ef1fb"),
        ("wiki-manual/test.tsv", 885, "18a2722658e8e636c3c1fc384fa24522079a69612ad4966029eb4827e705a36f"),
        ("wiki-manual/train.tsv", 3059, "9246d5b3d1cd777390a73d2fb20b6aa30d134dc0a6241f3367a581a8b65aaf52"),
        ("export.zip", 14632, "3e8882f6286dc0d7cf491e3e74a53ef59e9b69ebf17cf392d8eab95c99d319b9"),
    ],
    "filtered": [
        ("README.md", 6422, "d1d50f6457e8a0bc73d9e0a1bc3b5fd1f8386ab1eee63632c4ca19567a3aa589"),
        ("csv/dev.csv", 578, "2a5097f85d90742c7162525738f3e46fc9b6b261bd49034a49aa11ffd82a2111"),
        ("csv/test.csv", 954, "340c6369916547e30b7580ee4683fbe54fcd49033879f25aaaf6a405a880cfef"),
        ("csv/train.csv", 1999, "a7efc497f810a504a0d52077fd9995cece6ca7cb568cead672bbfd095c5fdc4f"),
        ("jsonl/dev.jsonl", 2032, "e15b6ac6a57afe9c65ff73ad4efaf48f0d0ee2f8b56d7d695d5fdfe7624dd3e8"),
        ("jsonl/test.jsonl", 7541, "14a64838791cfd6957e0570408b170f95d8455424aa25f9808895ceb6cd4cfc7"),
        ("jsonl/train.jsonl", 23352, "6e6c7cf621157e96abf1361c10f9205f4c02c012bf6e5a12b94ed60d18979632"),
        ("parquet/dev.parquet", 4527, "461081354c53b218a12a62ebcf39abf55652a50f1079a9cec1eac02f46897be6"),
        ("parquet/test.parquet", 4728, "0cd93ec939f1bbf999dfbef985ec19fd0e2b63def13c5eb2258f9879b53e285f"),
        ("parquet/train.parquet", 5096, "eb5730d50461c2d40a4d44ccebb9408acf58a6dfc7f17a6e2aa499415f955ebe"),
        ("simplification/dev.jsonl", 540, "3c6e1d546d3839254f100c61a8854a3a2106c9a6b722b140a35388bb512a01fc"),
        ("simplification/test.jsonl", 1121, "2321ccb0192fa259576e4e39d26cb423b64fb1a197112b33d942b8e6b67f42d2"),
        ("simplification/train.jsonl", 1996, "396710a7fc87c033905e3ca7c28552295847c7558a0d60df9d63ae3b827404cf"),
        ("wiki-manual/dev.tsv", 885, "18a2722658e8e636c3c1fc384fa24522079a69612ad4966029eb4827e705a36f"),
        ("wiki-manual/test.tsv", 574, "ba63eecedb4e73d14a0b2fc55082c55bb9615f20d3d66116f59268e3f43cfcef"),
        ("wiki-manual/train.tsv", 3330, "7dc48e0fb7fde048576443b5e34e86a9d705cadc5251228dcc5c55ceccf9604d"),
        ("export.zip", 17144, "8e255d2d1ece56afd25c3fd723984546e657e13cf2cf31c759a9ef26e62169ff"),
    ],
}


@pytest.fixture
def fixed_clock(monkeypatch):
    """``timezone.now`` one second later at every call, from a fixed start: created_at columns are the same every run."""
    ticks = itertools.count()
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    monkeypatch.setattr("django.utils.timezone.now", lambda: start + timedelta(seconds=next(ticks)))


def _import_corpus(owner):
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files
    from alignment.services import corpus_get_or_create

    corpus, _ = corpus_get_or_create(name="Identical", language="en", owner=owner)
    corpus.metadata = {"licence": "CC-BY-4.0", "source": "written for the tests", "topic": "towns"}
    corpus.save(update_fields=["metadata"])
    files = []
    for title, (complex_lines, simple_lines) in ARTICLES.items():
        files.append((f"{title}-adv.txt", ("\n".join(complex_lines) + "\n").encode()))
        files.append((f"{title}-ele.txt", ("\n".join(simple_lines) + "\n").encode()))
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit"))
    assert not report.errors, report.errors
    return corpus


class Labeller:
    def __init__(self, project: AnnotationProject, pair: DocumentPair) -> None:
        self.project, self.pair = project, pair
        self.simple = list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
        self.complex = list(pair.complex_document.sentences.order_by("index").values_list("pk", flat=True))

    def label(self, user, s: int, c: int, value: str) -> None:
        previous = current_labels(self.project, user, self.pair.pk).get((self.simple[s], self.complex[c]))
        services.label_record(
            project=self.project, annotator=user, pair=self.pair, simple_sentence_id=self.simple[s],
            complex_sentence_id=self.complex[c], label=value, expected_previous=previous.pk if previous else None,
        )  # fmt: skip

    def adjudicate(self, reviewer, s: int, c: int, value: str) -> None:
        services.adjudicate(
            project=self.project, reviewer=reviewer, pair=self.pair, simple_sentence_id=self.simple[s],
            complex_sentence_id=self.complex[c], label=value, expected_previous=None,
        )  # fmt: skip

    def settle_and_verify(self, reviewer, note: str = "") -> None:
        for state in pair_item_states(self.project, self.pair):
            if state.final is None:
                given = sorted(label for label in state.labels.values() if label)
                services.adjudicate(
                    project=self.project, reviewer=reviewer, pair=self.pair, simple_sentence_id=state.simple.pk,
                    complex_sentence_id=state.complex.pk, label=given[0] if given else "aligned", expected_previous=None,
                )  # fmt: skip
        services.pair_verify(project=self.project, pair=self.pair, by=reviewer, note=note)

    def imported(self, user, s: int, c: int, value: str) -> None:
        """An imported label as :func:`annotation.intake.gold_import.gold_import` stores it (chained after an earlier one)."""
        previous = current_labels(self.project, user, self.pair.pk).get((self.simple[s], self.complex[c]))
        LabelEvent.objects.create(
            project=self.project, pair=self.pair, annotator=user, simple_sentence_id=self.simple[s],
            complex_sentence_id=self.complex[c], new_label=value, source=LabelEvent.Source.IMPORT, previous=previous,
            old_label=previous.new_label if previous else "",
        )  # fmt: skip


def build_varied_project(owner) -> AnnotationProject:
    """Long because it is one user story end to end; split into steps, each would only hand the same state on."""
    corpus = _import_corpus(owner)
    run = align_now(corpus)
    users = get_user_model().objects
    anna, ben, cleo, dora = (users.create_user(name, password=f"{name}-pass-123") for name in ("anna", "ben", "cleo", "dora"))
    project = services.project_create(name="Identical", corpus=corpus, created_by=owner, overlap=4, suggestion_run=run)
    for user in (anna, ben, cleo, dora):
        services.membership_set(project=project, user=user, role="annotator")
    services.assignments_distribute(project=project)
    harbour, forest, school, museum, _station = (Labeller(project, p) for p in DocumentPair.objects.filter(corpus=corpus).order_by("pk"))

    # Dora answers five gold test items wrongly: flagged, so left out where the project excludes flagged annotators.
    gold = [
        GoldItem.objects.create(project=project, simple_sentence_id=harbour.simple[k], complex_sentence_id=harbour.complex[k], label="aligned")
        for k in range(5)
    ]  # fmt: skip
    GoldAnswer.objects.bulk_create(GoldAnswer(gold_item=item, annotator=dora, label="not_aligned") for item in gold)

    # Harbour: everyone labels, disagreements adjudicated, verified with a note; a copy, a split and a merge.
    for user in (anna, ben, cleo, dora):
        harbour.label(user, 0, 0, "aligned")
        harbour.label(user, 1, 1, "aligned")  # identical sentences: copying
        harbour.label(user, 2, 2, "aligned")
        harbour.label(user, 3, 2, "partial" if user in (anna, cleo) else "aligned")  # split, adjudicated below
        harbour.label(user, 4, 3, "aligned")
    harbour.label(dora, 4, 4, "aligned")  # only the flagged annotator links it
    harbour.label(ben, 0, 1, "not_aligned")
    for user in (anna, ben, cleo, dora):
        services.assignment_complete(project=project, annotator=user, pair=harbour.pair)
    harbour.adjudicate(owner, 3, 2, "partial")
    harbour.settle_and_verify(owner, note="checked twice")

    # Forest: not verified; a majority, a disagreement, an adjudication, an undo and a relabel; cleo still working.
    for user in (anna, ben, cleo):
        forest.label(user, 0, 0, "aligned")
    forest.label(anna, 1, 1, "aligned")
    forest.label(ben, 1, 1, "partial")  # 1 : 1, cleo has not labelled: no majority
    forest.label(anna, 2, 2, "aligned")
    forest.label(ben, 2, 2, "aligned")
    forest.label(cleo, 2, 2, "not_aligned")  # 2 of 3: majority aligned
    forest.label(anna, 3, 3, "partial")
    forest.label(anna, 3, 3, "aligned")  # relabel
    forest.label(ben, 3, 3, "aligned")
    forest.label(ben, 2, 3, "partial")
    services.label_undo(project=project, annotator=ben, pair=forest.pair)  # undoes ben's (2, 3)
    forest.adjudicate(owner, 1, 1, "partial")
    forest.adjudicate(cleo, 1, 2, "not_aligned")
    for user in (anna, ben):
        services.assignment_complete(project=project, annotator=user, pair=forest.pair)

    # School: verified, then the verification withdrawn; an adjudication stays.
    for user in (anna, ben, cleo, dora):
        for k in range(4):
            school.label(user, k, k, "aligned")
        services.assignment_complete(project=project, annotator=user, pair=school.pair)
    school.label(cleo, 3, 2, "partial")
    school.settle_and_verify(owner)
    services.pair_verify(project=project, pair=school.pair, by=owner, verified=False, note="one more look")

    # Museum: imported gold (one item imported twice: the later wins), one human label beside it.
    museum.imported(owner, 0, 0, "aligned")
    museum.imported(owner, 1, 1, "partial")
    museum.imported(owner, 1, 1, "aligned")
    museum.imported(owner, 2, 2, "aligned")  # identical sentences
    museum.label(anna, 1, 0, "partial")
    # Station: nobody labelled it, so it is not exported.
    return AnnotationProject.objects.select_related("corpus", "suggestion_run").get(pk=project.pk)


@pytest.fixture
def varied_project(owner, fixed_clock) -> AnnotationProject:
    return build_varied_project(owner)


@pytest.mark.django_db(transaction=True, reset_sequences=True)  # fixed primary keys: they are in the files
@pytest.mark.parametrize("name", ["all_formats", "filtered"])
def test_export_is_byte_identical_to_before_the_rewrite(varied_project, tmp_path: Path, name: str) -> None:
    options = export_options_clean(**(ALL_FORMATS if name == "all_formats" else FILTERED))
    root = tmp_path / name
    root.mkdir()
    listing = [
        (entry["name"], entry["bytes"], entry["sha256"]) for entry in export_write(project=varied_project, options=options, root=root)
    ]
    assert listing == GOLDEN[name]


@pytest.mark.django_db
def test_item_labels_read_in_bulk_agree_with_the_review_page(varied_project) -> None:
    """The export's page-at-a-time reading of the current labels gives what review's per-pair one gives."""
    from annotation.labelling.quality import flagged_annotator_ids

    flagged = flagged_annotator_ids(varied_project)
    assert len(flagged) == 1  # dora, whose labels are left out
    pairs = list(varied_project.pairs.order_by("pk"))
    page = _Page(varied_project, [pair.pk for pair in pairs])
    for pair in pairs:
        rows = page.pairs[pair.pk]
        states = pair_item_states(varied_project, pair, flagged=flagged)
        assert _item_labels(varied_project, rows, flagged) == {(s.simple.pk, s.complex.pk): s.labels for s in states}
        assert {key: a.pk for key, a in rows.adjudications.items()} == {
            (s.simple.pk, s.complex.pk): s.adjudication.pk for s in states if s.adjudication is not None
        }


@pytest.mark.django_db
def test_export_reads_a_page_of_pairs_in_a_fixed_number_of_queries(varied_project) -> None:
    """Issue 17: about 7 queries per document pair made exports slow; now the count does not grow with the pairs."""
    pair_ids = candidate_pair_ids(varied_project, include_majority=True)
    assert len(pair_ids) == 4

    def queries(ids: list[int]) -> int:
        with CaptureQueriesContext(connection) as captured:
            exported = [item for _, item in pair_exports(varied_project, ids, include_majority=True)]
        assert all(item is not None and item.items for item in exported)
        return len(captured.captured_queries)

    assert queries(pair_ids) == queries(pair_ids[:1])


def test_bleu_and_gleu_computed_together_equal_each_computed_apart() -> None:
    from annotation.export.simplification import sentence_bleu, sentence_gleu, sentence_scores

    sentences = [line for complex_, simple in ARTICLES.values() for line in complex_ + simple] + [
        "", "a", "a a a a a", "Hello, world!", "It cost 3.5 million euros (about $4m).", "Tom &amp; Jerry &lt;3",
        "Ärger über Öl – „Zitat“ …", "well-known state-of-the-art e-mail", "trailing space ", " leading space", "x\ny",
    ]  # fmt: skip
    for hypothesis, reference in itertools.product(sentences, repeat=2):
        assert sentence_scores(hypothesis, reference) == (sentence_bleu(hypothesis, reference), sentence_gleu(hypothesis, reference))

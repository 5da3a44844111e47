"""The mining job page in words: sentences numbered from 1, sort orders with names, ACCESS attributes that are there, right plurals."""

from __future__ import annotations

import pytest

from alignment.mining import browse
from alignment.mining.models import MinedPair, MiningJob, sentence_numbers
from alignment.models import Document


@pytest.mark.parametrize(("indices", "shown"), [([0], "1"), ([2, 3, 4], "3–5"), ([4, 0], "1, 5"), ([0, 1, 5, 7, 8], "1–2, 6, 8–9")])
def test_sentence_numbers_count_from_one(indices, shown):
    assert sentence_numbers(indices) == shown


def _job(corpus, method: str, **config) -> MiningJob:
    return MiningJob.objects.create(
        method=method, source_corpus=corpus, target_corpus=corpus, config={"language": "en", **config},
        config_hash=f"{method}-{corpus.pk}", status=MiningJob.Status.SUCCEEDED,
    )  # fmt: skip


def _pair(job: MiningJob, source: list[int], target: list[int], score: float, **features) -> MinedPair:
    documents = list(Document.objects.filter(corpus=job.source_corpus).order_by("pk"))
    return MinedPair.objects.create(
        job=job, source_document=documents[0], target_document=documents[1], source_sentences=source, target_sentences=target,
        source_key=",".join(map(str, source)), target_key=",".join(map(str, target)), source_text=f"Source text {score}",
        target_text=f"Target text {score}", source_count=len(source), target_count=len(target), source_tokens=3, target_tokens=3,
        score=score, doc_score=0.9 if job.method == "lha" else None, length_ratio=1.0, overlap=0.5, features=features,
    )  # fmt: skip


def test_lha_page_numbers_sentences_from_one_names_the_orders_and_counts_pairs_in_words(client, owner, tram_corpus):
    job = _job(tram_corpus, "lha", theta_d=0.5, theta_s=0.6, k_documents=5, k_sentences=5)
    _pair(job, [0], [0], 0.91)
    _pair(job, [10, 11], [2], 0.72)
    client.force_login(owner)
    html = client.get(f"/mining/{job.pk}/").content.decode()
    assert "2 pairs match." in html
    assert "-adv #1</span>" in html and "-adv #11–12</span>" in html and "-ele #3</span>" in html  # stored indices 0 and 10, 11
    assert "#0<" not in html and "#10,11" not in html
    for name in browse.SORT_NAMES.values():
        assert f">{name}</option>" in html
    assert ">-score<" not in html and ">doc_score<" not in html and ">length_ratio<" not in html
    assert 'value="-score"' in html  # saved links keep their order names
    assert "Document similarity" in html and "Score <span" in html and "(cosine)" in html
    one = client.get(f"/mining/{job.pk}/", {"score_min": "0.9"}).content.decode()
    assert "1 pair matches." in one and "pair(s)" not in one
    bad = client.get(f"/mining/{job.pk}/", {"sort": "random"})
    assert bad.status_code == 400 and "-score (lowest score first)" in bad.content.decode()


def test_position_order_compares_sentence_numbers_as_numbers(client, owner, tram_corpus):
    job = _job(tram_corpus, "lha")
    later, earlier = _pair(job, [10], [0], 0.9), _pair(job, [2], [1], 0.8)
    assert [p.pk for p in browse.mined_pairs(job, browse.filters_from({"sort": "position"}))] == [earlier.pk, later.pk]


def test_muss_page_hides_a_missing_dependency_depth_and_says_why(client, owner, tram_corpus):
    job = _job(tram_corpus, "muss", k=8, max_distance=0.25, min_margin=1.06)
    access = {"char_ratio": 0.8, "levenshtein_replace_only": 0.7, "word_rank_ratio": 0.9}
    _pair(job, [0, 1], [0], 1.2, **access, dependency_depth_ratio=None)
    client.force_login(owner)
    html = client.get(f"/mining/{job.pk}/").content.decode()
    table = html.split('class="table compact mined"')[1].split("</table>")[0]
    assert "absent" not in html and "depth" not in table
    assert 'id="depth-note"' in html and "needs spaCy and a parser model for the language (en)" in html
    assert "Levenshtein 0.70 · word rank 0.90" in html and "(margin)" in html and "Document similarity" not in html
    assert "1 pair matches." in html
    MinedPair.objects.filter(job=job).update(features={**access, "dependency_depth_ratio": 1.25})
    with_depth = client.get(f"/mining/{job.pk}/").content.decode()
    assert "word rank 0.90 · depth 1.25" in with_depth and 'id="depth-note"' not in with_depth

"""Who may start and stop jobs on a shared corpus, answer gold test items, and learn other users' names.

Personas: the corpus owner, staff, and ``outsider``, who may *see* the owner's corpus once
it is shared but does not own it. As for alignment runs, starting, retrying and cancelling
a corpus's jobs is for its owner and staff; anyone else gets 403 and nothing changes.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework.test import APIClient

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining.models import MiningJob
from alignment.mining.service import mining_job_create
from alignment.models import DocumentPair, EmbeddingRun, Encoder, Sentence, SentenceEmbedding
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.labelling import queue
from annotation.models import AnnotationProject, GoldAnswer, GoldItem
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE

LHA_FORM = {
    "k_documents": 2,
    "theta_d": 0.4,
    "k_sentences": 1,
    "theta_s": 0.6,
    "min_overlap": "",
    "max_length_ratio": 1.5,
    "language": "en",
}
MUSS_FORM = {"method": "muss", "k": 6, "max_distance": 0.3, "min_margin": 1.04, "language": "en"}


@pytest.fixture
def shared(tram_corpus):
    """The owner's tram corpus, shared: every signed-in user sees it."""
    tram_corpus.is_shared = True
    tram_corpus.save(update_fields=["is_shared"])
    return tram_corpus


@pytest.fixture
def target(owner):
    corpus, _ = corpus_get_or_create(name="Other trams", language="en", owner=owner, is_shared=True)
    return corpus


def _as(client, user):
    client.force_login(user)
    return client


@pytest.mark.parametrize("persona", ["owner", "staff"])
def test_owner_and_staff_start_embedding_on_a_corpus(client, shared, persona, request):
    response = _as(client, request.getfixturevalue(persona)).post(reverse("alignment:corpus_embed", args=[shared.pk]))
    assert response.status_code == 302 and EmbeddingRun.objects.filter(corpus=shared).count() == 1


def test_a_viewer_of_a_shared_corpus_cannot_start_embedding(client, shared, outsider):
    response = _as(client, outsider).post(reverse("alignment:corpus_embed", args=[shared.pk]))
    assert response.status_code == 403 and not EmbeddingRun.objects.exists()


def test_a_viewer_of_a_shared_corpus_cannot_retry_a_failed_embedding_run(client, shared, outsider, owner):
    run = EmbeddingRun.objects.create(corpus=shared, encoder_name="test-encoder", status=EmbeddingRun.Status.FAILED)
    url = reverse("alignment:embedding_run_retry", args=[run.pk])
    assert _as(client, outsider).post(url).status_code == 403
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.FAILED
    assert _as(client, owner).post(url).status_code == 302
    run.refresh_from_db()
    assert run.status != EmbeddingRun.Status.FAILED


@pytest.mark.parametrize("form", [LHA_FORM, MUSS_FORM], ids=["lha", "muss"])
def test_a_viewer_of_a_shared_corpus_cannot_start_mining_on_it(client, shared, target, outsider, form):
    data = {**form, "target_corpus": target.pk} if form is LHA_FORM else form
    assert _as(client, outsider).get(reverse("alignment:mining_start", args=[shared.pk])).status_code == 200  # looking is fine
    response = client.post(reverse("alignment:mining_start", args=[shared.pk]), data)
    assert response.status_code == 403 and not MiningJob.objects.exists()


@pytest.mark.parametrize("persona", ["owner", "staff"])
@pytest.mark.parametrize("form", [LHA_FORM, MUSS_FORM], ids=["lha", "muss"])
def test_owner_and_staff_start_mining(client, shared, target, persona, form, request):
    data = {**form, "target_corpus": target.pk} if form is LHA_FORM else form
    _mineable(shared, target)  # the start form refuses an empty corpus or one without sentence vectors
    response = _as(client, request.getfixturevalue(persona)).post(reverse("alignment:mining_start", args=[shared.pk]), data)
    assert response.status_code == 302 and MiningJob.objects.filter(source_corpus=shared).count() == 1


def _mineable(*corpora) -> None:
    """Give each corpus a document if it has none, and a (fake, constant) vector for every sentence."""
    from django.conf import settings

    from alignment.models import Sentence, SentenceEmbedding
    from alignment.services import encoder_get_or_create

    encoder = encoder_get_or_create(name=settings.ENCODER_MODEL, dimensions=384)
    for corpus in corpora:
        if not corpus.documents.exists():
            files = [("Tram-adv.txt", SAMPLE_ADV.encode())]
            assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="text")).errors
        vector = [1.0] + [0.0] * 383
        sentences = Sentence.objects.filter(document__corpus=corpus)
        SentenceEmbedding.objects.bulk_create([SentenceEmbedding(sentence=s, encoder=encoder, vector=vector) for s in sentences])


@pytest.mark.parametrize("method", ["lha", "muss"])
def test_a_viewer_of_a_shared_corpus_cannot_cancel_its_owners_mining_job(client, shared, target, outsider, owner, staff, method):
    job, _ = mining_job_create(source_corpus=shared, target_corpus=target if method == "lha" else None, method=method, created_by=owner)
    url = reverse("alignment:mining_job_cancel", args=[job.pk])
    page = _as(client, outsider).get(reverse("alignment:mining_job", args=[job.pk]))
    assert page.status_code == 200 and url not in page.content.decode()  # looking is fine; no Cancel button offered
    assert client.post(url).status_code == 403
    job.refresh_from_db()
    assert not job.cancel_requested
    assert url in _as(client, staff).get(reverse("alignment:mining_job", args=[job.pk])).content.decode()
    assert client.post(url).status_code == 302
    job.refresh_from_db()
    assert job.cancel_requested


@pytest.fixture
def gold_project(tram_corpus, owner, annotator, outsider):
    """A project with one gold test item; ``annotator`` annotates it, ``outsider`` only views it."""
    project = services.project_create(name="Gold", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=annotator, role="annotator")
    services.membership_set(project=project, user=outsider, role="viewer")
    services.assignments_distribute(project=project)
    pair = DocumentPair.objects.get(corpus=tram_corpus)
    gold = GoldItem.objects.create(project=project, simple_sentence=pair.simple_document.sentences.get(index=0),
                                   complex_sentence=pair.complex_document.sentences.get(index=0), label="aligned")  # fmt: skip
    return project, gold


def test_a_viewer_cannot_answer_a_gold_test_item(client, gold_project, outsider):
    project, gold = gold_project
    response = _as(client, outsider).post(reverse("annotation:project_queue", args=[project.pk]),
                                          {"kind": "gold", "item_id": gold.pk, "label": "aligned", "seconds_spent": "2"})  # fmt: skip
    assert response.status_code == 403 and not GoldAnswer.objects.exists()
    with pytest.raises(PermissionError, match="only annotators and managers answer test items"):
        queue.queue_answer(project=project, annotator=outsider, kind="gold", item_id=gold.pk, label="aligned", seconds_spent=None)
    assert not GoldAnswer.objects.exists()


@pytest.mark.parametrize("persona", ["annotator", "owner", "staff"])
def test_annotators_and_managers_answer_gold_test_items(client, gold_project, persona, request):
    project, gold = gold_project
    user = request.getfixturevalue(persona)
    response = _as(client, user).post(reverse("annotation:project_queue", args=[project.pk]),
                                      {"kind": "gold", "item_id": gold.pk, "label": "aligned", "seconds_spent": "2"})  # fmt: skip
    assert response.status_code == 302 and GoldAnswer.objects.get().annotator == user


def test_creating_a_corpus_with_a_private_corpus_name_does_not_confirm_it(client, tram_corpus, outsider, owner):
    api = APIClient()
    api.force_authenticate(outsider)
    response = api.post("/api/corpora/", {"name": tram_corpus.name, "language": "en"}, format="json")
    assert response.status_code == 400
    message = response.json()["name"][0]
    assert "not available" in message and "exists" not in message and "someone" not in message
    api.force_authenticate(owner)  # its owner is told plainly
    assert "exists already" in api.post("/api/corpora/", {"name": tram_corpus.name, "language": "en"}, format="json").json()["name"][0]


def test_creating_a_project_with_a_private_project_name_does_not_confirm_it(client, tram_corpus, owner):
    services.project_create(name="Secret plans", corpus=tram_corpus, created_by=owner)
    other = get_user_model().objects.create_user("other")
    own, _ = corpus_get_or_create(name="Other's corpus", language="en", owner=other)
    files = [("Tram-adv.txt", SAMPLE_ADV.encode()), ("Tram-ele.txt", SAMPLE_ELE.encode())]
    assert not corpus_import_files(corpus=own, files=files, options=ImportOptions(format="text")).errors
    with pytest.raises(ValueError) as refused:
        services.project_create(name="Secret plans", corpus=own, created_by=other)
    assert "not available" in str(refused.value) and "exists" not in str(refused.value)
    api = APIClient()
    api.force_authenticate(other)
    response = api.post("/api/projects/", {"name": "Secret plans", "corpus": own.pk}, format="json")
    assert response.status_code == 400
    message = " ".join(response.json()["name"])
    assert "not available" in message and "exists" not in message
    assert AnnotationProject.objects.count() == 1


def test_the_embed_button_is_offered_to_who_may_press_it_and_only_while_sentences_lack_a_vector(client, shared, outsider, owner):
    """A viewer of a shared corpus was shown *Embed missing sentences*, which then answered 403; and the button stayed
    once every sentence had a vector, where a press queued a run with nothing to do."""
    url, button = reverse("alignment:corpus_detail", args=[shared.pk]), reverse("alignment:corpus_embed", args=[shared.pk])
    sentences = Sentence.objects.filter(document__corpus=shared).count()
    assert sentences and button not in _as(client, outsider).get(url).content.decode()
    page = _as(client, owner).get(url).content.decode()
    assert button in page and f"Embed missing sentences ({sentences})" in page
    encoder, _ = Encoder.objects.get_or_create(name=settings.ENCODER_MODEL, defaults={"dimensions": 3})
    SentenceEmbedding.objects.bulk_create(
        SentenceEmbedding(sentence=sentence, encoder=encoder, vector=[1.0, 0.0, 0.0])
        for sentence in Sentence.objects.filter(document__corpus=shared)
    )
    assert button not in _as(client, owner).get(url).content.decode()

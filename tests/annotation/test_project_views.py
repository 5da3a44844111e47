"""Project pages: creation, roles (manager / annotator / viewer / outsider), members, assignment, progress."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from alignment.models import DocumentPair
from annotation import services
from annotation.models import AnnotationProject, Assignment, ProjectMembership


@pytest.fixture
def project(tram_corpus, owner, annotator):
    project = services.project_create(name="Trams gold", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=annotator, role="annotator")
    return project


def test_corpus_owner_creates_a_project_and_becomes_its_manager(client, owner, tram_corpus):
    client.force_login(owner)
    response = client.post(
        reverse("annotation:project_create"), {"name": "Gold", "corpus": tram_corpus.pk, "overlap": 2, "strategy": "documents"}
    )
    project = AnnotationProject.objects.get(name="Gold")
    assert response.status_code == 302 and response.url == reverse("annotation:project_detail", args=[project.pk])
    assert ProjectMembership.objects.get(project=project).role == "manager"
    assert list(project.pairs.all()) == list(DocumentPair.objects.filter(corpus=tram_corpus))


def test_project_form_refuses_another_users_corpus_and_duplicate_names(client, outsider, owner, tram_corpus, project):
    client.force_login(outsider)
    response = client.post(
        reverse("annotation:project_create"), {"name": "Mine", "corpus": tram_corpus.pk, "overlap": 1, "strategy": "documents"}
    )
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    client.force_login(owner)
    response = client.post(
        reverse("annotation:project_create"), {"name": "Trams gold", "corpus": tram_corpus.pk, "overlap": 1, "strategy": "documents"}
    )
    assert "a project called &#x27;Trams gold&#x27; exists already" in response.content.decode()
    assert AnnotationProject.objects.count() == 1


def test_manager_adds_members_and_assigns_pairs(client, owner, project, annotator):
    client.force_login(owner)
    client.post(reverse("annotation:project_assign", args=[project.pk]))
    assignment = Assignment.objects.get(project=project)
    assert assignment.annotator == annotator
    response = client.post(reverse("annotation:project_members", args=[project.pk]), {"username": "nobody", "role": "viewer"}, follow=True)
    assert "no user called &#x27;nobody&#x27;" in response.content.decode()


def test_annotator_sees_only_their_work_and_cannot_manage(client, owner, project, annotator, outsider):
    services.membership_set(project=project, user=outsider, role="annotator")
    project.overlap = 2
    project.save()
    services.assignments_distribute(project=project)
    client.force_login(annotator)
    page = client.get(reverse("annotation:project_detail", args=[project.pk]))
    assert [row["assignment"].annotator for row in page.context["progress"]] == [annotator]
    assert client.post(reverse("annotation:project_assign", args=[project.pk])).status_code == 403
    assert client.post(reverse("annotation:project_members", args=[project.pk]), {"username": "anna", "role": "manager"}).status_code == 403
    assert ProjectMembership.objects.get(project=project, user=annotator).role == "annotator"


def test_viewer_reads_the_project_and_outsider_gets_404(client, project, outsider):
    stranger = get_user_model().objects.create_user("stranger", password="x-pass-123")
    services.membership_set(project=project, user=outsider, role="viewer")
    client.force_login(outsider)
    assert client.get(reverse("annotation:project_detail", args=[project.pk])).status_code == 200
    assert client.post(reverse("annotation:project_assign", args=[project.pk])).status_code == 403
    client.force_login(stranger)
    assert client.get(reverse("annotation:project_detail", args=[project.pk])).status_code == 404
    assert list(client.get(reverse("annotation:project_list")).context["rows"]) == []


def test_progress_counts_simple_sentences_with_a_current_label(client, owner, project, annotator, tram_corpus):
    services.assignments_distribute(project=project)
    pair = DocumentPair.objects.get(corpus=tram_corpus)
    simple = list(pair.simple_document.sentences.order_by("index"))
    complex_first = pair.complex_document.sentences.get(index=0)
    event = services.label_record(
        project=project,
        annotator=annotator,
        pair=pair,
        simple_sentence_id=simple[0].pk,
        complex_sentence_id=complex_first.pk,
        label="aligned",
        expected_previous=None,
    )
    services.label_record(
        project=project,
        annotator=annotator,
        pair=pair,
        simple_sentence_id=simple[1].pk,
        complex_sentence_id=complex_first.pk,
        label="partial",
        expected_previous=None,
    )
    services.label_undo(project=project, annotator=annotator, pair=pair)  # the second label is undone
    client.force_login(owner)
    row = client.get(reverse("annotation:project_detail", args=[project.pk])).context["progress"][0]
    assert (row["touched"], row["total"]) == (1, len(simple))
    assert event.pk


@pytest.mark.parametrize("model", ["annotationproject", "assignment", "labelevent"])
def test_admin_lists_annotation_models_and_label_events_are_read_only(admin_client, project, model):
    assert admin_client.get(f"/admin/annotation/{model}/").status_code == 200
    if model == "labelevent":
        assert admin_client.get("/admin/annotation/labelevent/add/").status_code == 403

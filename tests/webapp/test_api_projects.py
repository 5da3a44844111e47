"""REST API: annotation projects, members and assignments, with the roles of the project pages."""

from __future__ import annotations

import pytest
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment.services import corpus_get_or_create
from annotation.models import AnnotationProject, Assignment, ProjectMembership
from annotation.projects.assigning import ASSIGN_TASK
from tests.webapp.api_support import api_world, fast_password_hashing, results  # noqa: F401 - pytest fixtures used as arguments


@pytest.mark.parametrize(
    ("persona", "role"), [("manager", "manager"), ("anna", "annotator"), ("viewer", "viewer"), ("staff", "manager"), ("outsider", None)]
)
def test_projects_are_listed_with_the_users_role_and_hidden_without_one(api_world, persona, role):
    client = api_world.client(persona)
    rows = results(client.get("/api/projects/"))
    assert [(row["name"], row["role"]) for row in rows] == ([("Trams project", role)] if role else [])
    detail = client.get(api_world.url("projects/{project}/"))
    assert detail.status_code == (200 if role else 404)
    if role:
        body = detail.json()
        assert body["pair_count"] == 1 and body["suggestion_run"] == api_world.run.pk and body["corpus"] == api_world.corpus.pk


def test_owner_creates_a_project_on_their_corpus_and_becomes_its_manager(api_world):
    payload = {"name": "Second", "corpus": api_world.corpus.pk, "overlap": 1, "guidelines": "Be kind."}
    response = api_world.client("owner").post("/api/projects/", payload, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["role"] == "manager" and body["pair_count"] == 1 and body["overlap"] == 1
    assert body["suggestion_run"] == api_world.run.pk  # the corpus's latest finished run, as on the form
    project = AnnotationProject.objects.get(name="Second")
    assert ProjectMembership.objects.get(project=project).user == api_world.users["owner"]


@pytest.mark.parametrize("persona", ["outsider", "anna", "viewer"])
def test_only_corpus_owners_and_staff_build_projects_on_a_corpus(api_world, persona):
    response = api_world.client(persona).post("/api/projects/", {"name": "Mine", "corpus": api_world.corpus.pk}, format="json")
    assert response.status_code == 400 and "does not exist" in response.json()["corpus"][0]
    assert not AnnotationProject.objects.filter(name="Mine").exists()
    staff = api_world.client("staff").post("/api/projects/", {"name": "Mine", "corpus": api_world.corpus.pk}, format="json")
    assert staff.status_code == 201


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ({"name": "Trams project"}, "name", "exists already"),
        ({"overlap": 0}, "overlap", "greater than or equal to 1"),
        ({"strategy": "lottery"}, "strategy", "not a valid choice"),
        ({"pairs": []}, "pairs", "at least one"),
        ({"suggestion_run": 999999}, "suggestion_run", "does not exist"),
    ],
)
def test_bad_project_input_names_the_field_and_stores_nothing(api_world, extra, field, message):
    payload = {"name": "Third", "corpus": api_world.corpus.pk, **extra}
    response = api_world.client("owner").post("/api/projects/", payload, format="json")
    assert response.status_code == 400 and message in str(response.json()[field])
    assert AnnotationProject.objects.count() == 1


def test_a_pair_or_run_of_another_corpus_is_refused(api_world):
    other, _ = corpus_get_or_create(name="Other", language="en", owner=api_world.users["owner"])
    client = api_world.client("owner")
    response = client.post("/api/projects/", {"name": "X", "corpus": other.pk, "pairs": [api_world.pair.pk]}, format="json")
    assert response.status_code == 400 and "do not belong to corpus" in response.json()["pairs"][0]
    response = client.post("/api/projects/", {"name": "X", "corpus": other.pk, "suggestion_run": api_world.run.pk}, format="json")
    assert response.status_code == 400 and "another corpus" in response.json()["suggestion_run"][0]


def test_members_are_listed_for_every_role_and_managed_by_managers(api_world):
    rows = results(api_world.client("anna").get(api_world.url("projects/{project}/members/")))
    assert {(row["username"], row["role"]) for row in rows} == {
        ("owner", "manager"),
        ("anna", "annotator"),
        ("ben", "annotator"),
        ("vera", "viewer"),
    }
    added = api_world.client("manager").post(
        api_world.url("projects/{project}/members/"), {"username": "outsider", "role": "annotator"}, format="json"
    )
    assert added.status_code == 201 and added.json()["role"] == "annotator"
    assert ProjectMembership.objects.get(project=api_world.project, user=api_world.users["outsider"]).role == "annotator"


@pytest.mark.parametrize(("persona", "code"), [("anna", 403), ("viewer", 403), ("outsider", 404)])
def test_non_managers_cannot_change_members(api_world, persona, code):
    response = api_world.client(persona).post(
        api_world.url("projects/{project}/members/"), {"username": "anna", "role": "manager"}, format="json"
    )
    assert response.status_code == code
    assert ProjectMembership.objects.get(project=api_world.project, user=api_world.users["anna"]).role == "annotator"


def test_adding_an_unknown_user_names_the_field(api_world):
    response = api_world.client("manager").post(
        api_world.url("projects/{project}/members/"), {"username": "ghost", "role": "viewer"}, format="json"
    )
    assert response.status_code == 400 and "no user called 'ghost'" in response.json()["username"][0]


@pytest.mark.parametrize(
    ("persona", "expected"), [("manager", {"anna", "ben"}), ("viewer", {"anna", "ben"}), ("staff", {"anna", "ben"}), ("anna", {"anna"})]
)
def test_assignments_managers_and_viewers_see_all_annotators_their_own(api_world, persona, expected):
    rows = results(api_world.client(persona).get(api_world.url("projects/{project}/assignments/")))
    assert {row["annotator"] for row in rows} == expected and all(row["pair"] == api_world.pair.pk for row in rows)


def test_an_annotator_cannot_read_anothers_assignment_and_outsiders_see_no_project(api_world):
    bens = Assignment.objects.get(project=api_world.project, annotator=api_world.users["ben"])
    assert api_world.client("anna").get(api_world.url(f"projects/{{project}}/assignments/{bens.pk}/")).status_code == 404
    assert api_world.client("viewer").get(api_world.url(f"projects/{{project}}/assignments/{bens.pk}/")).status_code == 200
    assert api_world.client("outsider").get(api_world.url("projects/{project}/assignments/")).status_code == 404
    assert api_world.client(None).get(api_world.url("projects/{project}/assignments/")).status_code == 401


def test_assignments_filter_by_annotator_and_completion(api_world):
    client = api_world.client("manager")
    assert [row["annotator"] for row in results(client.get(api_world.url("projects/{project}/assignments/?annotator=ben")))] == ["ben"]
    Assignment.objects.filter(annotator=api_world.users["anna"]).update(completed_at="2024-01-01T00:00:00Z")
    assert [row["annotator"] for row in results(client.get(api_world.url("projects/{project}/assignments/?completed=true")))] == ["anna"]
    assert [row["annotator"] for row in results(client.get(api_world.url("projects/{project}/assignments/?completed=false")))] == ["ben"]


def test_manager_assigns_a_pair_to_an_annotator(api_world):
    client = api_world.client("manager")
    client.post(api_world.url("projects/{project}/members/"), {"username": "outsider", "role": "annotator"}, format="json")
    response = client.post(
        api_world.url("projects/{project}/assignments/"), {"pair": api_world.pair.pk, "annotator": "outsider"}, format="json"
    )
    assert response.status_code == 201 and response.json()["annotator"] == "outsider"
    assert Assignment.objects.filter(project=api_world.project).count() == 3


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"annotator": "anna"}, "annotator", "already assigned"),
        ({"annotator": "vera"}, "annotator", "not an annotator of this project"),
        ({"annotator": "outsider"}, "annotator", "not an annotator of this project"),
        ({"annotator": "anna", "pair": 999999}, "pair", "does not exist"),
    ],
)
def test_bad_assignments_name_the_field(api_world, payload, field, message):
    payload = {"pair": api_world.pair.pk, **payload}
    response = api_world.client("manager").post(api_world.url("projects/{project}/assignments/"), payload, format="json")
    assert response.status_code == 400 and message in response.json()[field][0]
    assert Assignment.objects.filter(project=api_world.project).count() == 2


@pytest.mark.parametrize(("persona", "code"), [("anna", 403), ("viewer", 403), ("outsider", 404)])
def test_only_managers_assign(api_world, persona, code):
    client = api_world.client(persona)
    assert (
        client.post(
            api_world.url("projects/{project}/assignments/"), {"pair": api_world.pair.pk, "annotator": "anna"}, format="json"
        ).status_code
        == code
    )
    assert client.post(api_world.url("projects/{project}/assignments/distribute/")).status_code == code


def test_distribute_gives_pairs_to_new_annotators_up_to_the_overlap(api_world):
    client = api_world.client("manager")
    distribute = api_world.url("projects/{project}/assignments/distribute/")
    assert client.post(distribute).json() == {"created": 0, "in_background": False}  # overlap 2 is met
    AnnotationProject.objects.filter(pk=api_world.project.pk).update(overlap=3)
    client.post(api_world.url("projects/{project}/members/"), {"username": "outsider", "role": "annotator"}, format="json")
    assert client.post(distribute).json() == {"created": 1, "in_background": False}


def test_a_large_projects_distribution_runs_in_the_background_and_a_manager_can_stop_it(api_world, settings):
    settings.ASSIGN_INLINE_MAX_PAIRS = 0  # the world's one pair is "large" here
    ProcrastinateJob.objects.filter(task_name=ASSIGN_TASK).delete()
    distribute, stop = (api_world.url(f"projects/{{project}}/assignments/{path}") for path in ("distribute/", "distribute/stop/"))
    assert api_world.client("anna").post(stop).status_code == 403  # an annotator of the project
    manager = api_world.client("manager")
    answer = manager.post(distribute)
    assert answer.status_code == 202 and answer.json() == {"created": None, "in_background": True}
    assert ProcrastinateJob.objects.filter(task_name=ASSIGN_TASK, status="todo").count() == 1
    assert manager.post(stop).json() == {"stopped": True, "pairs_assigned": 1}  # the world's pair was given out before
    assert not ProcrastinateJob.objects.filter(task_name=ASSIGN_TASK, status="todo").exists()
    assert manager.post(stop).json() == {"stopped": False, "pairs_assigned": None}


@pytest.mark.parametrize("path", ["members/", "assignments/", "labels/", "model-versions/", "exports/"])
@pytest.mark.parametrize(("persona", "code"), [(None, 401), ("outsider", 404)])
def test_a_projects_objects_need_a_login_and_do_not_exist_without_a_role(api_world, path, persona, code):
    client = api_world.client(persona)
    assert client.get(api_world.url("projects/{project}/" + path)).status_code == code
    assert client.post(api_world.url("projects/{project}/" + path), {}, format="json").status_code == code
    assert client.get(f"/api/projects/999999/{path}").status_code == (401 if persona is None else 404)

"""A project's members and assignments, for its managers: add members and invite annotators, give the pairs out
(a large project's in the background, its note's progress, a stop). Thin; :mod:`annotation.views` asks :func:`manager_project`
and :func:`assigning_figures` too."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation import selectors, services
from annotation.forms import InviteForm, MemberForm, MemberSearchForm
from annotation.models import AnnotationProject, ProjectMembership
from annotation.projects import members
from annotation.projects.assigning import assigning_in_background, assignments_made


def manager_project(request: HttpRequest, project_id: int):
    project, role = selectors.project_get_for_user(request.user, project_id)
    if role != ProjectMembership.Role.MANAGER:
        raise PermissionDenied("only the project's managers do this")
    return project


@require_POST
def project_members(request: HttpRequest, project_id: int) -> HttpResponse:
    project = manager_project(request, project_id)
    form = MemberForm(request.POST)
    if form.is_valid():
        services.membership_set(project=project, user=form.cleaned_data["username"], role=form.cleaned_data["role"])
        messages.success(request, f"{form.cleaned_data['username']} is now {form.cleaned_data['role']}.")
    else:
        messages.error(request, "Member not added: " + "; ".join(" ".join(errors) for errors in form.errors.values()))
    return redirect("annotation:project_detail", project_id=project.pk)


@require_POST
def project_member_invite(request: HttpRequest, project_id: int) -> HttpResponse:
    """Create an annotator's account; the manager passes on a link where its owner chooses a password."""
    project = manager_project(request, project_id)
    form = InviteForm(request.POST, project=project)
    if not form.is_valid():
        messages.error(request, "Account not created: " + "; ".join(" ".join(errors) for errors in form.errors.values()))
        return redirect("annotation:project_detail", project_id=project.pk)
    user = form.invitee or members.annotator_account_create(
        project=project, username=form.cleaned_data["username"], email=form.cleaned_data["email"]
    )
    link = request.build_absolute_uri(members.invite_path(user))
    hours = settings.PASSWORD_RESET_TIMEOUT // 3600
    valid = f"{hours // 24} days" if hours >= 48 else f"{hours} hours"
    messages.success(
        request,
        f"{user.get_username()} is an annotator of this project. Send them this link to choose a password "
        f"(it works once, for {valid}): {link}",
    )
    return redirect("annotation:project_detail", project_id=project.pk)


@require_GET
def project_member_search(request: HttpRequest, project_id: int) -> HttpResponse:
    """Usernames starting with what the member form's box holds, as ``<option>`` elements for the member form's datalist (htmx)."""
    project = manager_project(request, project_id)
    form = MemberSearchForm(request.GET)
    users = members.member_candidates(form.cleaned_data["username"]) if form.is_valid() else []
    return render(request, "annotation/project_detail.html#member-options", {"project": project, "candidates": users})


@require_POST
def project_assign(request: HttpRequest, project_id: int) -> HttpResponse:
    project = manager_project(request, project_id)
    try:
        created = services.assignments_distribute_press(project=project)
    except ValueError as error:
        messages.error(request, str(error))
    else:
        if created is None:  # a large project: given out by a background job
            messages.info(request, "Assigning the project's pairs in the background.")
            return redirect("annotation:project_detail", project_id=project.pk)
        messages.success(request, f"{created} new assignment{'s' if created != 1 else ''}.")
        shortfall = members.overlap_shortfall(project)
        if shortfall["short_pairs"]:
            messages.warning(request, _shortfall_text(project, shortfall))
    return redirect("annotation:project_detail", project_id=project.pk)


def assigning_figures(project: AnnotationProject, pair_count: int, *, background: bool) -> dict:
    """The note's figures while a background job gives the pairs out: assignments made, and the overlap's target."""
    if not background:
        return {"assigning": False}
    made = assignments_made(project)
    return {"assigning": True, "assigning_made": made, "assigning_target": max(made, pair_count * project.overlap)}


def project_assign_progress(request: HttpRequest, project_id: int) -> HttpResponse:
    """The note's poll while the pairs are given out (managers): the note again, or, once the job has ended, a reload."""
    project = manager_project(request, project_id)
    if not assigning_in_background(project):
        return HttpResponse(status=204, headers={"HX-Refresh": "true"})
    context = {"project": project, **assigning_figures(project, project.pairs.count(), background=True)}
    return render(request, "annotation/project_detail.html#assigning-note", context)


@require_POST
def project_assign_stop(request: HttpRequest, project_id: int) -> HttpResponse:
    project = manager_project(request, project_id)
    given = services.assignments_distribute_stop(project=project)
    if given is not None:
        messages.info(
            request,
            f"Stopped giving pairs out: {given:,} of {project.pairs.count():,} pairs have an annotator so far. "
            "Assign pairs to annotators again to give out the rest.",
        )
    else:
        messages.info(request, "Nothing to stop: no pairs were being given out.")
    return redirect("annotation:project_detail", project_id=project.pk)


def _shortfall_text(project, shortfall: dict) -> str:
    annotators = shortfall["annotators"]
    return (
        f"{members.overlap_shortfall_phrase(shortfall['short_pairs'], project.overlap, still=True)}: the project has "
        f"{annotators} annotator{'s' if annotators != 1 else ''}. Add annotators, then assign again."
    )

"""The annotation screen of one document pair and its writes (label, undo, skip/flag/comment, done). Thin.

Writes answer JSON for the screen's script (``static/js/annotate.js``), which saves
each action at once, retries network failures and shows conflicts; a refused write
says why in ``error`` with the HTTP status that fits (400 bad input, 403 not
assigned, 409 changed in another tab, with the current label). Each write may carry the
screen's ``client_action_id``: a resend of an action already stored is answered as it was
stored, not stored again (:mod:`annotation.client_actions`). The screen and its state
(``annotate_state``) are never cached: a page brought back by Back reads what the server holds.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from alignment.errors import error_answer, error_json
from annotation import selectors, services
from annotation.labelling import screen
from annotation.models import ITEM_COMMENT_MAX_CHARS, AnnotationProject, Assignment, LabelEvent


def _assignment_for(request: HttpRequest, project_id: int, pair_id: int) -> tuple[AnnotationProject, Assignment]:
    """The project and the user's own assignment of the pair: 404 for outsiders and for pairs not theirs."""
    project, _role = selectors.project_get_for_user(request.user, project_id)
    return project, selectors.assignment_get_for_user(request.user, project, pair_id)


@require_GET
@never_cache
def annotate_pair(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """The screen; with ``?simple=&complex=`` from htmx, only the word diff of that sentence pair."""
    project, assignment = _assignment_for(request, project_id, pair_id)
    if request.htmx and "complex" in request.GET:
        try:
            simple_id, complex_id = _int_field(request.GET, "simple"), _int_field(request.GET, "complex")
            selected = screen.sentence_pair_diff(assignment.pair, simple_id, complex_id)
        except ValueError as error:
            answer = error_answer(error)
            return HttpResponse(answer.message, status=answer.status, content_type="text/plain")
        return render(request, "annotation/annotate_pair.html#diff", {"selected": selected})
    view = screen.screen_build(project=project, assignment=assignment)
    context = {"screen": view, "project": project, "pair": assignment.pair, "comment_max_chars": ITEM_COMMENT_MAX_CHARS}
    return render(request, "annotation/annotate_pair.html", context)


@require_GET
@never_cache
def annotate_state(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """The annotator's current labels, progress and notes on the pair, as JSON: what the screen reloads before it trusts itself."""
    project, assignment = _assignment_for(request, project_id, pair_id)
    return JsonResponse(screen.pair_state(project, request.user, assignment.pair))


@require_POST
def label_save(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    project, assignment = _assignment_for(request, project_id, pair_id)
    try:
        simple_id = _int_field(request.POST, "simple_sentence_id")
        complex_id = _int_field(request.POST, "complex_sentence_id")
        expected = _optional_int_field(request.POST, "expected_previous")
        seconds = services.seconds_spent_parse(request.POST.get("seconds_spent"))
        event = services.label_record(
            project=project,
            annotator=request.user,
            pair=assignment.pair,
            simple_sentence_id=simple_id,
            complex_sentence_id=complex_id,
            label=request.POST.get("label", ""),
            expected_previous=expected,
            seconds_spent=seconds,
            client_action_id=request.POST.get("client_action_id", ""),
        )
    except services.LabelConflict as conflict:
        current = conflict.current
        return error_json(conflict, current={"label": current.new_label if current else "", "event": current.pk if current else None})
    except (ValueError, PermissionError) as error:
        return error_json(error)
    return JsonResponse(_event_state(event, project, assignment))


@require_POST
def label_undo(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    project, assignment = _assignment_for(request, project_id, pair_id)
    try:
        event = services.label_undo(
            project=project, annotator=request.user, pair=assignment.pair, client_action_id=request.POST.get("client_action_id", "")
        )
    except (ValueError, PermissionError) as error:
        return error_json(error)
    if event is None:
        progress = screen.pair_progress(project, request.user, assignment.pair)
        return JsonResponse({"undone": False, "message": "Nothing to undo in this pair.", "progress": progress.as_dict()})
    return JsonResponse({"undone": True, "message": "Undone.", **_event_state(event, project, assignment)})


@require_POST
def item_event_save(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """Skip, flag, unflag or comment on the pair (keys s, f, c); a skip answers where to go next."""
    project, assignment = _assignment_for(request, project_id, pair_id)
    try:
        event = services.item_event_record(
            project=project,
            annotator=request.user,
            pair=assignment.pair,
            kind=request.POST.get("kind", ""),
            text=request.POST.get("text", ""),
            client_action_id=request.POST.get("client_action_id", ""),
        )
    except (ValueError, PermissionError) as error:
        return error_json(error)
    answer = {"kind": event.kind, "event": event.pk, "notes": screen.item_notes(project, request.user, assignment.pair).as_dict()}
    if event.kind == event.Kind.SKIP:
        following = screen.next_assignment_after(assignment)
        answer["next_url"] = (
            reverse("annotation:annotate_pair", args=[project.pk, following.pair_id]) if following
            else reverse("annotation:project_detail", args=[project.pk])
        )  # fmt: skip
    return JsonResponse(answer)


@require_POST
def assignment_done(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    project, assignment = _assignment_for(request, project_id, pair_id)
    assignment = services.assignment_complete(project=project, annotator=request.user, pair=assignment.pair)
    if request.htmx:
        return render(
            request, "annotation/annotate_pair.html#done", {"project": project, "pair": assignment.pair, "assignment": assignment}
        )
    messages.success(request, "This pair is marked done.")
    return redirect("annotation:annotate_pair", project_id=project.pk, pair_id=assignment.pair_id)


def _event_state(event: LabelEvent, project: AnnotationProject, assignment: Assignment) -> dict:
    """What the screen updates after a write: the sentence pair's label and event id, and the pair's progress."""
    progress = screen.pair_progress(project, event.annotator, assignment.pair)  # event.annotator is request.user: no query
    return {
        "simple": event.simple_sentence_id,
        "complex": event.complex_sentence_id,
        "label": event.new_label,
        "event": event.pk,
        "progress": progress.as_dict(),
    }


def _int_field(data, name: str) -> int:
    raw = str(data.get(name, "")).strip()
    if not raw.isdigit():
        raise ValueError(f"{name}: {raw!r} is not a sentence or event id (a whole number)")
    return int(raw)


def _optional_int_field(data, name: str) -> int | None:
    return _int_field(data, name) if str(data.get(name, "")).strip() else None

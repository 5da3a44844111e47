"""The annotation screen of one document pair and its writes (label, edit, undo, skip/flag/comment, done). Thin.

Writes answer JSON for the screen's script (``static/js/annotate.js``), which saves
each action at once, retries network failures and shows conflicts; a refused write
says why in ``error`` with the HTTP status that fits (400 bad input, 403 not
assigned, 409 changed in another tab, with the current label). Each write may carry the
screen's ``client_action_id``: a resend of an action already stored is answered as it was
stored, not stored again (:mod:`annotation.client_actions`). The screen and its state
(``annotate_state``) are never cached: a page brought back by Back reads what the server holds.
An edit of the alignment view (:mod:`annotation.labelling.edits`) is one action of several label
events, and an undo takes back a whole action; both answer every sentence pair they changed.
"Done" answers where to go next: the annotator's next open pair, else My tasks.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from alignment.errors import Conflict, ServiceError, error_answer, error_json
from annotation import selectors, services
from annotation.labelling import bulk, edits, keys, refresh, screen, segmentation
from annotation.models import ITEM_COMMENT_MAX_CHARS, AnnotationProject, Assignment, LabelEvent, ProjectMembership
from annotation.projects import worklist
from annotation.training import adaptation


def _assignment_for(request: HttpRequest, project_id: int, pair_id: int) -> tuple[AnnotationProject, Assignment]:
    """The project and the user's own assignment of the pair: 404 for outsiders and for pairs not theirs."""
    project, _role = selectors.project_get_for_user(request.user, project_id)
    return project, selectors.assignment_get_for_user(request.user, project, pair_id)


@require_GET
@never_cache
def annotate_pair(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """The screen; with ``?simple=&complex=`` from htmx, only the word diff of that sentence pair.

    A manager opening a pair of the project that is not assigned to them (a link from a report, an annotator's URL)
    is told so, with the pair's review, instead of "Page not found"; anyone else gets the 404."""
    project, role = selectors.project_get_for_user(request.user, project_id)
    assignment = selectors.assignment_find(request.user, project, pair_id)
    if assignment is None:
        pair = project.pairs.filter(pk=pair_id).first() if role == ProjectMembership.Role.MANAGER else None
        if pair is None:
            raise Http404("no such assignment")
        return render(request, "annotation/not_assigned.html", {"project": project, "pair": pair}, status=404)
    if request.htmx and "complex" in request.GET:
        try:
            simple_id, complex_id = _int_field(request.GET, "simple"), _int_field(request.GET, "complex")
            selected = screen.sentence_pair_diff(assignment.pair, simple_id, complex_id)
        except ValueError as error:
            answer = error_answer(error)
            return HttpResponse(answer.message, status=answer.status, content_type="text/plain")
        return render(request, "annotation/annotate_pair.html#diff", {"selected": selected})
    view = screen.screen_build(project=project, assignment=assignment)
    context = {
        "screen": view,
        "project": project,
        "pair": assignment.pair,
        "comment_max_chars": ITEM_COMMENT_MAX_CHARS,
        "help_views": [(title, keys.help_rows(keys.SCREEN_KEYS, name)) for name, title in keys.SCREEN_VIEWS],
        "keymap": keys.keymap(keys.SCREEN_KEYS),
        "bulk": bulk.bulk_offer(project).as_dict(),
        "segment": segmentation.segment_screen(assignment.pair),
    }
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
            source=edits.source_parse(request.POST.get("source", ""), "source"),
            seconds_spent=seconds,
            client_action_id=request.POST.get("client_action_id", ""),
            shown=request.POST.get("suggestions", ""),
        )
    except services.LabelConflict as conflict:
        current = conflict.current
        return error_json(conflict, current={"label": current.new_label if current else "", "event": current.pk if current else None})
    except (ValueError, PermissionError) as error:
        return error_json(error)
    return JsonResponse(_event_state(event, project, assignment))


@require_POST
def label_edit(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """An edit of the alignment view: several label changes (``changes``, JSON), stored together or not at all."""
    project, assignment = _assignment_for(request, project_id, pair_id)
    try:
        events = edits.label_edit_record(
            project=project,
            annotator=request.user,
            pair=assignment.pair,
            changes=edits.changes_parse(request.POST.get("changes", "")),
            seconds_spent=services.seconds_spent_parse(request.POST.get("seconds_spent")),
            client_action_id=request.POST.get("client_action_id", ""),
            shown=request.POST.get("suggestions", ""),
            bulk_threshold=request.POST.get("bulk_threshold", ""),
        )
    except edits.EditConflict as conflict:
        current = conflict.current
        state = {"label": current.new_label if current else "", "event": current.pk if current else None}
        return error_json(conflict, current=state, simple=conflict.change.simple, complex=conflict.change.complex)
    except (ValueError, PermissionError) as error:
        return error_json(error)
    return JsonResponse(_events_state(events, project, assignment, request.user))


@require_GET
@never_cache
def suggestions_refresh(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """The unlabelled sentences' suggestions re-decoded given the annotator's labels (:mod:`annotation.labelling.refresh`), as JSON.

    ``?from=`` goes on where an earlier answer's ``next`` says. 429 with ``Retry-After`` while another refresh of theirs
    runs, or the server's refresh slots are all taken.
    """
    start = request.GET.get("from", "0").strip()
    if not start.isdigit():
        return error_json(ServiceError(f"from: {start[:20]!r} is not a whole number", field="from"))
    try:
        with refresh.refresh_turn(request.user.pk):  # first: a refresh refused costs one query, not the access checks too
            project, assignment = _assignment_for(request, project_id, pair_id)
            return JsonResponse(refresh.refreshed_suggestions(project, request.user, assignment.pair, start=int(start)))
    except refresh.RefreshBusy as busy:
        answer = JsonResponse({"error": str(busy), "retry_after": busy.retry_after}, status=429)
        answer["Retry-After"] = str(busy.retry_after)
        return answer
    except refresh.RefreshUnavailable as error:
        return error_json(error)


@require_POST
def label_undo(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """Undo the last action in the pair: one label, or every label of an edit (``changes`` lists them all)."""
    project, assignment = _assignment_for(request, project_id, pair_id)
    try:
        events = services.label_undo_action(
            project=project, annotator=request.user, pair=assignment.pair, client_action_id=request.POST.get("client_action_id", "")
        )
    except (ValueError, PermissionError) as error:
        return error_json(error)
    if not events:
        progress = screen.pair_progress(project, request.user, assignment.pair)
        return JsonResponse({"undone": False, "message": "Nothing to undo in this pair.", "progress": progress.as_dict()})
    last = events[-1]
    answer = {"simple": last.simple_sentence_id, "complex": last.complex_sentence_id, "label": last.new_label, "event": last.pk}
    return JsonResponse({"undone": True, "message": "Undone.", **answer, **_events_state(events, project, assignment, request.user)})


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
        following = worklist.next_open_assignment(assignment)
        answer["next_url"] = (
            reverse("annotation:annotate_pair", args=[following.project_id, following.pair_id]) if following
            else reverse("annotation:project_detail", args=[project.pk])
        )  # fmt: skip
    return JsonResponse(answer)


@require_POST
def assignment_done(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """Mark the pair done and, when that finished something new, queue the project's automatic adaptation. The screen
    (JSON) is told where to go next: the annotator's next open pair, else My tasks."""
    project, assignment = _assignment_for(request, project_id, pair_id)
    assignment, finished = services.assignment_complete(project=project, annotator=request.user, pair=assignment.pair)
    if finished:  # "done" again on an unchanged finished pair queues nothing: the adaptation has it already
        adaptation.adaptation_queue(project=project, pair=assignment.pair, by=request.user)  # refreshes the unstarted pairs' suggestions
    if request.htmx:
        return render(
            request, "annotation/annotate_pair.html#done", {"project": project, "pair": assignment.pair, "assignment": assignment}
        )
    if "application/json" not in request.headers.get("Accept", ""):
        messages.success(request, "This pair is marked done.")
        return redirect("annotation:annotate_pair", project_id=project.pk, pair_id=assignment.pair_id)
    following = worklist.next_open_assignment(assignment)
    if following is not None:
        next_url = reverse("annotation:annotate_pair", args=[following.project_id, following.pair_id])
    else:
        next_url = reverse("annotation:task_list")
        messages.success(request, worklist.finished_text(request.user))
    return JsonResponse({"done": True, "completed_at": assignment.completed_at.isoformat(), "next_url": next_url})


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


def _events_state(events: list[LabelEvent], project: AnnotationProject, assignment: Assignment, annotator: AbstractBaseUser) -> dict:
    """What the screen updates after an edit or an undo: every sentence pair it changed, and the pair's progress."""
    changes = [{"simple": e.simple_sentence_id, "complex": e.complex_sentence_id, "label": e.new_label, "event": e.pk} for e in events]
    return {"changes": changes, "progress": screen.pair_progress(project, annotator, assignment.pair).as_dict()}


def _int_field(data, name: str) -> int:
    raw = str(data.get(name, "")).strip()
    if not raw.isdigit():
        raise ValueError(f"{name}: {raw!r} is not a sentence or event id (a whole number)")
    return int(raw)


def _optional_int_field(data, name: str) -> int | None:
    return _int_field(data, name) if str(data.get(name, "")).strip() else None


ID_MAX = 2**31 - 1  # the largest id (and split offset) a field may name: beyond it the database refuses the number


@require_POST
def segment_edit(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """A sentence split, merge or undo from the screen's dialog (a plain form): done or refused, said on the screen."""
    project, assignment = _assignment_for(request, project_id, pair_id)
    back = reverse("annotation:annotate_pair", args=[project.pk, assignment.pair_id])
    try:
        fields = {name: _optional_int_field(request.POST, name) for name in ("sentence", "offset", "expected_undo")}
        for name, value in fields.items():
            if value is not None and value > ID_MAX:
                raise ValueError(f"{name}: {value} is out of range")
        outcome = segmentation.segment_edit(
            project=project, user=request.user, pair=assignment.pair, operation=request.POST.get("operation", "")[:40],
            sentence_id=fields["sentence"], offset=fields["offset"], side=request.POST.get("side", "")[:16],
            keep_labels=request.POST.get("keep_labels") == "1", expected_undo=fields["expected_undo"],
        )  # fmt: skip
    except (ValueError, PermissionError, Conflict) as error:
        messages.error(request, f"The sentences were not changed: {error_answer(error).message}")
        return redirect(back)
    messages.success(request, outcome.message)
    return redirect(back)

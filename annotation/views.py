"""Project pages: list, create, detail with progress, members and roles, assignment. Thin."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from alignment.errors import error_answer, form_error
from alignment.paging import list_page
from alignment.selectors import PAIR_ORDER, pairs_in_order
from annotation import selectors, services
from annotation.adjudication.forms import ReviewDiffForm
from annotation.adjudication.review import pair_review_read, reviewer_changes
from annotation.forms import (
    MemberForm,
    ParagraphLinksForm,
    ProjectCreateForm,
    QueueActionForm,
    form_errors_text,
)
from annotation.labelling import bulk, item_events, keys, quality
from annotation.labelling import queue as queue_mode
from annotation.labels import LABELS, pair_verified, verified_pair_ids
from annotation.models import ProjectMembership
from annotation.projects import worklist
from annotation.projects.assigning import assigning_in_background
from annotation.projects.summary import project_summary
from annotation.projects.views import assigning_figures, manager_project


def project_list(request: HttpRequest) -> HttpResponse:
    rows = [(project, project.role) for project in selectors.projects_with_role(request.user).select_related("corpus")]
    return render(
        request, "annotation/project_list.html", {"rows": rows, "may_create": selectors.corpora_for_projects(request.user).exists()}
    )


def task_list(request: HttpRequest) -> HttpResponse:
    """The pairs assigned to me, in every project, filtered by state and project, a page at a time."""
    state, project_id = request.GET.get("state", ""), request.GET.get("project", "")
    tasks = worklist.task_list_read(request.user, state=state, project=project_id)
    context = {
        "tasks": list_page(request.GET, tasks.rows, anchor="task-list"),
        "all_count": tasks.all_count,
        "counts": tasks.counts,
        "state": state if state in tasks.counts else "",
        "projects": tasks.projects,
        "project_id": project_id,
    }
    return render(request, "annotation/task_list.html", context)


@require_http_methods(["GET", "POST"])
def project_create(request: HttpRequest) -> HttpResponse:
    corpora = selectors.corpora_for_projects(request.user)
    form = ProjectCreateForm(request.POST or None, corpora=corpora, initial={"corpus": request.GET.get("corpus")})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        run = data["suggestion_run"] or data["corpus"].alignment_runs.filter(status="succeeded").first()
        try:
            project = services.project_create(
                name=data["name"],
                corpus=data["corpus"],
                created_by=request.user,
                suggestion_run=run,
                guidelines=data["guidelines"],
                overlap=data["overlap"],
                strategy=data["strategy"],
            )
        except ValueError as error:
            form_error(form, error)
        else:
            messages.success(request, f"Project {project.name} created. Add annotators, then assign the pairs.")
            return redirect("annotation:project_detail", project_id=project.pk)
    return render(request, "annotation/project_create.html", {"form": form})


def project_detail(request: HttpRequest, project_id: int) -> HttpResponse:
    """The project: progress over every assignment, a page of the assignments (an annotator's own) and of the pairs to
    review (managers), quality control, flags and comments, time per label, members."""
    project, role = selectors.project_get_for_user(request.user, project_id)
    annotator = request.user if role == ProjectMembership.Role.ANNOTATOR else None
    summary = project_summary(project, annotator=annotator)
    assignments = list_page(
        request.GET, selectors.project_progress_ids(project, annotator=annotator), param="assignments_page", anchor="assignments",
        present=lambda ids: selectors.project_progress(project, ids),
    )  # fmt: skip
    pairs = list_page(
        request.GET, project.pairs.order_by(*PAIR_ORDER).values_list("pk", flat=True), param="pairs_page", anchor="review-pairs",
        present=pairs_in_order,
    )  # fmt: skip
    context = {
        "project": project,
        "role": role,
        "progress": assignments,
        "assignment_count": summary.totals.assignments,
        "percent": summary.percent,
        "members": project.memberships.select_related("user").order_by("role", "user__username"),
        "pairs": pairs if role == ProjectMembership.Role.MANAGER else None,
        "pair_count": pairs.count,
        "member_form": MemberForm(),
        "shortfall": summary.shortfall,
        **assigning_figures(project, pairs.count, background=role == ProjectMembership.Role.MANAGER and assigning_in_background(project)),
        "corpus_visible": selectors.corpus_visible(request.user, project),
        "label_times": summary.label_times,
        "idle_minutes": round(settings.ANNOTATION_IDLE_SECONDS / 60),
        "verified_pairs": verified_pair_ids(project, pair_id__in=[pair.pk for pair in pairs.rows])
        if role == ProjectMembership.Role.MANAGER
        else set(),
        "reviewer_changes": reviewer_changes(project, request.user) if annotator is not None else [],
        "accuracy": summary.accuracy,
        "gold_item_count": project.gold_items.count(),
        "item_events": item_events.item_event_summary(project, request.user, role),
        "bulk": bulk.bulk_summary(project),
    }
    return render(request, "annotation/project_detail.html", context)


@require_POST
def project_bulk_target(request: HttpRequest, project_id: int) -> HttpResponse:
    """A manager sets the precision target bulk accept is offered for (:mod:`annotation.labelling.bulk`)."""
    project = manager_project(request, project_id)
    try:
        bulk.bulk_target_set(project, request.POST.get("bulk_precision_target", ""))
    except ValueError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Bulk accept's precision target is now {project.bulk_precision_target:.3f}.")
    return redirect(reverse("annotation:project_detail", args=[project.pk]) + "#bulk")


def pair_review(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """Adjudication of one document pair: the annotators' alignments side by side, every labelled sentence pair
    with each annotator's label (open ones first), a decision per row by button or key, verify; the annotators'
    flags and comments, and the word diff of the focused row (``?simple=&complex=``; from htmx only that card)."""
    from annotation.labelling.screen import sentence_pair_diff

    project = manager_project(request, project_id)
    pair = get_object_or_404(project.pairs.select_related("complex_document", "simple_document"), pk=pair_id)
    show = request.GET.get("show") if request.GET.get("show") in ("all", "bulk") else "open"
    asked = ReviewDiffForm(request.GET)
    if not asked.is_valid():
        return HttpResponse(form_errors_text(asked), status=400, content_type="text/plain")
    review = None if request.htmx and asked.sentence_ids() else pair_review_read(project, pair, show=show)
    ids = asked.sentence_ids() or ((review.shown[0].simple.pk, review.shown[0].complex.pk) if review.shown else None)
    try:
        selected = sentence_pair_diff(pair, *ids) if ids else None
    except ValueError as error:  # a sentence of another pair: named
        return HttpResponse(str(error), status=400, content_type="text/plain")
    if review is None:
        return render(request, "annotation/pair_review.html#review-diff", {"selected": selected})
    context = {
        "project": project,
        "pair": pair,
        "review": review,
        "states": review.shown,
        "show": show,
        "labels": LABELS,
        "annotators": review.annotators,
        "open_count": review.open_count,
        "total": review.total,
        "verified": pair_verified(project, pair),
        "selected": selected,
    }
    return render(request, "annotation/pair_review.html", context)


@require_POST
def pair_adjudicate(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """Set the final label of one sentence pair; from htmx, answers that table row and the count of open ones."""
    project = manager_project(request, project_id)
    pair = get_object_or_404(project.pairs.all(), pk=pair_id)
    show = request.POST.get("show") if request.POST.get("show") in ("all", "bulk") else "open"
    back = f"{reverse('annotation:pair_review', args=[project.pk, pair.pk])}?show={show}"
    try:
        previous = int(request.POST["expected_previous"]) if request.POST.get("expected_previous") else None
        simple_id, complex_id = int(request.POST.get("simple_sentence_id", "")), int(request.POST.get("complex_sentence_id", ""))
    except ValueError as exc:
        messages.error(request, f"Not saved: {exc}")
        return redirect(back)
    error = ""
    try:
        services.adjudicate(
            project=project,
            reviewer=request.user,
            pair=pair,
            simple_sentence_id=simple_id,
            complex_sentence_id=complex_id,
            label=request.POST.get("label", ""),
            expected_previous=previous,
        )
    except (ValueError, services.LabelConflict) as exc:
        error = str(exc)
    if not request.htmx:
        if error:
            messages.error(request, f"Not saved: {error}")
        return redirect(back)
    review = pair_review_read(project, pair, show=show)
    state = next((s for s in review.states if (s.simple.pk, s.complex.pk) == (simple_id, complex_id)), None)
    if state is None:  # a sentence pair nobody labelled: nothing to show in its place
        return HttpResponse("")
    line = next(line for line in review.lines if line.simple.pk == simple_id)
    context = {
        "project": project,
        "pair": pair,
        "review": review,
        "state": state,
        "line": line,
        "labels": LABELS,
        "show": show,
        "error": error,
        "oob": True,
        "open_count": review.open_count,
        "total": review.total,
    }
    parts = ("review-row", "review-lead", "curation-line")  # the row, then out-of-band: the counts, the side-by-side line
    return HttpResponse(b"".join(render(request, f"annotation/pair_review.html#{part}", context).content for part in parts))


@require_POST
def pair_verify(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    project = manager_project(request, project_id)
    pair = get_object_or_404(project.pairs.all(), pk=pair_id)
    verified = request.POST.get("verified", "1") == "1"
    try:
        services.pair_verify(project=project, pair=pair, by=request.user, verified=verified)
    except ValueError as error:
        messages.error(request, f"Not verified: {error}")
    else:
        messages.success(request, "Pair verified: it is now gold." if verified else "Verification withdrawn.")
    return redirect("annotation:pair_review", project_id=project.pk, pair_id=pair.pk)


@require_POST
def project_gold_items(request: HttpRequest, project_id: int) -> HttpResponse:
    project = manager_project(request, project_id)
    created = quality.gold_items_from_verified(project)
    messages.success(request, f"{created} new gold test item{'s' if created != 1 else ''} from the verified pairs.")
    return redirect("annotation:project_detail", project_id=project.pk)


@require_http_methods(["GET", "POST"])
def project_queue(request: HttpRequest, project_id: int) -> HttpResponse:
    """Queue mode: one candidate pair at a time with its context; a POST records the answer (or skip) and shows
    the next; an undo shows the item it brought back (``?item=``). From htmx, a POST answers the next card alone."""
    project, role = selectors.project_get_for_user(request.user, project_id)
    order = request.GET.get("order", "uncertainty")
    if order not in queue_mode.ORDERS:
        messages.error(request, f"unknown queue order {order!r}; showing uncertainty order")
        order = "uncertainty"
    queue_url = f"{reverse('annotation:project_queue', args=[project.pk])}?order={order}"
    context = {"project": project, "role": role, "order": order, "orders": queue_mode.ORDERS, "notice": None}
    ref = request.GET.get("item", "")
    if request.method == "POST":
        ref, context["notice"] = _queue_action(request, project)
        if not request.htmx:
            if context["notice"]:
                getattr(messages, context["notice"][0])(request, context["notice"][1])
            return redirect(f"{queue_url}&item={ref}" if ref else queue_url)
    context.update(queue_mode.queue_card(project, request.user, order, ref))
    if request.htmx:
        return render(request, "annotation/queue.html#queue-main", context)
    context.update(help_rows=keys.help_rows(keys.QUEUE_KEYS, keys.QUEUE), keymap=keys.keymap(keys.QUEUE_KEYS))
    return render(request, "annotation/queue.html", context)


def _queue_action(request: HttpRequest, project) -> tuple[str, tuple[str, str] | None]:
    """Record a queue POST: the item to show next ("" for the queue's next) and the note to show ("info"/"error", text)."""
    form = QueueActionForm(request.POST)
    if not form.is_valid():
        return "", ("error", f"Not saved: {form_errors_text(form)}")
    data = form.cleaned_data
    item = {"project": project, "annotator": request.user, "kind": data["kind"], "item_id": data["item_id"]}
    try:
        if data["action"] == "undo":
            undone = queue_mode.queue_undo(project=project, annotator=request.user)
            return undone.item_ref or "", ("info", undone.message.capitalize() + ".")
        if data["action"] == "skip":
            queue_mode.queue_skip(**item)
        else:
            queue_mode.queue_answer(**item, label=data["label"], seconds_spent=data["seconds_spent"])
    except (PermissionError, ValueError, services.LabelConflict) as error:
        answer = error_answer(error)
        if answer.status == 403:  # as on the annotation screen: a write the role does not allow is a 403
            raise PermissionDenied(answer.message) from None
        return "", ("error", f"Not saved: {answer.message}")
    return "", None


@require_http_methods(["GET", "POST"])
def paragraphs_step(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    """Step 1: check and correct which paragraphs align, before labelling sentences."""
    from annotation.labelling import screen

    project, _role = selectors.project_get_for_user(request.user, project_id)
    assignment = selectors.assignment_get_for_user(request.user, project, pair_id)
    pair = assignment.pair
    if request.method == "POST":
        form = ParagraphLinksForm(request.POST)
        refusal = "" if form.is_valid() else form_errors_text(form)
        if not refusal:
            try:
                services.paragraph_correction_record(project=project, annotator=request.user, pair=pair, links=form.cleaned_data["link"])
            except ValueError as error:
                refusal = str(error)
        if refusal:
            messages.error(request, f"Paragraph alignment not saved: {refusal}")
            return redirect("annotation:paragraphs_step", project_id=project.pk, pair_id=pair.pk)
        messages.success(request, "Paragraph alignment saved; the sentences below follow it.")
        return redirect("annotation:annotate_pair", project_id=project.pk, pair_id=pair.pk)
    run, _note = screen.suggestion_run_for(project, pair)
    groups, own = screen.paragraph_groups_for(project, request.user, pair, run)
    linked = {(c, s_) for group in groups for c in group.complex_paragraphs for s_ in group.simple_paragraphs}
    complex_blocks = screen.paragraph_blocks(pair.complex_document_id)
    simple_blocks = screen.paragraph_blocks(pair.simple_document_id)
    rows = [(c, block, [(s_, (c, s_) in linked) for s_ in range(len(simple_blocks))]) for c, block in enumerate(complex_blocks)]
    context = {"project": project, "pair": pair, "rows": rows, "complex_blocks": complex_blocks, "simple_blocks": simple_blocks}
    context.update(own=own, run=run)
    return render(request, "annotation/paragraphs_step.html", context)


@require_POST
def mined_pairs_send(request: HttpRequest, job_id: int) -> HttpResponse:
    """Put selected mined pairs, or a random sample of the filtered ones, into a new annotation project."""
    from alignment.mining import browse
    from alignment.mining.models import MiningJob
    from annotation.intake.from_mining import mined_pairs_choose, mined_pairs_to_project

    job = get_object_or_404(MiningJob, pk=job_id, source_corpus__in=selectors.corpora_for_projects(request.user))
    back = reverse("alignment:mining_job", kwargs={"job_id": job.pk}) + "?" + request.POST.get("filters", "")
    try:
        filters = browse.filters_from(QueryDict(request.POST.get("filters", "")))
        pool = browse.mined_pairs(job, filters)
        selected = [int(pk) for pk in request.POST.getlist("selected")]
        sample = int(request.POST.get("sample") or 0)
        chosen = mined_pairs_choose(pool, selected=selected, sample=sample, seed=int(request.POST.get("seed") or 0))
        project = mined_pairs_to_project(
            job=job, pairs=chosen, name=request.POST.get("name", "").strip() or f"Mined pairs of job {job.pk}", by=request.user
        )
    except ValueError as error:
        messages.error(request, str(error))
        return redirect(back)
    messages.success(
        request,
        f"Project {project.name}: {len(chosen)} mined item{pluralize(len(chosen))} on {project.pairs.count()} document "
        f"pair{pluralize(project.pairs.count())} of corpus "
        f"{project.corpus.name}, complex side first ({'; '.join(project.suggestion_run.config['complex_side'])}). The mined "
        f"links are the first suggestions; alignment run #{project.pending_suggestion_run_id} is queued and will suggest a "
        "link for every simple sentence. Next: add annotators, then assign the pairs.",
    )
    return redirect("annotation:project_detail", project_id=project.pk)

"""The agreement dashboard: for managers and viewers (annotators do not see each other's labels). Thin: the figures come
from :mod:`annotation.adjudication.agreement_data`."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from alignment.paging import list_page
from annotation import selectors
from annotation.adjudication.agreement_data import project_agreement
from annotation.labels import LABELS
from annotation.models import LabelEvent, ProjectMembership


def project_agreement_view(request: HttpRequest, project_id: int) -> HttpResponse:
    """The agreement dashboard: for managers and viewers (annotators do not see each other's labels)."""
    project, role = selectors.project_get_for_user(request.user, project_id)
    if role == ProjectMembership.Role.ANNOTATOR:
        raise PermissionDenied("the agreement dashboard is for managers and viewers")
    per_pair = list_page(
        request.GET,
        project.pairs.select_related("complex_document", "simple_document").order_by("pk"),
        param="pairs_page",
        anchor="per-pair",
    )
    agreement = project_agreement(project, pairs=per_pair.rows)
    pairs = list(agreement.shown.confusion_matrices)
    chosen = (request.GET.get("a", ""), request.GET.get("b", ""))
    if chosen not in pairs and (chosen[1], chosen[0]) not in pairs:
        chosen = pairs[0] if pairs else None
    confusion = list(zip(LABELS, agreement.shown.confusion(*chosen))) if chosen else None
    context = {
        "project": project,
        "role": role,
        "agreement": agreement,
        "labels": LABELS,
        "chosen": chosen,
        "annotator_pairs": pairs,
        "confusion": confusion,
        "per_pair": per_pair,
        "bulk_labels": LabelEvent.objects.filter(project=project, source=LabelEvent.Source.BULK).count(),  # partial index
    }
    return render(request, "annotation/project_agreement.html", context)

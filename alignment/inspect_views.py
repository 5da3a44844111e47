"""The researcher's inspection view of a document pair: heatmap, candidate table, word diff. Thin: reads live in inspection.py."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from alignment import inspection, selectors


@require_GET
def pair_inspect(request: HttpRequest, pair_id: int) -> HttpResponse:
    """The whole page, or only the candidate table when htmx asks for ``#candidates`` (sort / filter)."""
    pair = selectors.pair_get_for_user(request.user, pair_id)
    table_only = bool(request.htmx and request.htmx.target == "candidates")
    view = inspection.pair_inspection_build(pair=pair, query=request.GET, user=request.user, with_heatmap=not table_only)
    context = {"pair": pair, "corpus": pair.corpus, "view": view, "table_only": table_only}
    if table_only:
        # htmx swaps only 2xx answers, so the table fragment carries its error messages with a 200.
        return render(request, "alignment/pair_inspect.html#candidates", context)
    return render(request, "alignment/pair_inspect.html", context, status=400 if view.errors else 200)


@require_GET
def candidate_diff(request: HttpRequest, candidate_id: int) -> HttpResponse:
    """The diff fragment for htmx; a plain visit goes to the full page with the candidate open."""
    candidate = inspection.candidate_get_for_user(request.user, candidate_id)
    if not request.htmx:
        page = reverse("alignment:pair_inspect", args=[candidate.pair_id])
        return redirect(f"{page}?run={candidate.run_id}&candidate={candidate.pk}")
    context = {
        "selected": candidate,
        "diff": inspection.word_diff(candidate.complex_sentence.text, candidate.simple_sentence.text),
        "group_members": inspection.candidate_group_members(candidate),
        "scores": inspection.candidate_scores(candidate, candidate.run.measures),
        "marginal_note": inspection.marginal_notes([candidate]).get(candidate.pk),
        "human": inspection.candidate_human(request.user, candidate),
    }
    return render(request, "alignment/pair_inspect.html#diff", context)

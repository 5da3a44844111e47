"""The human labels the inspection page draws over a pair's heatmap and candidate table.

Registered with :func:`alignment.human_labels.human_labels_provider_set` in ``AnnotationConfig.ready``
(alignment may not import annotation). Who sees what: managers and viewers of a project that holds
the pair (staff are managers everywhere). Annotators never see other people's labels, as on the
agreement dashboard, and a user without a role in the project sees none of its labels.

Which labels: the project where the pair is verified gold comes first; otherwise the one with the most
labelled items. Per item, the label review settled (adjudicated, or every annotator agreeing), else
what the annotators said so far.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from alignment.human_labels import HumanLabel, HumanLabels
from alignment.models import DocumentPair
from annotation.adjudication.review import ItemState, pair_item_states
from annotation.labels import pair_verified
from annotation.models import LabelEvent, ProjectMembership
from annotation.selectors import projects_with_role

ROLES_THAT_SEE_LABELS = (ProjectMembership.Role.MANAGER, ProjectMembership.Role.VIEWER)


def pair_human_labels(*, user: AbstractBaseUser | AnonymousUser, pair: DocumentPair) -> HumanLabels | None:
    """The labels of ``pair`` that ``user`` may see (None when there are none)."""
    projects = projects_with_role(user).filter(pairs=pair, role__in=ROLES_THAT_SEE_LABELS).order_by("-created_at", "-pk")
    found = []
    for project in projects:
        verified = pair_verified(project, pair) is not None
        states = pair_item_states(project, pair)
        if states:
            found.append((verified, len(states), project, states))
    if not found:
        return None
    found.sort(key=lambda entry: (not entry[0], -entry[1]))  # stable: newest first among equals
    verified, _, project, states = found[0]
    return HumanLabels(
        project=project.name,
        verified=verified,
        items={(state.simple.index, state.complex.index): _human_label(state, verified) for state in states},
        other_projects=tuple(entry[2].name for entry in found[1:]),
    )


def _human_label(state: ItemState, verified: bool) -> HumanLabel:
    detail = " · ".join(f"{name}: {LabelEvent.label_name(label) if label else 'still working'}" for name, label in state.labels.items())
    if state.final is not None:
        return HumanLabel(label=state.final, status="verified" if verified else state.status, detail=detail)
    given = {label for label in state.labels.values() if label}
    if len(given) == 1:
        return HumanLabel(label=given.pop(), status=state.status, detail=detail)
    return HumanLabel(label="", status="annotators disagree", detail=detail)

"""A project's people: finding users to add, creating an annotator's account, pairs short of annotators, time per label."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.tokens import default_token_generator
from django.db import connection, transaction
from django.db.models import Count, ExpressionWrapper, F, IntegerField, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from alignment.selectors import sentence_count
from annotation.models import AnnotationProject, ProjectMembership
from annotation.services import membership_set

MEMBER_SEARCH_LIMIT = 10


def member_candidates(query: str) -> QuerySet:
    """Active users whose username starts with ``query`` (case-insensitive), the first ``MEMBER_SEARCH_LIMIT``."""
    return get_user_model().objects.filter(is_active=True, username__istartswith=query).order_by("username")[:MEMBER_SEARCH_LIMIT]


@transaction.atomic
def annotator_account_create(*, project: AnnotationProject, username: str, email: str = "") -> AbstractBaseUser:
    """A new user without a usable password, an annotator of ``project``; they choose one through an invite link."""
    user = get_user_model().objects.create_user(username=username, email=email)
    membership_set(project=project, user=user, role=ProjectMembership.Role.ANNOTATOR)
    return user


def invite_path(user: AbstractBaseUser) -> str:
    """Where ``user`` chooses a password: Django's password-reset token, valid once and for PASSWORD_RESET_TIMEOUT."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("accounts:invite_accept", kwargs={"uidb64": uid, "token": default_token_generator.make_token(user)})


def overlap_shortfall(project: AnnotationProject) -> dict:
    """How far the project is from ``overlap`` annotators per pair.

    ``annotators``: the project's annotators; ``short_pairs``: pairs with fewer assignments than
    the overlap; ``missing_sentences``: the simple sentences the lacking assignments would label,
    so progress can be counted against the overlap rather than against the assignments that exist.
    """
    annotators = ProjectMembership.objects.filter(project=project, role=ProjectMembership.Role.ANNOTATOR).count()
    lacking = ExpressionWrapper(Value(project.overlap) - F("assigned"), output_field=IntegerField())
    short = (
        project.pairs.annotate(assigned=Count("assignments", filter=Q(assignments__project=project)))
        .filter(assigned__lt=project.overlap)
        .annotate(simple_total=sentence_count("simple_document"))  # counted for the short pairs only
        .aggregate(pairs=Count("pk"), missing=Coalesce(Sum(lacking * F("simple_total")), 0))
    )  # in the database: one row, however many pairs
    return {
        "annotators": annotators,
        "short_pairs": short["pairs"],
        "missing_sentences": short["missing"],
        "phrase": overlap_shortfall_phrase(short["pairs"], project.overlap),
    }


def overlap_shortfall_phrase(short_pairs: int, overlap: int, *, still: bool = False) -> str:
    """The shortfall in words: "1 pair has no annotator yet" (overlap 1), "3 pairs still have fewer than 2 annotators"."""
    subject = f"{short_pairs:,} pair{pluralize(short_pairs)} {'still ' if still else ''}{pluralize(short_pairs, 'has,have')}"
    return f"{subject} no annotator yet" if overlap == 1 else f"{subject} fewer than {overlap} annotators"


@dataclass(frozen=True)
class LabelTime:
    """Seconds annotators spent per label (the time on the item before each label, from the client).

    ``idle``: labels whose time was over ANNOTATION_IDLE_SECONDS (a tab left open over a break); they are
    counted in ``labels`` but left out of the median, the mean and the hours, which they would dominate.
    """

    annotator: str | None  # None: the whole project
    labels: int
    median_seconds: float | None  # None: every timed label was idle
    mean_seconds: float | None
    total_hours: float
    idle: int


def label_times(project: AnnotationProject, *, annotator: AbstractBaseUser | None = None) -> list[LabelTime]:
    """Per annotator (by name), then the project as a whole: labels with a time, median and mean seconds, hours, idle labels.

    Labels set by hand or by accepting a suggestion count; undo, adjudication and imported gold do
    not. Times over ANNOTATION_IDLE_SECONDS are counted as idle, not as work (see :class:`LabelTime`).
    """
    where = ["e.project_id = %s", "e.seconds_spent IS NOT NULL", "e.source IN ('human', 'suggestion')"]
    params: list = [float(settings.ANNOTATION_IDLE_SECONDS)] * 4 + [project.pk]
    if annotator is not None:
        where.append("e.annotator_id = %s")
        params.append(annotator.pk)
    worked = "FILTER (WHERE e.seconds_spent <= %s)"
    sql = f"""
        SELECT u.username, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY e.seconds_spent) {worked},
               avg(e.seconds_spent) {worked}, coalesce(sum(e.seconds_spent) {worked}, 0) / 3600.0,
               count(*) FILTER (WHERE e.seconds_spent > %s)
        FROM annotation_labelevent e JOIN {get_user_model()._meta.db_table} u ON u.id = e.annotator_id
        WHERE {" AND ".join(where)}
        GROUP BY ROLLUP (u.username)
        ORDER BY u.username NULLS LAST
    """  # table names and WHERE clauses are fixed strings; values go as parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = [LabelTime(*row) for row in cursor.fetchall()]
    return rows if annotator is None else [row for row in rows if row.annotator is not None]

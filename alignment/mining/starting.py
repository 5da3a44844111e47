"""Starting and cancelling mining jobs as the start page does: the page, ``manage.py mine`` and the REST API call these.

The settings are checked by the start page's own forms (:mod:`alignment.mining.forms`), so all three accept exactly
the same names, ranges and defaults. A setting left out takes the form's initial value, the one the page shows
filled in (an LHA job's filters on; the filters' language the corpus's when it is English or German). An empty
one means what an emptied field means on the page: the method's default by the corpus's language (retrieval, θd,
θs, MUSS's distance bound), or an LHA filter off.
"""

from __future__ import annotations

from collections.abc import Mapping

from django import forms
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import NON_FIELD_ERRORS
from django.db.models import QuerySet

from alignment import selectors
from alignment.errors import ServiceError
from alignment.mining.forms import MiningJobForm, MussJobForm
from alignment.mining.models import MiningJob
from alignment.mining.service import corpora_ready_for_mining, mining_job_cancel, mining_job_create
from alignment.models import Corpus

FORMS: dict[str, type[forms.Form]] = {"lha": MiningJobForm, "muss": MussJobForm}
# Emptied on the form, these take the method's default; LHA's other empty settings (its filters) stay None: off.
_DEFAULTED_WHEN_EMPTY = {"lha": {"retrieval", "theta_d", "theta_s"}, "muss": set(MussJobForm.base_fields)}


def mining_targets(user: AbstractBaseUser | None, corpus: Corpus) -> QuerySet[Corpus]:
    """The corpora an LHA job from ``corpus`` may mine towards: the ones ``user`` may see (the shell: all), but itself."""
    visible = Corpus.objects.all() if user is None else selectors.corpora_visible_to(user)
    return visible.exclude(pk=corpus.pk)


def mining_form(*, corpus: Corpus, method: str, user: AbstractBaseUser | None, data: Mapping | None = None) -> forms.Form:
    """``method``'s start form for ``corpus``; with ``data``, bound to it with every setting it leaves out at the
    form's initial value (so a script that names one setting gets the page's values for the others)."""
    language = corpus.language.split("-")[0]
    initial = {"language": language} if language in ("en", "de") else {}
    arguments = {"targets": mining_targets(user, corpus)} if method == "lha" else {}
    form = FORMS[method](initial=initial, **arguments)
    if data is None:
        return form
    filled = {name: data[name] if name in data else form.get_initial_for_field(field, name) for name, field in form.fields.items()}
    return FORMS[method](filled, initial=initial, **arguments)


def mining_control_require(*, user: AbstractBaseUser | None, corpus: Corpus) -> None:
    """PermissionError unless ``user`` may start and cancel the mining jobs of ``corpus`` (their source): its owner and
    staff, as for alignment runs. ``user`` None is the shell's operator, who may."""
    if user is not None and not selectors.user_may_run_jobs(user, corpus):
        raise PermissionError(f"only the owner of corpus {corpus.name!r} and staff start or cancel its mining jobs")


def mining_job_start(*, corpus: Corpus, method: str, data: Mapping, user: AbstractBaseUser | None) -> tuple[MiningJob, bool]:
    """Check ``data`` (settings by the form's field names) and queue the job as the start page does; (job, created).

    Refuses, storing and queuing nothing, with PermissionError (see :func:`mining_control_require`) or a ServiceError
    whose ``field`` is the first bad input: ``method``, a setting the method's form lacks, the form's first invalid
    field (``target_corpus``, ``k``, ``min_margin``...), or the corpus with nothing to mine (``source_corpus`` or
    ``target_corpus``). ``user`` None: started from the shell (no permission check, no owner: no lane of anyone's).
    The same corpora, method and settings give the existing job (queued again if it failed or was cancelled)."""
    if method not in FORMS:
        raise ServiceError(f"{method!r} is not a mining method; methods: {', '.join(FORMS)}", field="method")
    mining_control_require(user=user, corpus=corpus)
    form = mining_form(corpus=corpus, method=method, user=user, data=data)
    unknown = [key for key, value in data.items() if key not in form.fields and value is not None]
    if unknown:
        raise ServiceError(f"not a setting of {method.upper()} jobs; their settings: {', '.join(form.fields)}", field=str(unknown[0]))
    if not form.is_valid():
        name, errors = next(iter(form.errors.items()))
        raise ServiceError(" ".join(errors), field=None if name == NON_FIELD_ERRORS else name)
    config = dict(form.cleaned_data)
    target = config.pop("target_corpus", None)
    config = {key: value for key, value in config.items() if key not in _DEFAULTED_WHEN_EMPTY[method] or value not in ("", None)}
    encoder = settings.ENCODER_MODEL if method == "lha" else None  # LHA reads stored vectors; MUSS encodes its sequences
    fields = {corpus.pk: "source_corpus", **({target.pk: "target_corpus"} if target is not None else {})}
    corpora_ready_for_mining(corpora=[corpus, target or corpus], encoder_name=encoder, field_by_corpus=fields)
    return mining_job_create(source_corpus=corpus, target_corpus=target, config=config, method=method, created_by=user)


def mining_job_stop(*, job: MiningJob, user: AbstractBaseUser | None) -> MiningJob:
    """Cancel ``job`` for ``user`` (PermissionError as :func:`mining_control_require`): shards stop after the document
    or batch in flight, and the pairs found so far are kept. A job that has ended is returned as it is."""
    mining_control_require(user=user, corpus=job.source_corpus)
    return mining_job_cancel(job=job)

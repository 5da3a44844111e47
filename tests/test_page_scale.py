"""Pages cost the same whatever the number of pairs (issue 34): the same count of queries, and no more bytes than a page of rows.

Each page is requested, as the role that uses it, in two worlds built in bulk (tests/page_scale_world.py): one of
``SMALL`` document pairs and one of ``LARGE``. The queries must be the same in number (a page that asks once per pair
fails), and the larger world's page may be no bigger than ``MIDDLE``'s, both over one page of rows (a page that lists
every pair fails). Time is measured in bench/page_scale.py, never here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.core.cache import caches
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.page_scale_world import World, world_build

SMALL, MIDDLE, LARGE = 20, 60, 120  # 20: enough verified pairs and labels for the Models page to preview a snapshot in each
SIZE_SLACK = 1.05  # bytes of LARGE's page over MIDDLE's: ids and counts have more digits, nothing else may grow


@dataclass(frozen=True)
class Page:
    name: str
    persona: str
    url: Callable[[World], str]


def _project_url(name: str) -> Callable[[World], str]:
    return lambda world: reverse(f"annotation:{name}", args=[world.project.pk])


def _pair_url(name: str) -> Callable[[World], str]:
    return lambda world: reverse(f"annotation:{name}", args=[world.project.pk, world.first_pair.pk])


PAGES = [
    Page("corpora (landing page)", "owner", lambda world: reverse("alignment:corpus_list")),
    Page("projects", "owner", lambda world: reverse("annotation:project_list")),
    Page("my tasks", "anna", lambda world: reverse("annotation:task_list")),
    Page("my tasks (still working)", "ben", lambda world: reverse("annotation:task_list")),
    Page("project (manager)", "owner", _project_url("project_detail")),
    Page("project (annotator)", "anna", _project_url("project_detail")),
    Page("pair (annotation screen)", "anna", _pair_url("annotate_pair")),
    Page("pair (corpus's pair page)", "owner", lambda world: reverse("alignment:pair_detail", args=[world.first_pair.pk])),
    Page("queue", "anna", _project_url("project_queue")),
    Page("queue (items left)", "ben", _project_url("project_queue")),
    Page("review", "owner", _pair_url("pair_review")),
    Page("agreement", "owner", _project_url("project_agreement")),
    Page("models", "owner", _project_url("project_models")),
    Page("exports", "owner", _project_url("project_exports")),
    Page("corpus", "owner", lambda world: reverse("alignment:corpus_detail", args=[world.corpus.pk])),
    Page("run", "owner", lambda world: reverse("alignment:alignment_run_detail", args=[world.run.pk])),
    Page("run progress", "owner", lambda world: reverse("alignment:alignment_run_progress", args=[world.run.pk])),
    Page("inspection", "owner", lambda world: reverse("alignment:pair_inspect", args=[world.first_pair.pk])),
]


@pytest.fixture(scope="module")
def worlds(django_db_setup, django_db_blocker) -> dict[int, World]:
    """Built once, in a transaction rolled back after the module (the statistics it takes with it).

    The planner's statistics are taken of the worlds' rows before any page is asked for: built in bulk, they were
    planned on whatever statistics the tables had, and where autovacuum had last seen them empty the project page's
    bulk-accept query took 6.5 s on the large world instead of 0.05 s (the module 73 s against 23 s, and 18 to 124 s
    between whole runs). A deployment's tables grow while autovacuum keeps their statistics; query counts, not times,
    are under test here."""
    with django_db_blocker.unblock(), transaction.atomic():
        built = {n: world_build(n, name=f"Scale{n}") for n in (SMALL, MIDDLE, LARGE)}
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # sees this transaction's own rows
        yield built
        transaction.set_rollback(True)


def measured(page: Page, world: World) -> tuple[int, int, list[str]]:
    """(queries, bytes, SQL) of one GET of the page as its persona, after one warm-up GET (the session) and with the
    cache emptied: the figures a page keeps in the cache are counted as when a label has just changed them."""
    client = Client()
    client.force_login(getattr(world, page.persona))
    url = page.url(world)
    assert client.get(url).status_code == 200, url
    caches["figures"].clear()
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(queries), len(response.content), [query["sql"] for query in queries]


@pytest.mark.django_db
@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_a_page_asks_as_many_queries_and_is_no_bigger_with_more_pairs(worlds: dict[int, World], page: Page) -> None:
    small_queries, _, small_sql = measured(page, worlds[SMALL])
    _, middle_bytes, _ = measured(page, worlds[MIDDLE])
    large_queries, large_bytes, large_sql = measured(page, worlds[LARGE])
    assert large_queries == small_queries, (
        f"{page.name}: {small_queries} queries with {SMALL} pairs, {large_queries} with {LARGE}: " + "\n".join(large_sql)
    )
    assert large_bytes <= middle_bytes * SIZE_SLACK, f"{page.name}: {middle_bytes} bytes with {MIDDLE} pairs, {large_bytes} with {LARGE}"


@dataclass(frozen=True)
class PagedList:
    page: Page
    param: str
    noun: str
    rows: int  # in the LARGE world
    kept: dict[str, str]  # other parameters the page links must keep


def _page(name: str) -> Page:
    return next(page for page in PAGES if page.name == name)


PAGED = [
    PagedList(_page("my tasks"), "page", "Tasks", LARGE - LARGE // 5, {"state": "done"}),  # anna's, less the verified pairs
    PagedList(_page("project (manager)"), "assignments_page", "Assignments", 2 * LARGE, {"pairs_page": "2"}),
    PagedList(_page("project (manager)"), "pairs_page", "Pairs", LARGE, {"assignments_page": "3"}),
    PagedList(_page("project (annotator)"), "assignments_page", "Assignments", LARGE, {}),
    PagedList(_page("agreement"), "pairs_page", "Pairs", LARGE, {"a": "scale120-anna", "b": "scale120-ben"}),
    PagedList(_page("corpus"), "pairs_page", "Pairs", LARGE, {"documents_page": "2"}),
    PagedList(_page("corpus"), "documents_page", "Documents", 2 * LARGE, {"pairs_page": "2"}),
    PagedList(_page("run"), "pairs_page", "Pairs", LARGE, {}),
]


@pytest.mark.django_db
@pytest.mark.parametrize("paged", PAGED, ids=[f"{paged.page.name}-{paged.param}" for paged in PAGED])
def test_a_long_list_shows_a_page_of_rows_with_the_total_and_links_that_keep_the_filters(
    worlds: dict[int, World], paged: PagedList
) -> None:
    world = worlds[LARGE]
    client = Client()
    client.force_login(getattr(world, paged.page.persona))
    html = client.get(paged.page.url(world), {**paged.kept, paged.param: "2"}).content.decode()
    pager = html[html.index(f'data-pager="{paged.param}"') :].split("</nav>")[0]
    last = -(-paged.rows // 50)
    assert f"{paged.noun} 51–{min(100, paged.rows)} of {paged.rows} · page 2 of {last}" in pager, pager
    links = [link.replace("&amp;", "&") for link in re.findall(r'href="([^"]+)"', pager)]
    numbers = [re.search(rf"[?&]{paged.param}=(\d+)", link).group(1) for link in links]
    assert numbers == ["1", "1"] + (["3", str(last)] if last > 2 else []), links  # first, previous, next, last
    for link in links:
        assert all(f"{name}={value}" in link for name, value in paged.kept.items()), link

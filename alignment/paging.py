"""Long lists on pages: one page of rows at a time, with the total and links that keep the page's other parameters.

A list of document pairs, assignments or run results grows with the corpus, so a page shows ``PAGE_SIZE`` rows of it
(as Label Studio and Argilla list tasks): the rows come from the database with LIMIT/OFFSET and the total from one
COUNT, never every row. Each list names its own page parameter, so two lists on one page page independently, and
every link keeps the other query-string parameters (filters, the other list's page). ``templates/pager.html`` shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import QueryDict

PAGE_SIZE = 50


@dataclass(frozen=True)
class ListPage:
    """One page of a list: its rows (``page.object_list``), its number, the total, and the query string of its links."""

    page: Page
    param: str  # the query-string parameter that holds this list's page number
    query: str  # the request's other parameters, URL-encoded, ending in "&" when there are any
    anchor: str  # the id of the element the list is in: page links scroll back to it

    @property
    def rows(self) -> Sequence[Any]:
        return self.page.object_list

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)

    def __getitem__(self, index: int) -> Any:
        return self.rows[index]

    @property
    def count(self) -> int:
        return self.page.paginator.count

    def url(self, number: int) -> str:
        return f"?{self.query}{self.param}={number}" + (f"#{self.anchor}" if self.anchor else "")

    @property
    def links(self) -> list[tuple[str, str]]:
        """(text, URL) of first, previous, next and last, as far as they lead somewhere else."""
        page, last = self.page, self.page.paginator.num_pages
        links = []
        if page.has_previous():
            links += [("« first", self.url(1)), ("‹ previous", self.url(page.previous_page_number()))]
        if page.has_next():
            links += [("next ›", self.url(page.next_page_number())), ("last »", self.url(last))]
        return links


def in_order(rows: QuerySet, ids: Sequence[int]) -> list[Any]:
    """The rows of ``rows`` whose ids are ``ids``, in that order: a page sorted by a narrow query (ids and sort keys
    only), then read in full, so the database never sorts every row with all its columns joined in."""
    by_id = rows.in_bulk(list(ids))
    return [by_id[pk] for pk in ids if pk in by_id]


def list_page(
    query: QueryDict,
    rows: Sequence[Any],
    *,
    param: str = "page",
    anchor: str = "",
    size: int = PAGE_SIZE,
    present: Callable[[Sequence[Any]], Sequence[Any]] | None = None,
) -> ListPage:
    """The page of ``rows`` (an ordered QuerySet, or any sequence with ``count()`` or ``len()`` whose slices are
    fetched on demand) that ``query[param]`` asks for; a missing or bad number gives the first page, one past the end the last.
    ``present`` turns the page's rows into what the template shows (figures read for those rows only)."""
    page = Paginator(rows, size).get_page(query.get(param))
    if present is not None:
        page.object_list = present(page.object_list)
    others = query.copy()
    others.pop(param, None)
    encoded = others.urlencode()
    return ListPage(page=page, param=param, query=f"{encoded}&" if encoded else "", anchor=anchor)

"""An export whose split leaves a split with a share empty (a small project's train) says so, on its page and in its card.

Splits are by document pair: two verified pairs and the default shares 0.7 / 0.15 / 0.15 fill test and dev first,
so train had nothing, and neither the page nor the card said it.
"""

from __future__ import annotations

from django.urls import reverse

from annotation.export.models import empty_splits
from tests.annotation.gold_set import build_gold_project
from tests.annotation.test_export import export_dir, run_export  # noqa: F401 - a fixture


def test_an_empty_train_is_named_on_the_jobs_card_and_in_the_dataset_card(client, owner) -> None:
    project, _ = build_gold_project(owner, labelled=2)
    job = run_export(project, owner, formats=["jsonl"])
    assert job.status == "succeeded", job.error
    job.refresh_from_db()
    assert job.split_pairs == {"train": 0, "dev": 1, "test": 1} and job.empty_splits == ["train"]
    card = (job.directory / "README.md").read_text(encoding="utf-8")
    assert "**train is empty**: the 2 document pair(s) exported all fell in the other splits" in card
    client.force_login(owner)
    page = client.get(reverse("annotation:project_exports", args=[project.pk])).content.decode()
    assert "<strong>train is empty</strong>" in page and 'href="#export-form"' in page and 'id="export-form"' in page

    again = run_export(project, owner, formats=["jsonl"], fractions={"train": 0.5, "dev": 0.5, "test": 0.0})
    again.refresh_from_db()
    assert again.split_pairs == {"train": 1, "dev": 1, "test": 0} and again.empty_splits == []  # test had no share
    assert "is empty**" not in (again.directory / "README.md").read_text(encoding="utf-8")


def test_empty_splits_are_those_with_a_share_and_no_pair() -> None:
    shares = {"train": 0.7, "dev": 0.3, "test": 0.0}
    assert empty_splits(shares, {"train": 0, "dev": 2, "test": 0}) == ["train"]
    assert empty_splits(shares, {"train": 0, "dev": 0}) == ["train", "dev"]
    assert empty_splits(shares, {"train": 3, "dev": 1, "test": 0}) == []

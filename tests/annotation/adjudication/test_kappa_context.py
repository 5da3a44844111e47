"""Beside each Cohen κ the agreement page says what explains it: raw agreement, PABAK and the most frequent label.

A κ of −0.06 at 89 % raw agreement was shown bare; it is what chance correction gives when one label dominates.
"""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from annotation.adjudication.agreement import SCOPE_SHOWN, agreement_report
from annotation.adjudication.kappa_context import pair_agreement

# 100 items: both say "not aligned" on 89; a's 5 and b's 6 "aligned" are never the same items.
RATINGS = {
    "anna": {i: "aligned" if i < 5 else "not_aligned" for i in range(100)},
    "ben": {i: "aligned" if 5 <= i < 11 else "not_aligned" for i in range(100)},
}


def test_89_percent_raw_agreement_with_a_kappa_below_zero_is_explained() -> None:
    report = agreement_report(RATINGS, scope=SCOPE_SHOWN)
    kappa = report.cohen[("anna", "ben")]
    context = report.cohen_context[("anna", "ben")]
    assert kappa == pytest.approx(-0.0577, abs=1e-3)
    assert context.observed == pytest.approx(0.89) and context.pabak == pytest.approx(0.835)
    assert context.prevalent == "not_aligned" and context.prevalence == pytest.approx(0.945)
    html = render_to_string("annotation/agreement_report.html", {"report": report})
    assert '<td class="num">89 %</td>' in html and "<td>not aligned (94 %)</td>" in html and "0.835" in html
    assert "chance agreement is already high" in html


def test_no_items_in_common_explains_nothing() -> None:
    empty = pair_agreement([[0, 0, 0], [0, 0, 0], [0, 0, 0]])
    assert (empty.observed, empty.pabak, empty.prevalent, empty.prevalence) == (None, None, "", None)
    perfect = pair_agreement([[3, 0, 0], [0, 1, 0], [0, 0, 6]])
    assert perfect.observed == 1.0 and perfect.pabak == 1.0 and perfect.prevalent == "not_aligned"

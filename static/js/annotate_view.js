/* Drawing the focus view of the annotation screen from its state (annotate.js owns the state and calls
 * these): the marks on the sentences (selected, candidates with the aligner's suggestion and its
 * confidence, your own label, which complex sentences each simple sentence is linked to, a reviewer's
 * decision that differs), the current-pair box, the progress bar, how an action reads in the status line,
 * and scrolling a sentence pair into view. Nothing here changes the state or talks to the server. */
(function () {
  "use strict";

  const LABEL_NAMES = { aligned: "aligned", partial: "partial", not_aligned: "not aligned", "": "unlabelled" };
  const ITEM_NAMES = { skip: "skip this pair", flag: "flag this pair", unflag: "remove the flag", comment: "comment" };

  const $ = (id) => document.getElementById(id);
  const key = (simple, complex) => `${simple}:${complex}`;
  const simpleEl = (id) => $(`s-${id}`);
  const complexEl = (id) => $(`c-${id}`);
  const number = (el) => (el ? el.dataset.number : "?");

  const currentSimple = (state) => (state.simpleIndex >= 0 ? state.simpleIds[state.simpleIndex] : null);
  const candidatesOf = (state, simpleId) => state.candidates[simpleId] || [];
  const PICKS = 5; // candidates numbered for the keys 1-5 (the picker)

  function element(tag, className, text) {
    const el = document.createElement(tag);
    el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  const badge = (text, className) => element("span", `badge ${className}`, text);

  const BASIS = {
    crf: "How sure the aligner is of its label, from 0 to 1: 1.00 is sure, 0.50 a coin toss.",
    group: "Linked through its group (neighbouring sentences join it): the group's confidence.",
    "not scored": "Not scored: outside the aligned paragraphs, where the aligner does not decide.",
    mined: "A mined pair: no aligner scored it.",
  };
  // "0.83", "0.71 (group)", "not scored": the aligner's confidence in its own label, as annotators read it.
  function confidenceText(candidate) {
    if (candidate.confidence === null || candidate.confidence === undefined) return candidate.basis === "mined" ? "mined, not scored" : "not scored";
    return `confidence ${candidate.confidence.toFixed(2)}${candidate.basis === "group" ? " (group)" : ""}`;
  }

  function confidenceBar(candidate) {
    const bar = element("span", "score-bar");
    bar.title = BASIS[candidate.basis] || "";
    const fill = bar.appendChild(element("span", ""));
    fill.style.width = `${Math.round(100 * Math.min(1, Math.max(0, candidate.confidence || 0)))}%`;
    return bar;
  }

  // Each simple sentence's own labels: which complex sentences it is linked to ("↔ 3, 4"), or that you unlinked it.
  function linkChips(state) {
    const linked = {};
    const unlinked = {};
    for (const [pairKey, value] of Object.entries(state.labels)) {
      const [simpleId, complexId] = pairKey.split(":");
      if (value.label === "aligned" || value.label === "partial") (linked[simpleId] = linked[simpleId] || []).push(Number(number(complexEl(complexId))));
      else if (value.label) unlinked[simpleId] = true;
    }
    for (const simpleId of new Set([...Object.keys(linked), ...Object.keys(unlinked)])) {
      const el = simpleEl(simpleId);
      if (!el) continue;
      el.classList.add("labelled");
      const numbers = (linked[simpleId] || []).sort((a, b) => a - b);
      const chip = badge(numbers.length ? `✓ ↔ ${numbers.join(", ")}` : "✓ no link", "own-count");
      chip.title = numbers.length ? `You linked it to complex ${numbers.map((n) => `#${n}`).join(", ")}` : "You labelled its candidates not aligned";
      el.querySelector(".sent-marks").appendChild(chip);
    }
  }

  function render(root, state) {
    const simpleId = currentSimple(state);
    root.querySelectorAll(".sentence").forEach((el) => {
      el.classList.remove("selected", "candidate", "current", "labelled", "suggestion-changed");
      el.className = el.className.replace(/\b(pred|own)-\S+/g, "").trim();
      el.querySelector(".sent-marks").replaceChildren();
    });
    linkChips(state);
    for (const changedId of Object.keys(state.changed || {})) {
      const el = simpleEl(changedId);
      if (!el || el.classList.contains("labelled")) continue;
      el.classList.add("suggestion-changed");
      const chip = el.querySelector(".sent-marks").appendChild(badge("↻ new suggestion", "suggest-changed"));
      chip.title = "Its suggestion changed: the aligner decoded the pair again given your labels";
    }
    if (simpleId !== null) {
      simpleEl(simpleId).classList.add("selected");
      candidatesOf(state, simpleId).forEach((candidate, index) => {
        const el = complexEl(candidate.complex);
        if (!el) return;
        const marks = el.querySelector(".sent-marks");
        el.classList.add("candidate");
        if (index < PICKS) {
          const pick = marks.appendChild(badge(String(index + 1), "pick-number"));
          pick.title = `Key ${index + 1} links this candidate (with its suggested label, else aligned)`;
        }
        if (candidate.predicted) {
          el.classList.add(`pred-${candidate.predicted}`);
          const suggestion = badge(`suggested ${LABEL_NAMES[candidate.predicted]} · ${confidenceText(candidate)}`, `suggestion label-${candidate.predicted}`);
          suggestion.title = BASIS[candidate.basis] || "";
          marks.appendChild(suggestion);
          if (candidate.confidence !== null && candidate.confidence !== undefined) marks.appendChild(confidenceBar(candidate));
        }
        const own = state.labels[key(simpleId, candidate.complex)];
        if (own && own.label) {
          el.classList.add(`own-${own.label}`);
          marks.appendChild(badge(`you: ${LABEL_NAMES[own.label]}`, `own own-${own.label}`));
        }
        const decided = (state.decisions || {})[key(simpleId, candidate.complex)];
        if (decided && decided !== ((own && own.label) || "not_aligned")) marks.appendChild(badge(`⚠ reviewer: ${LABEL_NAMES[decided]}`, "conflict"));
      });
      if (state.complexId !== null) complexEl(state.complexId).classList.add("current");
    }
    renderCurrentPair(state);
  }

  function renderCurrentPair(state) {
    const box = $("current-pair");
    const simpleId = currentSimple(state);
    box.replaceChildren();
    const line = (text, className) => box.appendChild(element("p", className || "", text));
    if (simpleId === null) {
      line("Select a simple sentence (j or click), then a complex candidate (l or click), then label it.", "muted small");
      return;
    }
    const list = candidatesOf(state, simpleId);
    if (state.complexId === null) {
      line(`Simple #${number(simpleEl(simpleId))} selected: no suggestion.`, "pair-title");
      line(list.length
        ? `The aligner proposed nothing for it (${list.length} near miss${list.length > 1 ? "es" : ""}: l walks them). g links any complex sentence.`
        : "No suggestion: press g to link a complex sentence by number or words, or click it.", "muted small");
      return;
    }
    const position = list.findIndex((c) => c.complex === state.complexId) + 1;
    line(`Simple #${number(simpleEl(simpleId))} ~ complex #${number(complexEl(state.complexId))}`, "pair-title");
    line(`candidate ${position} of ${list.length}`, "muted small");
    const facts = element("p", "pair-facts");
    const candidate = list[position - 1];
    const suggestion = candidate && candidate.predicted
      ? badge(`suggested: ${LABEL_NAMES[candidate.predicted]} · ${confidenceText(candidate)}`, `suggestion label-${candidate.predicted}`)
      : badge("not proposed by the aligner", "suggestion");
    if (candidate && candidate.predicted) suggestion.title = BASIS[candidate.basis] || "";
    facts.appendChild(suggestion);
    const own = state.labels[key(simpleId, state.complexId)];
    facts.appendChild(own && own.label ? badge(`your label: ${LABEL_NAMES[own.label]}`, `own own-${own.label}`) : badge("not labelled by you yet", "unlabelled"));
    box.appendChild(facts);
  }

  /* Scroll so that the selected simple sentence and the current candidate are both on screen, below the
   * sticky column heads; when they cannot both fit, the simple sentence wins and the candidate's text is in
   * the side panel's current-pair box. One instant scroll: a second smooth one would cancel the first. */
  function revealPair(first, second, headSelector) {
    const els = [first, second].filter(Boolean);
    if (!els.length) return;
    const heads = document.querySelector(headSelector || ".para-row.doc-heads");
    const top = (heads ? heads.getBoundingClientRect().height : 0) + 8;
    const bottom = window.innerHeight - 8;
    const rects = els.map((el) => el.getBoundingClientRect());
    const union = { top: Math.min(...rects.map((r) => r.top)), bottom: Math.max(...rects.map((r) => r.bottom)) };
    const target = union.bottom - union.top <= bottom - top ? union : { top: rects[0].top, bottom: rects[0].bottom };
    if (target.top < top) window.scrollBy(0, target.top - top);
    else if (target.bottom > bottom) window.scrollBy(0, Math.min(target.bottom - bottom, target.top - top));
  }

  function updateProgress(progress) {
    $("progress-count").textContent = `${progress.labelled} / ${progress.total}`;
    $("progress-bar").style.width = `${progress.percent}%`;
  }

  // How a queued action reads in the status line and the list of unsaved actions.
  function describe(action) {
    if (action.kind === "undo") return "undo";
    if (action.kind === "item") return ITEM_NAMES[action.itemKind];
    if (action.kind === "edit") return action.text;
    if (action.kind === "done") return "mark this pair done";
    return `simple #${number(simpleEl(action.simple))} ~ complex #${number(complexEl(action.complex))} → ${LABEL_NAMES[action.label]}`;
  }

  window.annotateView = {
    LABEL_NAMES, $, key, simpleEl, complexEl, number, element, currentSimple, candidatesOf, render, updateProgress, describe, revealPair,
    confidenceText, PICKS,
  };
})();

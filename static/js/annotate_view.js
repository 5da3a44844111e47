/* Drawing the annotation screen from its state (annotate.js owns the state and calls these): the
 * marks on the sentences (selected, candidates with the aligner's suggestion and score bar, your own
 * label, how many labels each simple sentence has), the current-pair box, the progress bar and how
 * an action reads in the status line. Nothing here changes the state or talks to the server. */
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

  function element(tag, className, text) {
    const el = document.createElement(tag);
    el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  const badge = (text, className) => element("span", `badge ${className}`, text);

  function scoreBar(score) {
    const bar = element("span", "score-bar");
    bar.title = `score ${score}`;
    const fill = bar.appendChild(element("span", ""));
    fill.style.width = `${Math.round(100 * Math.min(1, Math.max(0, score)))}%`;
    return bar;
  }

  function render(root, state) {
    const simpleId = currentSimple(state);
    root.querySelectorAll(".sentence").forEach((el) => {
      el.classList.remove("selected", "candidate", "current", "labelled");
      el.className = el.className.replace(/\b(pred|own)-\S+/g, "").trim();
      el.querySelector(".sent-marks").replaceChildren();
    });
    const labelledCount = {}; // simple id -> labels set on it (1:n links count each)
    for (const [pairKey, value] of Object.entries(state.labels)) {
      if (value.label) labelledCount[pairKey.split(":")[0]] = (labelledCount[pairKey.split(":")[0]] || 0) + 1;
    }
    for (const [id, count] of Object.entries(labelledCount)) {
      simpleEl(id).classList.add("labelled");
      simpleEl(id).querySelector(".sent-marks").appendChild(badge(`✓ ${count} label${count > 1 ? "s" : ""}`, "own-count"));
    }
    if (simpleId !== null) {
      simpleEl(simpleId).classList.add("selected");
      for (const candidate of candidatesOf(state, simpleId)) {
        const el = complexEl(candidate.complex);
        if (!el) continue;
        const marks = el.querySelector(".sent-marks");
        el.classList.add("candidate");
        if (candidate.predicted) {
          el.classList.add(`pred-${candidate.predicted}`);
          marks.appendChild(badge(`suggested ${LABEL_NAMES[candidate.predicted]} ${candidate.score.toFixed(2)}`, `suggestion label-${candidate.predicted}`));
          marks.appendChild(scoreBar(candidate.score));
        }
        const own = state.labels[key(simpleId, candidate.complex)];
        if (own && own.label) {
          el.classList.add(`own-${own.label}`);
          marks.appendChild(badge(`you: ${LABEL_NAMES[own.label]}`, `own own-${own.label}`));
        }
      }
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
    facts.appendChild(candidate && candidate.predicted
      ? badge(`suggested: ${LABEL_NAMES[candidate.predicted]} · score ${candidate.score.toFixed(3)}`, `suggestion label-${candidate.predicted}`)
      : badge("not proposed by the aligner", "suggestion"));
    const own = state.labels[key(simpleId, state.complexId)];
    facts.appendChild(own && own.label ? badge(`your label: ${LABEL_NAMES[own.label]}`, `own own-${own.label}`) : badge("not labelled by you yet", "unlabelled"));
    box.appendChild(facts);
  }

  function updateProgress(progress) {
    $("progress-count").textContent = `${progress.labelled} / ${progress.total}`;
    $("progress-bar").style.width = `${progress.percent}%`;
  }

  // How a queued action reads in the status line and the list of unsaved actions.
  function describe(action) {
    if (action.kind === "undo") return "undo";
    if (action.kind === "item") return ITEM_NAMES[action.itemKind];
    return `simple #${number(simpleEl(action.simple))} ~ complex #${number(complexEl(action.complex))} → ${LABEL_NAMES[action.label]}`;
  }

  window.annotateView = {
    LABEL_NAMES, $, key, simpleEl, complexEl, number, element, currentSimple, candidatesOf, render, updateProgress, describe,
  };
})();

/* Annotation screen: select a simple sentence (its best suggestion is focused with it), walk or
 * jump to a complex candidate, label the pair with the keyboard or the buttons; skip, flag or
 * comment on the document pair. This file owns the state (from the JSON in #annotate-data, read
 * again from the server when it may be stale), the selection, the actions and the keys;
 * annotate_view.js draws the state, annotate_saving.js sends every action at once, in order, and
 * retries or lists it until saved, annotate_unsent.js keeps unsent actions across a reload,
 * annotate_session.js gets a lost session back, jumplist.js and item_notes.js are the g list and
 * the notes. The word diff is an htmx fragment of the page. */
(function () {
  "use strict";

  const root = document.getElementById("annotate");
  if (!root) return;
  const data = JSON.parse(document.getElementById("annotate-data").textContent);
  const view = window.annotateView;
  const { LABEL_NAMES, $, key, simpleEl, complexEl, number } = view;

  const state = {
    simpleIds: data.simple, // simple sentence ids in document order
    candidates: data.candidates, // simple id -> [{complex, predicted, score, marginal}]: suggestions by score, near misses, the rest
    labels: data.labels, // "simple:complex" -> {label, event}
    notes: data.notes, // {flagged, skipped_at, comments: [{text, at}]}: the annotator's item events on the pair
    simpleIndex: -1,
    complexId: null, // the current candidate
    selectedAt: performance.now(), // when the current pair was selected (or last labelled): seconds_spent
    diffRequest: 0,
  };

  const currentSimple = () => view.currentSimple(state);
  const candidatesOf = (simpleId) => view.candidatesOf(state, simpleId);
  const render = () => view.render(root, state);
  const renderNotes = () => window.itemNotes.render(state.notes);

  const store = window.annotateUnsent.create(root.dataset.unsentKey);
  const session = window.annotateSession.create({
    probeUrl: root.dataset.sessionUrl,
    loginUrl: root.dataset.loginUrl,
    userId: root.dataset.userId,
    username: root.dataset.username,
    waiting: () => saving.waiting(),
    resumed: (afterLogin) => saving.resume(afterLogin),
  });
  const saving = window.annotateSaving.create({
    urls: { undo: root.dataset.undoUrl, label: root.dataset.labelUrl, item: root.dataset.itemUrl, refresh: root.dataset.stateUrl },
    store,
    session,
    currentLabel: (simple, complex) => state.labels[key(simple, complex)],
    saved: applySaved,
    refreshed: applyRefreshed,
    conflict: applyConflict,
  });
  const setStatus = saving.setStatus;

  const SUGGESTED = ["aligned", "partial"];
  // The server's order (screen.candidate_order): suggestions by score, near misses by score, then unproposed in document order.
  function orderKey(c) {
    const position = Number(number(complexEl(c.complex)));
    if (SUGGESTED.includes(c.predicted)) return [0, -c.score, position];
    if (c.predicted) return [1, -c.score, position];
    return [2, 0, position];
  }

  function ensureCandidate(simpleId, complexId) {
    // A pair the aligner never proposed joins the list after the aligner's candidates, so h/l reach it.
    const list = (state.candidates[simpleId] = candidatesOf(simpleId));
    if (list.some((c) => c.complex === complexId)) return;
    list.push({ complex: complexId, predicted: null, score: null, marginal: null });
    list.sort((a, b) => {
      const [x, y] = [orderKey(a), orderKey(b)];
      return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
    });
  }

  // The suggestion j focuses: the best-scored candidate the aligner predicted aligned or partial, or none.
  const bestSuggestion = (simpleId) => candidatesOf(simpleId).find((c) => SUGGESTED.includes(c.predicted)) || null;

  // ----- selection --------------------------------------------------------------------------

  function reveal(el) {
    if (el) el.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  function selectSimple(index) {
    if (!state.simpleIds.length) return;
    state.simpleIndex = Math.max(0, Math.min(state.simpleIds.length - 1, index));
    const simpleId = currentSimple();
    const best = bestSuggestion(simpleId);
    state.complexId = best ? best.complex : null; // focused with the sentence: j then a accepts it
    state.selectedAt = performance.now();
    saving.clearHint();
    render();
    const first = best || candidatesOf(simpleId)[0];
    if (first) reveal(complexEl(first.complex));
    reveal(simpleEl(simpleId));
    loadDiff();
  }

  function selectCandidate(complexId) {
    const simpleId = currentSimple();
    if (simpleId === null) return setStatus("hint", "Select a simple sentence first (j or click).");
    ensureCandidate(simpleId, complexId);
    state.complexId = complexId;
    state.selectedAt = performance.now();
    saving.clearHint();
    render();
    reveal(complexEl(complexId));
    loadDiff();
  }

  function moveCandidate(delta) {
    const simpleId = currentSimple();
    if (simpleId === null) return setStatus("hint", "Select a simple sentence first (j or click).");
    const list = candidatesOf(simpleId);
    if (!list.length) return setStatus("hint", "No candidates: click a complex sentence to link it.");
    const at = list.findIndex((c) => c.complex === state.complexId);
    const next = at < 0 ? (delta > 0 ? 0 : list.length - 1) : Math.max(0, Math.min(list.length - 1, at + delta));
    selectCandidate(list[next].complex);
  }

  async function loadDiff() {
    const ticket = ++state.diffRequest; // a slower earlier answer must not replace a newer one
    const simpleId = currentSimple();
    const diff = $("diff");
    if (simpleId === null || state.complexId === null) return (diff.innerHTML = '<h2>Word differences</h2><p class="muted small">Pick a candidate to compare the two sentences word by word.</p>');
    const url = `${root.dataset.diffUrl}?simple=${simpleId}&complex=${state.complexId}`;
    try {
      // redirect "manual": signed out, the login page must not land in the diff box
      const response = await fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin", redirect: "manual" });
      const html = await response.text();
      if (ticket !== state.diffRequest) return;
      if (!response.ok) throw new Error(response.type === "opaqueredirect" ? "signed out" : html);
      diff.innerHTML = html; // rendered and escaped by the server
    } catch (error) {
      if (ticket === state.diffRequest) diff.innerHTML = '<h2>Word differences</h2><p class="error small">Could not load the diff; move away and back to try again.</p>';
    }
  }

  // ----- actions ----------------------------------------------------------------------------

  function labelAction(label) {
    const simpleId = currentSimple();
    if (simpleId === null) return setStatus("hint", "Pick a pair first: a simple sentence (j), then a candidate (l, g or click).");
    if (state.complexId === null) return setStatus("hint", `Simple #${number(simpleEl(simpleId))} has no suggestion: pick a complex sentence (l, g or click) first.`);
    // More than a day on one pair is a tab left open: sent as a day (the server refuses more; its figures count it as idle).
    const seconds = Math.min((performance.now() - state.selectedAt) / 1000, 86400);
    state.selectedAt = performance.now(); // the next change of this item counts its own time
    saving.enqueue({ kind: "label", simple: simpleId, complex: state.complexId, label, seconds });
  }

  function acceptSuggestion() {
    const candidate = candidatesOf(currentSimple()).find((c) => c.complex === state.complexId);
    if (!candidate || !candidate.predicted) return setStatus("hint", "The current pair has no suggestion to accept: label it with a, p or n.");
    labelAction(candidate.predicted);
  }

  function itemAction(itemKind, text) {
    saving.enqueue({ kind: "item", itemKind, text: text || "" });
  }

  function openJumpList() {
    const simpleId = currentSimple();
    if (simpleId === null) return setStatus("hint", "Select a simple sentence first (j or click), then g links a complex sentence to it.");
    window.jumpList.open(selectCandidate, `Link simple #${number(simpleEl(simpleId))} to complex sentence…`);
  }

  function applySaved(action, payload) {
    if (action.kind === "item") return applyItemSaved(action, payload);
    if (payload.progress) view.updateProgress(payload.progress);
    if (action.kind === "undo" && !payload.undone) return setStatus("hint", payload.message);
    state.labels[key(payload.simple, payload.complex)] = { label: payload.label, event: payload.event };
    ensureCandidate(String(payload.simple), payload.complex);
    if (action.kind === "undo") {
      // Show what the undo changed: jump to that pair.
      state.simpleIndex = state.simpleIds.indexOf(payload.simple);
      state.complexId = payload.complex;
      state.selectedAt = performance.now();
      render();
      reveal(complexEl(payload.complex));
      reveal(simpleEl(payload.simple));
      loadDiff();
      setStatus("saved", `Undone ✓ simple #${number(simpleEl(payload.simple))} ~ complex #${number(complexEl(payload.complex))} is ${LABEL_NAMES[payload.label]} again`);
    } else {
      render();
      setStatus("saved", `Saved ✓ ${view.describe(action)}`);
    }
  }

  function applyItemSaved(action, payload) {
    state.notes = payload.notes;
    renderNotes();
    if (action.itemKind === "skip" && payload.next_url) {
      setStatus("saved", "Skipped ✓ opening your next pair…");
      saving.leaveWhenSaved(payload.next_url);
      return;
    }
    setStatus("saved", `Saved ✓ ${view.describe(action)}`);
  }

  // The pair's labels, progress and notes as the server holds them now (read again after Back, or before resending).
  function applyRefreshed(payload) {
    state.labels = payload.labels;
    for (const pairKey of Object.keys(state.labels)) {
      const [simpleId, complexId] = pairKey.split(":");
      ensureCandidate(simpleId, Number(complexId));
    }
    state.notes = payload.notes;
    view.updateProgress(payload.progress);
    render();
    renderNotes();
    setStatus("idle", "All saved ✓ (labels read again from the server)");
  }

  function applyConflict(action, payload) {
    if (!payload.current || action.kind !== "label") return null;
    // Another tab wrote first: show its label, so the next key press builds on it.
    state.labels[key(action.simple, action.complex)] = payload.current;
    render();
    return `refused, changed elsewhere; it is now ${LABEL_NAMES[payload.current.label]}. Press the key again to overwrite.`;
  }

  // ----- input ------------------------------------------------------------------------------

  function toggleHelp(show) {
    const help = $("help");
    help.hidden = show === undefined ? !help.hidden : !show;
  }

  const ACTIONS = {
    label: (button) => labelAction(button.dataset.label),
    "next-simple": () => selectSimple(state.simpleIndex + 1),
    "prev-simple": () => selectSimple(state.simpleIndex < 0 ? 0 : state.simpleIndex - 1),
    "next-candidate": () => moveCandidate(1),
    "prev-candidate": () => moveCandidate(-1),
    undo: () => saving.enqueue({ kind: "undo" }),
    help: () => toggleHelp(),
    accept: () => acceptSuggestion(),
    jump: () => openJumpList(),
    skip: () => itemAction("skip"),
    flag: () => itemAction(state.notes.flagged ? "unflag" : "flag"),
    comment: () => window.itemNotes.openComment((text) => itemAction("comment", text)),
  };
  const KEYS = {
    a: () => labelAction("aligned"), p: () => labelAction("partial"), n: () => labelAction("not_aligned"),
    Enter: ACTIONS.accept, j: ACTIONS["next-simple"], k: ACTIONS["prev-simple"], l: ACTIONS["next-candidate"],
    h: ACTIONS["prev-candidate"], g: ACTIONS.jump, s: ACTIONS.skip, f: ACTIONS.flag, c: ACTIONS.comment,
    u: ACTIONS.undo, "?": ACTIONS.help,
  };

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
    if (event.key === "Enter" && target.closest && target.closest("button, a, summary")) return; // Enter presses the focused button
    if (event.key === "Escape") return toggleHelp(false);
    if (!$("help").hidden && event.key !== "?") return;
    const handler = KEYS[event.key];
    if (!handler) return;
    event.preventDefault();
    handler();
  });

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-action]");
    if (button) return ACTIONS[button.dataset.action](button);
    if (event.target === $("help")) return toggleHelp(false);
    const sentence = event.target.closest(".sentence");
    if (!sentence || !root.contains(sentence)) return;
    if (window.getSelection && String(window.getSelection()).length > 0 && sentence.dataset.side === "complex") return; // copying text
    const id = Number(sentence.dataset.id);
    if (sentence.dataset.side === "simple") selectSimple(state.simpleIds.indexOf(id));
    else selectCandidate(id);
  });

  render();
  renderNotes();

  // A page from the HTTP cache (Back, if the browser ignores no-store) or with actions an earlier page
  // left unsent reads the pair's state first, so every write names the event the server holds now.
  const left = store.left();
  const navigation = performance.getEntriesByType("navigation")[0];
  if (left.length || (navigation && navigation.type === "back_forward")) saving.refreshFirst();
  saving.restore(left);
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) saving.refreshFirst(); // restored from the back-forward cache: its labels may be old
  });
})();

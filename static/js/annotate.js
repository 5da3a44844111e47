/* Annotation screen: two views of one document pair, switched with v. The focus view (annotate_focus.js,
 * drawn by annotate_view.js) selects a simple sentence with its best suggestion and labels one pair at a
 * time; the alignment view (annotate_alignment.js, with annotate_groups.js) shows every group and edits
 * them: merge, split, dissolve, unalign, accept a paragraph. This file owns the state (from the JSON in
 * #annotate-data, read again from the server when it may be stale), the actions, and the keys: the key
 * table (#annotate-keys, the same table as the help dialog) says which action each key runs in each view,
 * and each button runs what its key runs. annotate_saving.js sends every action at once, in order, and
 * retries or lists it until saved (an edit's changes go as one action, undone as one); annotate_unsent.js
 * keeps unsent actions across a reload, annotate_session.js gets a lost session back; annotate_suggest.js
 * re-decodes the unlabelled sentences' suggestions after each saved change; jumplist.js,
 * item_notes.js and guidelines.js are the g list, the notes and the guidelines. */
(function () {
  "use strict";

  const root = document.getElementById("annotate");
  if (!root) return;
  const data = JSON.parse(document.getElementById("annotate-data").textContent);
  const keymap = JSON.parse(document.getElementById("annotate-keys").textContent);
  const view = window.annotateView;
  const { LABEL_NAMES, $, key, simpleEl, complexEl, number } = view;
  const VIEW_KEY = "annotate-view";

  const state = {
    simpleIds: data.simple, // simple sentence ids in document order
    candidates: data.candidates, // simple id -> [{complex, predicted, score, confidence, basis}]: suggestions by score, near misses, the rest
    labels: data.labels, // "simple:complex" -> {label, event}
    notes: data.notes, // {flagged, skipped_at, comments: [{text, at}]}: the annotator's item events on the pair
    decisions: data.decisions, // "simple:complex" -> a reviewer's final label
    progress: data.progress,
    view: "focus", // or "alignment"
    simpleIndex: -1,
    complexId: null, // the current candidate
    selectedAt: performance.now(), // when the current pair was selected (or last labelled): seconds_spent
    diffRequest: 0,
  };

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
    urls: {
      undo: root.dataset.undoUrl, label: root.dataset.labelUrl, item: root.dataset.itemUrl, refresh: root.dataset.stateUrl,
      edit: root.dataset.editUrl, done: root.dataset.doneUrl,
    },
    store,
    session,
    currentLabel: (simple, complex) => state.labels[key(simple, complex)],
    saved: applySaved,
    refreshed: applyRefreshed,
    conflict: applyConflict,
  });
  const setStatus = saving.setStatus;
  const hint = (text) => setStatus("hint", text);
  const focus = window.annotateFocus.create({ root, state, hint, clearHint: saving.clearHint });
  const alignment = window.annotateAlignment.create({ root, box: $("alignment-view"), state, edit: editAction, hint });
  const suggest = window.annotateSuggest.create({ url: root.dataset.suggestUrl, state, currentSimple: () => view.currentSimple(state), render });
  const bulk = window.annotateBulk.create({ state, offer: JSON.parse($("annotate-bulk").textContent), edit: editAction, hint, paragraph: currentParagraph });
  const segment = window.annotateSegment.create({ state, alignment, hint, unsaved: () => saving.waiting().count });

  function render() {
    view.render(root, state);
    if (state.view === "alignment") alignment.render();
  }

  // ----- actions ----------------------------------------------------------------------------

  function secondsOnItem() {
    // More than a day on one item is a tab left open: sent as a day (the server refuses more; its figures count it as idle).
    const seconds = Math.min((performance.now() - state.selectedAt) / 1000, 86400);
    state.selectedAt = performance.now(); // the next change counts its own time
    return seconds;
  }

  // source "suggestion": the annotator accepted the aligner's suggestion (Enter), stored and exported as such.
  function labelAction(label, source = "human") {
    const simpleId = view.currentSimple(state);
    if (simpleId === null) return hint("Pick a pair first: a simple sentence (j), then a candidate (l, g or click).");
    if (state.complexId === null) return hint(`Simple #${number(simpleEl(simpleId))} has no suggestion: pick a complex sentence (l, g or click) first.`);
    const suggestions = suggest.shown(simpleId); // which suggestions it was made on: the export's provenance
    saving.enqueue({ kind: "label", simple: simpleId, complex: state.complexId, label, source, suggestions, seconds: secondsOnItem() });
    return true;
  }

  function acceptSuggestion() {
    const candidate = view.candidatesOf(state, view.currentSimple(state)).find((c) => c.complex === state.complexId);
    if (!candidate || !candidate.predicted) return hint("The current pair has no suggestion to accept: label it with a, p or n.");
    labelAction(candidate.predicted, "suggestion");
  }

  // 1-5: the numbered candidate made the current pair and linked, as Enter (its suggestion) or a (the aligner's near
  // miss, or a pair it never proposed) would; 0: the sentence has no partner (every link of it not aligned, one edit).
  // Both then go on to the next simple sentence with no label (J): a second link of the same sentence is made with
  // l / g and a / Enter first, or after k.
  function pick(index) {
    const simpleId = view.currentSimple(state);
    if (simpleId === null) return hint("Select a simple sentence first (j or click); its candidates are numbered 1–5.");
    const candidate = view.candidatesOf(state, simpleId)[index];
    if (!candidate) return hint(`Simple #${number(simpleEl(simpleId))} has no candidate ${index + 1}: g links any complex sentence.`);
    focus.selectCandidate(candidate.complex);
    const made = ["aligned", "partial"].includes(candidate.predicted) ? labelAction(candidate.predicted, "suggestion") : labelAction("aligned");
    if (made) focus.actions["next-open"]();
  }

  function pickNone() {
    const simpleId = view.currentSimple(state);
    if (simpleId === null) return hint("Select a simple sentence first (j or click), then 0 says it has no partner.");
    const linked = ["aligned", "partial"];
    const changes = view.candidatesOf(state, simpleId)
      .filter((c) => {
        const own = state.labels[key(simpleId, c.complex)];
        return own && own.label ? linked.includes(own.label) : linked.includes(c.predicted);
      })
      .map((c) => ({ simple: simpleId, complex: c.complex, label: "not_aligned", source: "human" }));
    if (!changes.length) return hint(`Simple #${number(simpleEl(simpleId))} has no suggestion or link: with no label it counts as unaligned once you mark the pair done (d).`);
    if (editAction({ changes, text: `simple #${number(simpleEl(simpleId))}: no partner (${changes.length} not aligned)` })) focus.actions["next-open"]();
  }

  // An edit of several sentence pairs (alignment view, or A): one action, saved and undone as a whole.
  function editAction(result) {
    if (saving.waiting().count) return hint("Wait a moment: the last change is being saved, and the next edit builds on it.");
    const suggestions = result.changes.some((change) => suggest.shown(change.simple)) ? "refreshed" : "";
    saving.enqueue({ kind: "edit", changes: result.changes, text: result.text, suggestions, seconds: secondsOnItem(), bulkThreshold: result.bulkThreshold });
    return true;
  }

  function currentPara() {
    const simpleId = view.currentSimple(state);
    const para = state.view === "alignment" ? alignment.para() : simpleId !== null ? alignment.model.para[`simple:${simpleId}`] : null;
    return para === undefined ? null : para;
  }

  function currentParagraph() {
    // the paragraph row of the selected sentence, for bulk accept's "only paragraphs ..." choice
    const para = currentPara();
    if (para === null) return null;
    return { name: alignment.model.paraNames[para], simpleIds: alignment.model.simple.filter((simple) => alignment.model.para[`simple:${simple}`] === para) };
  }

  function acceptParagraph() {
    const para = currentPara();
    if (para === null) return hint("Select a sentence first (j), then A accepts the suggestions of its paragraphs.");
    const result = window.annotateGroups.acceptParagraph(para, state, alignment.model);
    if (result.hint) return hint(result.hint);
    editAction(result);
  }

  function toggleView() {
    const toAlignment = state.view === "focus";
    if (toAlignment) alignment.focus("simple", view.currentSimple(state));
    state.view = toAlignment ? "alignment" : "focus";
    root.dataset.view = state.view;
    $("alignment-view").hidden = !toAlignment;
    root.querySelector(".annotate-docs").hidden = toAlignment;
    try {
      window.localStorage.setItem(VIEW_KEY, state.view);
    } catch (error) {
      // not remembered: the next page opens in the focus view
    }
    if (toAlignment) {
      alignment.render();
      alignment.reveal();
    } else {
      const simpleId = alignment.simple();
      if (simpleId !== null) focus.selectSimple(state.simpleIds.indexOf(simpleId));
      else render();
    }
  }

  function finish(confirmed) {
    const left = state.progress.total - state.progress.labelled;
    if (left > 0 && !confirmed) {
      $("finish-left").textContent = `${left} of ${state.progress.total} simple sentences have no label of yours`;
      $("finish-box").hidden = false;
      return;
    }
    $("finish-box").hidden = true;
    saving.enqueue({ kind: "done" });
  }

  function itemAction(itemKind, text) {
    saving.enqueue({ kind: "item", itemKind, text: text || "" });
  }

  function toggleHelp(show) {
    const help = $("help");
    help.hidden = show === undefined ? !help.hidden : !show;
  }

  const ACTIONS = {
    ...focus.actions,
    ...alignment.actions,
    "label-aligned": () => labelAction("aligned"),
    "label-partial": () => labelAction("partial"),
    "label-not_aligned": () => labelAction("not_aligned"),
    accept: () => acceptSuggestion(),
    "accept-paragraph": () => acceptParagraph(),
    "accept-bulk": () => bulk.open(),
    "edit-sentence": () => segment.open(),
    ...Object.fromEntries([1, 2, 3, 4, 5].map((k) => [`pick-${k}`, () => pick(k - 1)])),
    "pick-none": () => pickNone(),
    "toggle-view": () => toggleView(),
    undo: () => saving.enqueue({ kind: "undo" }),
    finish: () => finish(false),
    paragraphs: () => saving.leaveWhenSaved($("paragraphs-step").href),
    skip: () => itemAction("skip"),
    flag: () => itemAction(state.notes.flagged ? "unflag" : "flag"),
    comment: () => window.itemNotes.openComment((text) => itemAction("comment", text)),
    guidelines: () => window.guidelines.toggle(),
    help: () => toggleHelp(),
    close: () => {
      toggleHelp(false);
      $("finish-box").hidden = true;
      bulk.close();
      segment.close();
    },
  };
  for (const [name, actions] of Object.entries(keymap)) {
    for (const action of Object.values(actions)) if (!ACTIONS[action]) throw new Error(`key table: no action ${action} (${name} view)`);
  }

  // ----- answers from the server ------------------------------------------------------------------

  function applyChanges(changes) {
    for (const change of changes) {
      state.labels[key(change.simple, change.complex)] = { label: change.label, event: change.event };
      focus.ensureCandidate(String(change.simple), change.complex);
    }
  }

  function applySaved(action, payload) {
    if (action.kind === "item") return applyItemSaved(action, payload);
    if (action.kind === "done") {
      setStatus("saved", "Marked done ✓ opening your next pair…");
      return saving.leaveWhenSaved(payload.next_url);
    }
    if (payload.progress) updateProgress(payload.progress);
    if (action.kind === "undo" && !payload.undone) return hint(payload.message);
    const changes = payload.changes || [payload];
    applyChanges(changes);
    suggest.schedule(); // the rest of the pair, decoded again given this change
    const first = changes.reduce((a, b) => (state.simpleIds.indexOf(b.simple) < state.simpleIds.indexOf(a.simple) ? b : a)); // in document order
    if (action.kind === "undo") {
      alignment.focus("simple", first.simple);
      if (state.view === "focus") focus.show(first.simple, first.complex);
      else {
        render();
        alignment.reveal();
      }
      const count = payload.changes.length;
      setStatus("saved", count > 1
        ? `Undone ✓ the last edit (${count} sentence pairs)`
        : `Undone ✓ simple #${number(simpleEl(first.simple))} ~ complex #${number(complexEl(first.complex))} is ${LABEL_NAMES[first.label]} again`);
    } else {
      render();
      if (state.view === "alignment") alignment.reveal();
      setStatus("saved", `Saved ✓ ${view.describe(action)}`);
    }
  }

  function applyItemSaved(action, payload) {
    state.notes = payload.notes;
    window.itemNotes.render(state.notes);
    if (action.itemKind === "skip" && payload.next_url) {
      setStatus("saved", "Skipped ✓ opening your next pair…");
      saving.leaveWhenSaved(payload.next_url);
      return;
    }
    setStatus("saved", `Saved ✓ ${view.describe(action)}`);
  }

  // The pair's labels, progress, notes and decisions as the server holds them now (read again after Back, or before resending).
  function applyRefreshed(payload) {
    state.labels = payload.labels;
    for (const pairKey of Object.keys(state.labels)) {
      const [simpleId, complexId] = pairKey.split(":");
      focus.ensureCandidate(simpleId, Number(complexId));
    }
    state.notes = payload.notes;
    state.decisions = payload.decisions;
    updateProgress(payload.progress);
    render();
    window.itemNotes.render(state.notes);
    setStatus("idle", "All saved ✓ (labels read again from the server)");
    if (Object.keys(state.labels).length) suggest.schedule();
  }

  function applyConflict(action, payload) {
    if (!payload.current || !["label", "edit"].includes(action.kind)) return null;
    // Another tab wrote first: show its label, so the next key press builds on it.
    const simple = action.kind === "edit" ? payload.simple : action.simple;
    const complex = action.kind === "edit" ? payload.complex : action.complex;
    state.labels[key(simple, complex)] = payload.current;
    render();
    const pair = action.kind === "edit" ? `simple #${number(simpleEl(simple))} ~ complex #${number(complexEl(complex))} ` : "";
    return `refused, ${pair}changed elsewhere; it is now ${LABEL_NAMES[payload.current.label]}. Press the key again to overwrite.`;
  }

  function updateProgress(progress) {
    state.progress = progress;
    view.updateProgress(progress);
  }

  // ----- input ------------------------------------------------------------------------------

  const open = (id) => !$(id).hidden;

  // An Enter that answered a dialog does nothing more while it is held, or when the next key is Enter again within
  // DIALOG_ENTER_MS: a double Enter on the bulk dialog also accepted the current suggestion, one the annotator had
  // not looked at. Any other key in between ends the guard.
  const DIALOG_ENTER_MS = 500;
  let answeredAt = null;
  const echoOfAnswer = (event) => {
    if (answeredAt === null) return false;
    if (event.key === "Enter" && (event.repeat || event.timeStamp - answeredAt < DIALOG_ENTER_MS)) return true;
    answeredAt = null;
    return false;
  };

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (echoOfAnswer(event)) {
      event.preventDefault();
      return;
    }
    if (segment.isOpen()) {
      if (event.key === "Escape") {
        segment.close();
        event.preventDefault();
      }
      return; // the dialog's own buttons and fields take every other key
    }
    if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
    if (event.key === "Enter" && target.closest && target.closest("button, a, summary")) return; // Enter presses the focused button
    if (open("finish-box") || bulk.isOpen()) {
      if (event.key === "Enter") {
        answeredAt = event.timeStamp;
        if (bulk.isOpen()) bulk.confirm();
        else finish(true);
      } else if (event.key === "Escape") ACTIONS.close();
      event.preventDefault();
      return;
    }
    const action = keymap[state.view][event.key];
    if (!action || (open("help") && !["help", "close"].includes(action))) return;
    event.preventDefault();
    ACTIONS[action]();
  });

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-key], [data-finish], [data-bulk]");
    if (button && (button.dataset.finish || button.dataset.bulk) && event.detail === 0) answeredAt = event.timeStamp; // pressed by Enter
    if (button && button.dataset.finish) return button.dataset.finish === "yes" ? finish(true) : ACTIONS.close();
    if (button && button.dataset.bulk) return button.dataset.bulk === "no" ? ACTIONS.close() : bulk.confirm(button.dataset.bulk === "paragraph" ? "paragraph" : "pair");
    if (button) {
      const action = keymap[state.view][button.dataset.key];
      if (action) ACTIONS[action]();
      return;
    }
    if ([$("help"), $("finish-box"), $("bulk-box")].includes(event.target)) return ACTIONS.close();
    const sentence = event.target.closest(".sentence");
    if (!sentence || !root.contains(sentence)) return;
    if (window.getSelection && String(window.getSelection()).length > 0 && sentence.dataset.side === "complex") return; // copying text
    const id = Number(sentence.dataset.id);
    if (sentence.dataset.side === "simple") focus.selectSimple(state.simpleIds.indexOf(id));
    else focus.selectCandidate(id);
  });

  $("done-box").addEventListener("submit", (event) => {
    event.preventDefault(); // through the save queue: after every label before it
    finish(false);
  });

  render();
  window.itemNotes.render(state.notes);
  let remembered = null;
  try {
    remembered = window.localStorage.getItem(VIEW_KEY);
  } catch (error) {
    remembered = null;
  }
  if (remembered === "alignment") toggleView();
  focus.restore(); // the sentence selected before Back or a reload, kept in the history entry

  // A page from the HTTP cache (Back, if the browser ignores no-store) or with actions an earlier page
  // left unsent reads the pair's state first, so every write names the event the server holds now.
  const left = store.left();
  const navigation = performance.getEntriesByType("navigation")[0];
  if (left.length || (navigation && navigation.type === "back_forward")) saving.refreshFirst();
  saving.restore(left);
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) saving.refreshFirst(); // restored from the back-forward cache: its labels may be old
  });
  root.dataset.ready = "true"; // the keys are bound (browser tests wait for it)
})();

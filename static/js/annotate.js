/* Annotation screen: select a simple sentence (its best suggestion is focused with it), walk or
 * jump to a complex candidate, label the pair with the keyboard or the buttons; skip, flag or
 * comment on the document pair. Every action is saved at once with fetch(); actions are sent one
 * at a time in order (each label write names the event it replaces, so two tabs are detected),
 * network failures are retried with backoff and stay listed until saved, refusals are shown.
 * State comes from the JSON in #annotate-data; the word diff is an htmx fragment of the page. */
(function () {
  "use strict";

  const root = document.getElementById("annotate");
  if (!root) return;
  const data = JSON.parse(document.getElementById("annotate-data").textContent);
  const LABEL_NAMES = { aligned: "aligned", partial: "partial", not_aligned: "not aligned", "": "unlabelled" };
  const BACKOFF_S = [1, 2, 4, 8]; // then every 15 s until it goes through
  const SLOW_RETRY_S = 15;

  const state = {
    simpleIds: data.simple, // simple sentence ids in document order
    candidates: data.candidates, // simple id -> [{complex, predicted, score, marginal}]: suggestions by score, near misses, the rest
    labels: data.labels, // "simple:complex" -> {label, event}
    notes: data.notes, // {flagged, skipped_at, comments: [{text, at}]}: the annotator's item events on the pair
    simpleIndex: -1,
    complexId: null, // the current candidate
    selectedAt: performance.now(), // when the current pair was selected (or last labelled): seconds_spent
    queue: [], // actions not saved yet; the head is in flight
    refused: [], // actions the server refused (conflict, bad input): shown until dismissed
    sending: false,
    retryTimer: null,
    diffRequest: 0,
    nextActionId: 1,
    leaveTo: null, // where a skip goes once every action is saved
  };

  const $ = (id) => document.getElementById(id);
  const key = (simple, complex) => `${simple}:${complex}`;
  const simpleEl = (id) => $(`s-${id}`);
  const complexEl = (id) => $(`c-${id}`);
  const number = (el) => (el ? el.dataset.number : "?");

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
      return match ? decodeURIComponent(match[1]) : "";
    }
  }

  const currentSimple = () => (state.simpleIndex >= 0 ? state.simpleIds[state.simpleIndex] : null);
  const candidatesOf = (simpleId) => state.candidates[simpleId] || [];

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

  function render() {
    const simpleId = currentSimple();
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
      for (const candidate of candidatesOf(simpleId)) {
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
    renderCurrentPair();
  }

  function renderCurrentPair() {
    const box = $("current-pair");
    const simpleId = currentSimple();
    box.replaceChildren();
    const line = (text, className) => box.appendChild(element("p", className || "", text));
    if (simpleId === null) {
      line("Select a simple sentence (j or click), then a complex candidate (l or click), then label it.", "muted small");
      return;
    }
    const list = candidatesOf(simpleId);
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
    clearHint();
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
    clearHint();
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
      const response = await fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" });
      const html = await response.text();
      if (ticket !== state.diffRequest) return;
      if (!response.ok) throw new Error(html);
      diff.innerHTML = html; // rendered and escaped by the server
    } catch (error) {
      if (ticket === state.diffRequest) diff.innerHTML = '<h2>Word differences</h2><p class="error small">Could not load the diff; move away and back to try again.</p>';
    }
  }

  // ----- saving -----------------------------------------------------------------------------

  function clearHint() {
    // A hint answered a key press; once the annotator moves on it would only mislead.
    if ($("save-status").dataset.state === "hint" && !state.queue.length && !state.refused.length) setStatus("idle", "All saved ✓");
  }

  function setStatus(kind, text) {
    const el = $("save-status");
    el.dataset.state = kind;
    el.textContent = text;
  }

  function describe(action) {
    if (action.kind === "undo") return "undo";
    if (action.kind === "item") return ITEM_NAMES[action.itemKind];
    return `simple #${number(simpleEl(action.simple))} ~ complex #${number(complexEl(action.complex))} → ${LABEL_NAMES[action.label]}`;
  }

  function linkButton(text, onClick) {
    const button = element("button", "link-button", text);
    button.type = "button";
    button.addEventListener("click", onClick);
    return button;
  }

  function renderPending() {
    const list = $("pending");
    list.replaceChildren();
    for (const action of [...state.queue, ...state.refused]) {
      const item = element("li", `pending-${action.status}`, `${describe(action)}: ${action.note} `);
      if (action.status === "refused") {
        item.append(linkButton("dismiss", () => { state.refused = state.refused.filter((other) => other !== action); renderPending(); }));
      } else if (action.status === "retrying") {
        item.append(linkButton("retry now", () => { clearTimeout(state.retryTimer); pump(); }));
      }
      list.appendChild(item);
    }
    list.hidden = !list.children.length;
  }

  function enqueue(action) {
    action.id = state.nextActionId++;
    action.attempts = 0;
    action.status = "queued";
    action.note = "waiting";
    state.queue.push(action);
    renderPending();
    if (!state.sending && !state.retryTimer) pump();
  }

  function labelAction(label) {
    const simpleId = currentSimple();
    if (simpleId === null) return setStatus("hint", "Pick a pair first: a simple sentence (j), then a candidate (l, g or click).");
    if (state.complexId === null) return setStatus("hint", `Simple #${number(simpleEl(simpleId))} has no suggestion: pick a complex sentence (l, g or click) first.`);
    const seconds = (performance.now() - state.selectedAt) / 1000;
    state.selectedAt = performance.now(); // the next change of this item counts its own time
    enqueue({ kind: "label", simple: simpleId, complex: state.complexId, label, seconds });
  }

  function acceptSuggestion() {
    const candidate = candidatesOf(currentSimple()).find((c) => c.complex === state.complexId);
    if (!candidate || !candidate.predicted) return setStatus("hint", "The current pair has no suggestion to accept: label it with a, p or n.");
    labelAction(candidate.predicted);
  }

  const ITEM_NAMES = { skip: "skip this pair", flag: "flag this pair", unflag: "remove the flag", comment: "comment" };

  function itemAction(itemKind, text) {
    enqueue({ kind: "item", itemKind, text: text || "" });
  }

  function requestBody(action) {
    const body = new URLSearchParams();
    if (action.kind === "item") {
      body.set("kind", action.itemKind);
      body.set("text", action.text);
    }
    if (action.kind === "label") {
      const current = state.labels[key(action.simple, action.complex)];
      body.set("simple_sentence_id", action.simple);
      body.set("complex_sentence_id", action.complex);
      body.set("label", action.label);
      body.set("expected_previous", current ? current.event : ""); // read now: earlier actions may have changed it
      body.set("seconds_spent", action.seconds.toFixed(2));
    }
    return body;
  }

  async function pump() {
    state.retryTimer = null;
    const action = state.queue[0];
    if (!action || state.sending) return;
    state.sending = true;
    action.status = "sending";
    action.note = "saving…";
    setStatus("saving", "Saving…");
    renderPending();
    let response = null;
    let payload = null;
    try {
      const url = { undo: root.dataset.undoUrl, label: root.dataset.labelUrl, item: root.dataset.itemUrl }[action.kind];
      response = await fetch(url, {
        method: "POST",
        body: requestBody(action),
        headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
        credentials: "same-origin",
      });
      if ((response.headers.get("Content-Type") || "").includes("application/json")) payload = await response.json();
    } catch (error) {
      response = null; // network failure: retried below
    }
    state.sending = false;
    if (response && payload && response.ok) {
      state.queue.shift();
      applySaved(action, payload);
    } else if (response && response.status >= 400 && response.status < 500) {
      state.queue.shift(); // the server said no: retrying would not help, so show why and keep it listed
      refuse(action, response.status, payload || { error: `the server answered ${response.status} ${response.statusText}` });
    } else {
      return scheduleRetry(action, response);
    }
    renderPending();
    if (state.queue.length) pump();
    else if (state.leaveTo) window.location.assign(state.leaveTo);
  }

  function applySaved(action, payload) {
    if (action.kind === "item") return applyItemSaved(action, payload);
    if (payload.progress) updateProgress(payload.progress);
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
      setStatus("saved", `Saved ✓ ${describe(action)}`);
    }
  }

  function applyItemSaved(action, payload) {
    state.notes = payload.notes;
    renderNotes();
    if (action.itemKind === "skip" && payload.next_url) {
      setStatus("saved", "Skipped ✓ opening your next pair…");
      state.leaveTo = payload.next_url; // pump() leaves once nothing is left unsaved
      return;
    }
    setStatus("saved", `Saved ✓ ${describe(action)}`);
  }

  const renderNotes = () => window.itemNotes.render(state.notes);

  function openJumpList() {
    const simpleId = currentSimple();
    if (simpleId === null) return setStatus("hint", "Select a simple sentence first (j or click), then g links a complex sentence to it.");
    window.jumpList.open(selectCandidate, `Link simple #${number(simpleEl(simpleId))} to complex sentence…`);
  }

  function refuse(action, status, payload) {
    action.status = "refused";
    if (status === 409 && payload.current && action.kind === "label") {
      // Another tab wrote first: show its label, so the next key press builds on it.
      state.labels[key(action.simple, action.complex)] = payload.current;
      render();
      action.note = `refused, changed elsewhere; it is now ${LABEL_NAMES[payload.current.label]}. Press the key again to overwrite.`;
      setStatus("conflict", `Conflict: ${payload.error}`);
    } else {
      action.note = `refused: ${payload.error}`;
      setStatus("error", `Not saved: ${payload.error}`);
    }
    state.refused.push(action);
  }

  function scheduleRetry(action, response) {
    action.attempts += 1;
    const wait = BACKOFF_S[action.attempts - 1] || SLOW_RETRY_S;
    const why = !response ? "no connection" : response.redirected ? "signed out? log in again in another tab" : `server error ${response.status}`;
    action.status = "retrying";
    action.note = `not saved (${why}); retry ${action.attempts} in ${wait} s`;
    setStatus("retrying", `Save failed — retrying (${why})`);
    renderPending();
    state.retryTimer = setTimeout(pump, wait * 1000);
  }

  function updateProgress(progress) {
    $("progress-count").textContent = `${progress.labelled} / ${progress.total}`;
    $("progress-bar").style.width = `${progress.percent}%`;
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
    undo: () => enqueue({ kind: "undo" }),
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

  window.addEventListener("beforeunload", (event) => {
    if (state.queue.length) event.preventDefault(); // unsaved actions: the browser asks before leaving
  });

  render();
  renderNotes();
})();

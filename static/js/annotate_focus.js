/* The focus view of the annotation screen: one simple sentence selected (j / k or a click) with its best
 * suggestion as the current pair, the candidates walked with h / l, any complex sentence linked through
 * the jump list (g) or a click, and the word diff of the current pair (an htmx fragment of the page).
 * annotate.js owns the state and the keys; this file moves the selection and keeps the pair on screen. */
(function () {
  "use strict";

  const view = window.annotateView;
  const { $, simpleEl, complexEl, number } = view;
  const SUGGESTED = ["aligned", "partial"];

  /* root: #annotate; state: annotate.js's state; hint(text): say why a key did nothing; clearHint(): a move
   * makes an earlier hint stale. */
  function create({ root, state, hint, clearHint }) {
    const currentSimple = () => view.currentSimple(state);
    const candidatesOf = (simpleId) => view.candidatesOf(state, simpleId);
    const render = () => view.render(root, state);

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
      list.push({ complex: complexId, predicted: null, score: null, confidence: null, basis: null });
      list.sort((a, b) => {
        const [x, y] = [orderKey(a), orderKey(b)];
        return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
      });
    }

    // The suggestion j focuses: the best-scored candidate the aligner predicted aligned or partial, or none.
    const bestSuggestion = (simpleId) => candidatesOf(simpleId).find((c) => SUGGESTED.includes(c.predicted)) || null;

    const reveal = () => view.revealPair(simpleEl(currentSimple()), state.complexId !== null ? complexEl(state.complexId) : null);

    // The selection is kept in the page's history entry, so Back (or a reload) to the screen comes back to it.
    function remember() {
      try {
        window.history.replaceState({ ...(window.history.state || {}), simple: currentSimple(), complex: state.complexId }, "");
      } catch (error) {
        // a browser refusing history state: the selection is only lost on Back, as before
      }
    }

    // Select what the history entry remembers (see remember), if its sentences are still on the screen.
    function restore() {
      const kept = window.history.state || {};
      const index = state.simpleIds.indexOf(kept.simple);
      if (index < 0) return;
      state.simpleIndex = index;
      state.complexId = kept.complex !== null && complexEl(kept.complex) ? kept.complex : null;
      if (state.complexId !== null) ensureCandidate(kept.simple, state.complexId);
      state.selectedAt = performance.now();
      render();
      reveal();
      loadDiff();
    }

    function selectSimple(index) {
      if (!state.simpleIds.length) return;
      state.simpleIndex = Math.max(0, Math.min(state.simpleIds.length - 1, index));
      const best = bestSuggestion(currentSimple());
      state.complexId = best ? best.complex : null; // focused with the sentence: j then a accepts it
      state.selectedAt = performance.now();
      clearHint();
      render();
      reveal();
      loadDiff();
      remember();
    }

    function selectCandidate(complexId) {
      const simpleId = currentSimple();
      if (simpleId === null) return hint("Select a simple sentence first (j or click).");
      ensureCandidate(simpleId, complexId);
      state.complexId = complexId;
      state.selectedAt = performance.now();
      clearHint();
      render();
      reveal();
      loadDiff();
      remember();
    }

    function moveCandidate(delta) {
      const simpleId = currentSimple();
      if (simpleId === null) return hint("Select a simple sentence first (j or click).");
      const list = candidatesOf(simpleId);
      if (!list.length) return hint("No candidates: click a complex sentence to link it.");
      const at = list.findIndex((c) => c.complex === state.complexId);
      const next = at < 0 ? (delta > 0 ? 0 : list.length - 1) : Math.max(0, Math.min(list.length - 1, at + delta));
      selectCandidate(list[next].complex);
    }

    // Show a sentence pair that an undo or an edit changed.
    function show(simpleId, complexId) {
      const index = state.simpleIds.indexOf(simpleId);
      if (index < 0) return;
      state.simpleIndex = index;
      state.complexId = complexId;
      state.selectedAt = performance.now();
      render();
      reveal();
      loadDiff();
      remember();
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

    // J / K: the next / previous simple sentence with no label of yours (after a bulk accept, the ones left to decide).
    function selectOpen(delta) {
      const labelled = (simpleId) => Object.entries(state.labels).some(([pairKey, value]) => pairKey.startsWith(`${simpleId}:`) && value.label);
      for (let index = state.simpleIndex + delta; index >= 0 && index < state.simpleIds.length; index += delta) {
        if (!labelled(state.simpleIds[index])) return selectSimple(index);
      }
      return hint(delta > 0 ? "No simple sentence after this one is without a label of yours (d marks the pair done)." : "No simple sentence before this one is without a label of yours.");
    }

    function openJumpList() {
      const simpleId = currentSimple();
      if (simpleId === null) return hint("Select a simple sentence first (j or click), then g links a complex sentence to it.");
      window.jumpList.open(selectCandidate, `Link simple #${number(simpleEl(simpleId))} to complex sentence…`, candidatesOf(simpleId));
    }

    return {
      ensureCandidate,
      restore,
      selectSimple,
      selectCandidate,
      show,
      loadDiff,
      actions: {
        "next-simple": () => selectSimple(state.simpleIndex + 1),
        "prev-simple": () => selectSimple(state.simpleIndex < 0 ? 0 : state.simpleIndex - 1),
        "next-open": () => selectOpen(1),
        "prev-open": () => selectOpen(-1),
        "next-candidate": () => moveCandidate(1),
        "prev-candidate": () => moveCandidate(-1),
        jump: () => openJumpList(),
      },
    };
  }

  window.annotateFocus = { create };
})();

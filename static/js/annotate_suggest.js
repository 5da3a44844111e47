/* Suggestions that learn while the annotator labels. After a label, an edit or an undo is saved (debounced), the
 * screen asks the server to decode the pair again with the annotator's labels clamped (annotation/labelling/refresh.py)
 * and replaces the candidates of the sentences they have not labelled yet; a labelled sentence is never touched.
 * Sentences whose best suggestion changed are marked ("↻ new suggestion") until the next refresh, and #suggest-status
 * says how many changed. A label made on a refreshed list says so (suggestions=refreshed: the export's provenance).
 * A refused refresh (no stored scores, no run) leaves the screen as it was and says why once. */
(function () {
  "use strict";

  const DEBOUNCE_MS = 250;
  const SUGGESTED = ["aligned", "partial"];
  const best = (list) => {
    const found = (list || []).find((c) => SUGGESTED.includes(c.predicted));
    return found ? found.complex : null;
  };

  /* url: the pair's suggestions URL; state: annotate.js's state (candidates, labels, simpleIds, complexId);
   * currentSimple(): the selected simple sentence id or null; render(): draw the screen again. */
  function create({ url, state, currentSimple, render }) {
    let timer = null;
    let busy = false;
    let again = false;
    let refusedOnce = false;
    state.refreshed = {}; // simple id -> true: the list on screen came from a refresh
    state.changed = {}; // simple id -> true: its best suggestion changed in the latest refresh

    const labelled = (simpleId) => Object.entries(state.labels).some(([pairKey, value]) => value.label && pairKey.split(":")[0] === String(simpleId));

    function say(text) {
      const el = document.getElementById("suggest-status");
      if (el) el.textContent = text;
    }

    function schedule() {
      clearTimeout(timer);
      timer = setTimeout(refresh, DEBOUNCE_MS);
    }

    async function refresh() {
      if (busy) {
        again = true; // a label saved while the last refresh ran: ask again when it answers
        return;
      }
      busy = true;
      try {
        const response = await fetch(url, { cache: "no-store", credentials: "same-origin", headers: { Accept: "application/json" } });
        const payload = await response.json().catch(() => ({}));
        if (response.ok) apply(payload);
        else if (!refusedOnce && payload.error) {
          refusedOnce = true;
          say(`Suggestions not refreshed: ${payload.error}`);
        }
      } catch (error) {
        // offline: the screen keeps the suggestions it shows, and the next label asks again
      } finally {
        busy = false;
        if (again) {
          again = false;
          schedule();
        }
      }
    }

    function apply(payload) {
      const selected = currentSimple();
      state.changed = {};
      let changed = 0;
      for (const [simpleId, list] of Object.entries(payload.candidates || {})) {
        if (labelled(simpleId)) continue; // labelled while the refresh ran: its own labels rule
        const before = best(state.candidates[simpleId]);
        const after = best(list);
        const followBest = String(selected) === simpleId && state.complexId === before;
        state.candidates[simpleId] = list;
        state.refreshed[simpleId] = true;
        if (before !== after) {
          state.changed[simpleId] = true;
          changed += 1;
        }
        if (followBest) state.complexId = after; // the selected sentence's suggestion moved: j-then-a accepts the new one
      }
      render();
      const known = payload.known === 1 ? "1 labelled sentence" : `${payload.known} labelled sentences`;
      say(changed
        ? `Suggestions refreshed from your ${known}: ${changed} changed (↻).`
        : `Suggestions refreshed from your ${known}: none changed.`);
    }

    return { schedule, shown: (simpleId) => (state.refreshed[simpleId] ? "refreshed" : "") };
  }

  window.annotateSuggest = { create };
})();

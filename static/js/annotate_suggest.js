/* Suggestions that learn while the annotator labels. After a label, an edit or an undo is saved (debounced), the
 * screen asks the server to decode the pair again near the annotator's labels (annotation/labelling/refresh.py) and
 * replaces the candidates of the sentences the answer lists; a labelled sentence is never touched. A sentence the
 * answer names in `stored` (no label reaches it, say after an undo) gets back the run's suggestions the page loaded
 * with; one the answer leaves out keeps what it shows. Sentences whose best suggestion changed to one the run did
 * not suggest are marked ("↻ new suggestion") until the next refresh (not one an undo put back to the run's own), and
 * #suggest-status says how many changed. A label made on a
 * refreshed list says so (suggestions=refreshed: the export's provenance); one made on the run's own suggestions not.
 *
 * One refresh at a time: a change while one runs is asked for when it answers, and that answer, superseded, is
 * dropped. An answer with `next` is followed at once by `?from=next` (the windows the server's budget left out).
 * A 429 (another refresh of this annotator, or a busy server) keeps the suggestions and asks again after its
 * Retry-After, silently; a refresh that hangs is aborted (AbortController) and the next change asks again.
 * A refused refresh (no stored scores, no run) leaves the screen as it was and says why once. */
(function () {
  "use strict";

  const DEBOUNCE_MS = 250;
  const TIMEOUT_MS = 20000;
  const SUGGESTED = ["aligned", "partial"];
  const best = (list) => {
    const found = (list || []).find((c) => SUGGESTED.includes(c.predicted));
    return found ? found.complex : null;
  };

  /* url: the pair's suggestions URL; state: annotate.js's state (candidates, labels, simpleIds, complexId);
   * currentSimple(): the selected simple sentence id or null; render(): draw the screen again. */
  function create({ url, state, currentSimple, render }) {
    let timer = null;
    let inFlight = null; // the AbortController of the refresh being answered
    let changes = 0; // saved changes so far: an answer asked before the latest one is superseded
    let retryAt = 0; // not before this time (ms): the server said 429
    let refusedOnce = false;
    const loaded = structuredClone(state.candidates); // the run's stored suggestions, as the page came with them
    state.refreshed = {}; // simple id -> true: the list on screen came from a refresh
    state.changed = {}; // simple id -> true: its best suggestion changed in the latest refresh

    const labelled = (simpleId) => Object.entries(state.labels).some(([pairKey, value]) => value.label && pairKey.split(":")[0] === String(simpleId));

    function say(text) {
      const el = document.getElementById("suggest-status");
      if (el) el.textContent = text;
    }

    function later(from, delay) {
      clearTimeout(timer);
      timer = setTimeout(() => refresh(from), Math.max(delay, retryAt - Date.now()));
    }

    function schedule() {
      changes += 1;
      if (!inFlight) later(0, DEBOUNCE_MS); // else: asked for when the running one answers
    }

    async function refresh(from) {
      if (inFlight) return;
      const asked = changes;
      const controller = new AbortController();
      const hung = setTimeout(() => controller.abort(), TIMEOUT_MS);
      inFlight = controller;
      let next = null;
      try {
        const response = await fetch(from ? `${url}?from=${from}` : url, {
          cache: "no-store", credentials: "same-origin", headers: { Accept: "application/json" }, signal: controller.signal,
        });
        const payload = await response.json().catch(() => ({}));
        if (response.status === 429) {
          const seconds = Number(response.headers.get("Retry-After"));
          retryAt = Date.now() + 1000 * (Number.isFinite(seconds) && seconds > 0 ? seconds : 1);
          next = from; // the same question, after the delay (or the newer one, when a change came meanwhile)
        } else if (asked !== changes) {
          next = 0; // superseded by a later change: its answer would be older than the labels
        } else if (response.ok) {
          apply(payload, from);
          if (payload.next !== null && payload.next !== undefined) next = payload.next;
        } else if (!refusedOnce && payload.error) {
          refusedOnce = true;
          say(`Suggestions not refreshed: ${payload.error}`);
        }
      } catch (error) {
        // offline or aborted: the screen keeps the suggestions it shows, and the next change asks again
      } finally {
        clearTimeout(hung);
        inFlight = null;
        if (asked !== changes) later(0, DEBOUNCE_MS);
        else if (next !== null) later(next, 0);
      }
    }

    function apply(payload, from) {
      const selected = currentSimple();
      if (!from) state.changed = {};
      let changed = 0;
      const replace = (simpleId, list, refreshed) => {
        if (labelled(simpleId)) return; // labelled while the refresh ran: its own labels rule
        const before = best(state.candidates[simpleId]);
        const after = best(list);
        const followBest = String(selected) === simpleId && state.complexId === before;
        state.candidates[simpleId] = list;
        state.refreshed[simpleId] = refreshed;
        if (before !== after && after === best(loaded[simpleId])) {
          delete state.changed[simpleId]; // back to the run's own suggestion (an undo): nothing new to mark
        } else if (before !== after) {
          state.changed[simpleId] = true;
          changed += 1;
        }
        if (followBest) state.complexId = after; // the selected sentence's suggestion moved: j-then-a accepts the new one
      };
      for (const [simpleId, list] of Object.entries(payload.candidates || {})) replace(simpleId, list, true);
      for (const simpleId of (payload.stored || []).map(String)) {
        // out of every label's reach (an undo): the run's own suggestions, as the page loaded them
        if (state.refreshed[simpleId]) replace(simpleId, structuredClone(loaded[simpleId] || []), false);
      }
      render();
      const known = payload.known === 1 ? "1 labelled sentence" : `${payload.known} labelled sentences`;
      const total = Object.keys(state.changed).length;
      if (from && !changed) return; // a follow-up that changed nothing: the status stands
      say(total
        ? `Suggestions refreshed from your ${known}: ${total} changed (↻).`
        : `Suggestions refreshed from your ${known}: none changed.`);
    }

    window.addEventListener("pagehide", () => {
      if (inFlight) inFlight.abort();
      clearTimeout(timer);
    });

    return { schedule, shown: (simpleId) => (state.refreshed[simpleId] ? "refreshed" : "") };
  }

  window.annotateSuggest = { create };
})();

/* Review page: keyboard adjudication. j / k move the focused row, a / p / n set its final label, 1..9 take
 * that annotator's label, v marks the pair verified once no row is open, ? lists the keys. A decision clicks
 * the row's own button, so it goes through the same htmx form as a mouse click (with its expected_previous
 * conflict check); focus moves on to the next open row at once, and back to a row the server refused.
 * The word-diff card follows the focused row: its complex sentence number is a link (the page with that diff,
 * without JavaScript) whose htmx request fires on a "diff" event, sent once focus has rested for a moment.
 * A decision is on its way from its key until htmx's afterRequest for that row (which comes after the answer is
 * swapped in, in the same task): the table says so with aria-busy, which is also what browser tests wait for. */
(function () {
  "use strict";
  const table = document.getElementById("review");
  if (!table) return;
  const help = document.getElementById("help");
  const status = document.getElementById("curation-status");
  const pending = new Set(); // ids of rows whose decision is on its way
  let focusedId = null;
  const busy = () => table.setAttribute("aria-busy", pending.size ? "true" : "false");

  const rows = () => Array.from(table.querySelectorAll("tbody tr[data-row]"));
  const focused = () => (focusedId && document.getElementById(focusedId)) || null;
  const isOpen = (row) => row.dataset.open === "1" && !pending.has(row.id);
  const say = (text) => { status.textContent = text; };
  const number = (row) => { // "simple #3 ~ complex #1"
    const [simple, complex] = row.querySelectorAll("td > .muted");
    return `simple ${simple.textContent} ~ complex ${complex.textContent}`;
  };

  function mark(row) { // outline the row and its side-by-side line (both are new elements after a swap)
    document.querySelectorAll("tr.focused").forEach((el) => el.classList.remove("focused"));
    if (!row) return;
    row.classList.add("focused");
    const line = document.getElementById(`curation-${row.dataset.simple}`);
    if (line) line.classList.add("focused");
  }

  let diffTimer = null;
  function showDiff(row) { // fetch the row's word diff unless the card shows it already; j j j fetches once
    clearTimeout(diffTimer);
    const shown = document.querySelector("[data-diff-of]");
    const link = row && row.querySelector("[data-diff-link]");
    if (!link || !window.htmx || (shown && shown.dataset.diffOf === row.id)) return;
    diffTimer = setTimeout(() => window.htmx.trigger(link, "diff"), 120);
  }

  function focus(row, block) {
    focusedId = row ? row.id : null;
    mark(row);
    if (row) row.scrollIntoView({ block: block || "nearest" });
    showDiff(row);
  }

  function move(delta) {
    const all = rows();
    const at = all.indexOf(focused());
    if (all.length) focus(all[at < 0 ? 0 : Math.max(0, Math.min(all.length - 1, at + delta))]);
  }

  function nextOpen(from) {
    const all = rows();
    const at = all.indexOf(from);
    return all.slice(at + 1).find(isOpen) || all.slice(0, at + 1).find(isOpen) || null; // wraps to the top
  }

  function decide(label, how) {
    const row = focused();
    if (!row) return say("No row to decide: j or a click picks one.");
    if (!label) return say(`Not decided: ${how} has no label on ${number(row)} yet.`);
    const button = row.querySelector(`button[name="label"][value="${label}"]`);
    if (!button) return;
    pending.add(row.id);
    busy();
    button.click(); // htmx posts the row's form (after the one before it: hx-sync queue) and swaps the row in
    const next = nextOpen(row);
    say(next ? `Saving ${number(row)}…` : "Saving… Then no row is open: v marks the pair verified.");
    if (next) focus(next);
  }

  function takeAnnotator(position) {
    const row = focused();
    const cell = row && row.querySelectorAll("td[data-annotator]")[position - 1];
    if (row && cell) decide(cell.dataset.label, cell.dataset.annotator);
  }

  function verify() {
    const form = document.getElementById("verify-form");
    const open = Number(document.getElementById("review-lead").dataset.open);
    if (!form) return say("This pair is verified already.");
    if (pending.size) return say("Still saving decisions: press v again in a moment.");
    if (open) return say(`Not verified: ${open} sentence pair${open > 1 ? "s are" : " is"} still open.`);
    form.requestSubmit();
  }

  const toggleHelp = (show) => { help.hidden = show === undefined ? !help.hidden : !show; };
  const KEYS = {
    j: () => move(1), k: () => move(-1), v: verify, "?": () => toggleHelp(),
    a: () => decide("aligned", "a"), p: () => decide("partial", "p"), n: () => decide("not_aligned", "n"),
  };

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.target.closest("input, select, textarea")) return;
    if (event.key === "Escape") return toggleHelp(false);
    if (!help.hidden && event.key !== "?") return; // the key list is open: no decision by accident
    const handler = KEYS[event.key] || (/^[1-9]$/.test(event.key) ? () => takeAnnotator(Number(event.key)) : null);
    if (!handler) return;
    event.preventDefault();
    handler();
  });

  document.addEventListener("click", (event) => {
    if (event.target.closest("[data-help]") || event.target === help) return toggleHelp();
    const link = event.target.closest("[data-row-link]");
    if (link && document.getElementById(link.dataset.rowLink)) {
      event.preventDefault();
      return focus(document.getElementById(link.dataset.rowLink), "center");
    }
    const row = event.target.closest("tr[data-row]");
    if (row && event.target.closest("[data-diff-link]")) event.preventDefault(); // the diff comes by htmx, not a reload
    if (row) focus(row);
  });

  // A row's answer is in: htmx fires afterRequest once it has swapped the new row in, in the same task. Tracked from
  // htmx's request events, as the queue's answers are: cleared on afterSettle instead (20 ms after the swap), a v
  // pressed as soon as the counts showed the last decision was refused with "still saving".
  // A refusal (a conflict, bad input) brings focus back to the row with the reason.
  document.body.addEventListener("htmx:afterRequest", (event) => {
    // htmx sets detail.elt to the element it fires on (the table body here, the old row having left the page);
    // the element that sent the request is the request config's.
    const source = (event.detail.requestConfig && event.detail.requestConfig.elt) || event.detail.elt;
    const answered = source.closest && source.closest("tr[data-row]");
    if (!answered || !pending.has(answered.id)) return;
    const row = document.getElementById(answered.id);
    if (row === answered) return; // not swapped: an error or no connection, which the handlers below say
    pending.delete(answered.id);
    busy();
    const error = row && row.querySelector(".error");
    if (error) {
      focus(row);
      say(`${number(row)}: ${error.textContent} Press the key again to overwrite.`);
    } else if (!pending.size) say("Saved.");
    mark(focused());
  });
  document.body.addEventListener("htmx:responseError", failed);
  document.body.addEventListener("htmx:sendError", failed);
  function failed(event) {
    const row = event.detail.elt.closest("tr[data-row]");
    if (!row) return;
    pending.delete(row.id);
    busy();
    focus(row);
    say(`${number(row)}: not saved (${event.type === "htmx:sendError" ? "no connection" : "server error"}); press the key again.`);
  }
  document.body.addEventListener("htmx:afterSettle", () => mark(focused())); // the focused row may be a new element

  focus(rows().find(isOpen) || null);
  busy(); // "false": the keys are bound and nothing is on its way
})();

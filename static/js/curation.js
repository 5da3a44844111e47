/* Review page: keyboard adjudication. j / k move the focused row, a / p / n set its final label, 1..9 take
 * that annotator's label, v marks the pair verified once no row is open, ? lists the keys. A decision clicks
 * the row's own button, so it goes through the same htmx form as a mouse click (with its expected_previous
 * conflict check); focus moves on to the next open row at once, and back to a row the server refused.
 * The word-diff card follows the focused row: its complex sentence number is a link (the page with that diff,
 * without JavaScript) whose htmx request fires on a "diff" event, sent once focus has rested for a moment. */
(function () {
  "use strict";
  const table = document.getElementById("review");
  if (!table) return;
  const help = document.getElementById("help");
  const status = document.getElementById("curation-status");
  const pending = new Set(); // ids of rows whose decision is on its way
  let focusedId = null;

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
    row.dataset.pending = "1"; // the row htmx swaps in has no such mark
    button.click(); // htmx posts the row's form and swaps the row when the answer comes
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

  // The answer replaced a row: a refusal (a conflict, bad input) brings focus back to it with the reason.
  document.body.addEventListener("htmx:afterSettle", () => {
    for (const id of Array.from(pending)) {
      const row = document.getElementById(id);
      if (row && row.dataset.pending) continue; // not answered yet
      pending.delete(id);
      if (!row) continue;
      const error = row.querySelector(".error");
      if (error) {
        focus(row);
        say(`${number(row)}: ${error.textContent} Press the key again to overwrite.`);
      } else if (!pending.size) say("Saved.");
    }
    mark(focused());
  });
  document.body.addEventListener("htmx:responseError", failed);
  document.body.addEventListener("htmx:sendError", failed);
  function failed(event) {
    const row = event.detail.elt.closest("tr[data-row]");
    if (!row) return;
    pending.delete(row.id);
    delete row.dataset.pending;
    focus(row);
    say(`${number(row)}: not saved (${event.type === "htmx:sendError" ? "no connection" : "server error"}); press the key again.`);
  }

  focus(rows().find(isOpen) || null);
})();

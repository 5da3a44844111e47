/* Queue mode: the keys of the page's key table (#queue-keys, the same table as its help dialog) press the
 * matching button: a / p / n answer, s skips, u undoes; i shows or hides the guidelines, ? the keys. Answers
 * go through htmx (hx-post on the card's form): the server answers with the next card alone, so the page
 * never reloads. The time on the item goes with the answer, counted from when its card was shown. */
(function () {
  "use strict";

  const keymap = JSON.parse(document.getElementById("queue-keys").textContent).queue;
  const help = document.getElementById("help");
  let shown = performance.now();

  const toggleHelp = (show) => { help.hidden = show === undefined ? !help.hidden : !show; };
  // htmx binds a new card's form (its hx-post) in the settle step, 20 ms after the swap: a key pressed in between
  // clicked an unbound form, a native submit (a whole page load, its note at the top of the page beside the next
  // card's own). Binding it here first is harmless (htmx binds a node once) and keeps the key.
  const press = (action) => {
    const button = document.querySelector(`#queue-main button[data-action="${action}"]`);
    if (!button) return;
    if (button.form && window.htmx) window.htmx.process(button.form);
    button.click();
  };
  const ACTIONS = {
    aligned: () => press("aligned"),
    partial: () => press("partial"),
    not_aligned: () => press("not_aligned"),
    skip: () => press("skip"),
    undo: () => press("undo"),
    guidelines: () => window.guidelines.toggle(),
    help: () => toggleHelp(),
    close: () => toggleHelp(false),
  };
  // An answer is on its way until htmx has its response (and has swapped the next card in): keys wait for that card.
  // Not read from the htmx-request class: while the new card settles, htmx copies the old form's classes onto the new
  // one (same id), so a key pressed just after the card appeared was dropped.
  // The layout around the card says so with aria-busy ("false" once the keys are bound): what browser tests wait for.
  let answering = false;
  const layout = document.querySelector(".queue-layout");
  const answeringSet = (value) => {
    answering = value;
    if (layout) layout.setAttribute("aria-busy", value ? "true" : "false");
  };
  document.addEventListener("htmx:beforeRequest", (event) => { if (event.target.closest && event.target.closest("#queue-main")) answeringSet(true); });
  document.addEventListener("htmx:afterRequest", () => answeringSet(false));
  const busy = () => answering;
  answeringSet(false);

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.target.closest("input, select, textarea")) return;
    const action = keymap[event.key];
    if (!action) return;
    if (!help.hidden && !["help", "close"].includes(action)) return; // the key list is open: no answer by accident
    event.preventDefault();
    if (busy() && action in { aligned: 1, partial: 1, not_aligned: 1, skip: 1, undo: 1 }) return; // one answer per card
    ACTIONS[action]();
  });
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (button && !button.closest("#queue-main")) ACTIONS[button.dataset.action]();
    else if (event.target === help) toggleHelp(false);
  });
  // Capture phase: the time is set before htmx (listening on the form) reads the fields.
  document.addEventListener("submit", (event) => {
    const field = event.target.querySelector('input[name="seconds_spent"]');
    if (!field) return;
    const seconds = (performance.now() - shown) / 1000;
    // Never send "NaN", a negative time or more than a day: the server refuses them, and the answer would be lost.
    // Empty = not measured; a day left open is sent as a day (the time figures count it as idle).
    field.value = Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 86400).toFixed(2) : "";
  }, true);
  // A new card (htmx) or a page restored from the back/forward cache: count from when it is shown.
  document.addEventListener("htmx:afterSwap", () => { shown = performance.now(); });
  window.addEventListener("pageshow", (event) => { if (event.persisted) shown = performance.now(); });
})();

// Queue mode: the keys a / p / n / s / u press the matching button, ? shows the keys; the time on the item goes with the answer.
(function () {
  "use strict";
  let shown = performance.now();
  const help = document.getElementById("help");
  const toggleHelp = (show) => { if (help) help.hidden = show === undefined ? !help.hidden : !show; };
  // A page restored from the back/forward cache keeps its old start time: count from when it is shown again.
  window.addEventListener("pageshow", (event) => { if (event.persisted) shown = performance.now(); });
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.target.closest("input, select, textarea")) return;
    if (event.key === "Escape") return toggleHelp(false);
    if (event.key === "?") { event.preventDefault(); return toggleHelp(); }
    if (help && !help.hidden) return; // the key list is open: no answer by accident
    const button = document.querySelector(`button[data-key="${event.key}"]`);
    if (button) { event.preventDefault(); button.click(); }
  });
  document.addEventListener("click", (event) => {
    if (event.target.closest("[data-help]") || event.target === help) toggleHelp();
  });
  document.addEventListener("submit", (event) => {
    const field = event.target.querySelector('input[name="seconds_spent"]');
    if (!field) return;
    const seconds = (performance.now() - shown) / 1000;
    // Never send "NaN", a negative time or more than a day: the server refuses them, and the answer would be lost.
    // Empty = not measured; a day left open is sent as a day (the time figures count it as idle).
    field.value = Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 86400).toFixed(2) : "";
  });
})();

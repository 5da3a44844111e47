// Queue mode: the keys a / p / n / u press the matching button; the time on the item goes with the answer.
(function () {
  "use strict";
  const shown = performance.now();
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.target.closest("input, select, textarea")) return;
    const button = document.querySelector(`button[data-key="${event.key}"]`);
    if (button) { event.preventDefault(); button.click(); }
  });
  document.addEventListener("submit", (event) => {
    const seconds = event.target.querySelector('input[name="seconds_spent"]');
    if (seconds) seconds.value = ((performance.now() - shown) / 1000).toFixed(2);
  });
})();

/* Step 1 of the procedure (which paragraphs align) by keyboard: arrows or h/j/k/l move between the cells
 * of the matrix, Space or x ticks, Enter saves (and goes back to the sentences), Esc goes back without
 * saving. The complex and the simple paragraph of the current cell are shown in full beside the matrix. */
(function () {
  "use strict";

  const form = document.getElementById("paragraph-form");
  if (!form) return;
  const cells = [...form.querySelectorAll('input[name="link"]')];
  const at = (row, column) => cells.find((cell) => Number(cell.dataset.row) === row && Number(cell.dataset.column) === column);
  const MOVES = { ArrowUp: [-1, 0], k: [-1, 0], ArrowDown: [1, 0], j: [1, 0], ArrowLeft: [0, -1], h: [0, -1], ArrowRight: [0, 1], l: [0, 1] };

  function show(cell) {
    const row = cell.dataset.row;
    const column = cell.dataset.column;
    form.querySelectorAll(".compare-side").forEach((side) => {
      side.hidden = side.dataset.complex !== row && side.dataset.simple !== column;
    });
    document.getElementById("compare-hint").hidden = true;
    form.querySelectorAll(".current-head").forEach((head) => head.classList.remove("current-head"));
    document.getElementById(`complex-head-${row}`).classList.add("current-head");
    document.getElementById(`simple-head-${column}`).classList.add("current-head");
  }

  form.addEventListener("focusin", (event) => {
    if (event.target.name === "link") show(event.target);
  });
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape") return window.location.assign(document.getElementById("paragraphs-back").href);
    const current = document.activeElement && document.activeElement.name === "link" ? document.activeElement : null;
    if (event.key === "Enter") {
      if (event.target.closest && event.target.closest("a, button")) return; // Enter follows the focused link or button
      event.preventDefault();
      return form.requestSubmit();
    }
    if (event.key === "x" && current) {
      event.preventDefault();
      return current.click();
    }
    const move = MOVES[event.key];
    if (!move || !cells.length) return;
    event.preventDefault();
    const next = current ? at(Number(current.dataset.row) + move[0], Number(current.dataset.column) + move[1]) : cells[0];
    if (next) {
      next.focus();
      next.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  });
  if (cells.length) cells[0].focus(); // keys work at once
})();

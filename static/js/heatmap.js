/* Inspection page: draws the similarity heatmap (rows = simple sentences, columns = complex
 * sentences) from the JSON in #heatmap-data, with paragraph-alignment blocks, the Viterbi path,
 * the human labels and where the model disagrees with them, a hover tooltip, click-to-diff
 * through htmx, and a keyboard cursor (arrows, Home/End, Page Up/Down, Enter) that a screen
 * reader follows. The page's state lives in its address: switching run or measure keeps the
 * sort, the filters and the open pair. Without JavaScript the page still works: the table
 * links and GET forms do the same. */
(function () {
  "use strict";

  const TARGET_PX = 600; // a 60 x 60 pair fills about this many pixels
  const MIN_CELL = 2;
  const MAX_CELL = 44; // small pairs stay readable without filling the page
  const MARGIN_LEFT = 34; // row labels
  const MARGIN_TOP = 20; // column labels
  const STOPS = [[247, 251, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]]; // light -> dark blue
  const BLOCK_COLOUR = "#d92d20";
  const PATH_COLOUR = "#f79009";
  const SELECTED_COLOUR = "#12b76a";
  const HUMAN_COLOUR = "#6941c6"; // purple: a human link (filled: aligned, hollow: partial)
  const VERDICT_COLOUR = "#c11574"; // magenta, dashed: the model disagrees with the humans
  const CURSOR_COLOUR = "#101828";
  const LINKED = ["aligned", "partial"];
  const LABEL_TEXT = { aligned: "aligned", partial: "partial", not_aligned: "not aligned" };

  function colourAt(t) {
    const x = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
    const k = Math.min(STOPS.length - 2, Math.floor(x));
    const f = x - k;
    const a = STOPS[k], b = STOPS[k + 1];
    return `rgb(${Math.round(a[0] + (b[0] - a[0]) * f)},${Math.round(a[1] + (b[1] - a[1]) * f)},${Math.round(a[2] + (b[2] - a[2]) * f)})`;
  }

  function labelStep(cell) {
    // Label every n-th sentence so labels are at least ~16 px apart: 1, 2, 5, 10, 20, 50, ...
    for (const step of [1, 2, 5, 10, 20, 50, 100, 200, 500]) if (step * cell >= 16) return step;
    return 1000;
  }

  function Heatmap(canvas, data) {
    this.canvas = canvas;
    this.data = data;
    this.cell = Math.max(MIN_CELL, Math.min(MAX_CELL, Math.floor(TARGET_PX / Math.max(data.rows, data.cols, 1))));
    this.width = MARGIN_LEFT + data.cols * this.cell + 2;
    this.height = MARGIN_TOP + data.rows * this.cell + 2;
    this.cellOf = {}; // candidate id -> [row, col]
    for (const [key, id] of Object.entries(data.candidates)) this.cellOf[id] = key.split(":").map(Number);
    this.selected = null;
    this.cursor = null; // [row, col] of the keyboard cursor, drawn while the canvas has focus
    this.focused = false;
    this.base = this.drawBase();
    this.render();
  }

  Heatmap.prototype.drawBase = function () {
    const d = this.data, c = this.cell, ratio = window.devicePixelRatio || 1;
    const base = document.createElement("canvas");
    base.width = Math.ceil(this.width * ratio);
    base.height = Math.ceil(this.height * ratio);
    const g = base.getContext("2d");
    g.scale(ratio, ratio);
    g.fillStyle = "#fff";
    g.fillRect(0, 0, this.width, this.height);
    const span = d.max - d.min || 1;
    for (let j = 0; j < d.rows; j++) {
      const row = d.values[j];
      for (let i = 0; i < d.cols; i++) {
        g.fillStyle = colourAt((row[i] - d.min) / span);
        g.fillRect(MARGIN_LEFT + i * c, MARGIN_TOP + j * c, c, c);
      }
    }
    if (c >= 6) { // candidate cells get a faint frame where there is room for one
      g.strokeStyle = "rgba(31, 36, 48, .45)";
      g.lineWidth = 1;
      for (const key of Object.keys(d.candidates)) {
        const [j, i] = key.split(":").map(Number);
        g.strokeRect(MARGIN_LEFT + i * c + 0.5, MARGIN_TOP + j * c + 0.5, c - 1, c - 1);
      }
    }
    g.strokeStyle = BLOCK_COLOUR;
    g.lineWidth = c >= 6 ? 2 : 1;
    for (const b of d.blocks) {
      g.strokeRect(MARGIN_LEFT + b.col0 * c, MARGIN_TOP + b.row0 * c, (b.col1 - b.col0 + 1) * c, (b.row1 - b.row0 + 1) * c);
    }
    const radius = Math.max(1, c * 0.22);
    g.fillStyle = PATH_COLOUR;
    g.strokeStyle = "#fff";
    g.lineWidth = c >= 6 ? 1 : 0;
    for (const [j, i] of d.viterbi) {
      g.beginPath();
      g.arc(MARGIN_LEFT + (i + 0.5) * c, MARGIN_TOP + (j + 0.5) * c, radius, 0, 2 * Math.PI);
      g.fill();
      if (c >= 6) g.stroke();
    }
    this.drawHumans(g);
    this.drawLabels(g);
    return base;
  };

  Heatmap.prototype.drawHumans = function (g) {
    const c = this.cell, size = Math.max(4, Math.round(c * 0.5));
    for (const [key, human] of Object.entries(this.data.human || {})) {
      const [j, i] = key.split(":").map(Number);
      const x = MARGIN_LEFT + i * c, y = MARGIN_TOP + j * c;
      if (LINKED.includes(human.label) || human.label === "") { // a corner triangle: the humans' link (grey: they disagree)
        g.beginPath();
        g.moveTo(x, y); g.lineTo(x + size, y); g.lineTo(x, y + size); g.closePath();
        g.fillStyle = human.label === "" ? "#98a2b3" : HUMAN_COLOUR;
        g.strokeStyle = g.fillStyle;
        g.lineWidth = 1.5;
        if (human.label === "partial") { g.fillStyle = "#fff"; g.fill(); g.stroke(); } else g.fill();
      }
      if (human.verdict) {
        g.save();
        g.strokeStyle = VERDICT_COLOUR;
        g.lineWidth = c >= 6 ? 2 : 1;
        if (c >= 8) g.setLineDash([3, 2]);
        g.strokeRect(x + 1.5, y + 1.5, c - 3, c - 3);
        g.restore();
      }
    }
  };

  Heatmap.prototype.drawLabels = function (g) {
    const d = this.data, c = this.cell, step = labelStep(c);
    g.fillStyle = "#667085";
    g.font = "10px system-ui, sans-serif";
    g.textAlign = "center";
    g.textBaseline = "bottom";
    for (let i = 0; i < d.cols; i++) {
      if (i % step === 0 || i === d.cols - 1 && (i % step) * c >= 16) g.fillText(String(i + 1), MARGIN_LEFT + (i + 0.5) * c, MARGIN_TOP - 4);
    }
    g.textAlign = "right";
    g.textBaseline = "middle";
    for (let j = 0; j < d.rows; j++) {
      if (j % step === 0 || j === d.rows - 1 && (j % step) * c >= 16) g.fillText(String(j + 1), MARGIN_LEFT - 5, MARGIN_TOP + (j + 0.5) * c);
    }
  };

  Heatmap.prototype.render = function () {
    const ratio = window.devicePixelRatio || 1, canvas = this.canvas, c = this.cell;
    canvas.width = this.base.width;
    canvas.height = this.base.height;
    canvas.style.width = this.width + "px";
    canvas.style.height = this.height + "px";
    const g = canvas.getContext("2d");
    g.drawImage(this.base, 0, 0);
    const at = this.selected !== null ? this.cellOf[this.selected] : null;
    if (at) {
      g.save();
      g.scale(ratio, ratio);
      g.strokeStyle = SELECTED_COLOUR;
      g.lineWidth = 3;
      const pad = 1.5; // just outside the cell, so the ring never covers the axis labels
      g.strokeRect(MARGIN_LEFT + at[1] * c - pad, MARGIN_TOP + at[0] * c - pad, c + 2 * pad, c + 2 * pad);
      g.restore();
    }
    if (this.focused && this.cursor) { // the keyboard cursor: dark frame with a white inner line, visible on any colour
      const [j, i] = this.cursor;
      g.save();
      g.scale(ratio, ratio);
      g.lineWidth = 3;
      g.strokeStyle = CURSOR_COLOUR;
      g.strokeRect(MARGIN_LEFT + i * c - 2.5, MARGIN_TOP + j * c - 2.5, c + 5, c + 5);
      g.lineWidth = 1;
      g.strokeStyle = "#fff";
      g.strokeRect(MARGIN_LEFT + i * c - 0.5, MARGIN_TOP + j * c - 0.5, c + 1, c + 1);
      g.restore();
    }
  };

  Heatmap.prototype.describe = function (j, i) {
    // [heading, text] lines for one cell: the tooltip shows them, the screen reader reads them.
    const d = this.data, key = `${j}:${i}`, human = (d.human || {})[key], predicted = d.predicted[key];
    const lines = [
      ["Simple #" + (j + 1), d.simple[j]],
      ["Complex #" + (i + 1), d.complex[i]],
      [d.measure, d.values[j][i].toFixed(3)],
      ["Model", predicted ? LABEL_TEXT[predicted] + " (candidate: Enter or click compares)" : "not a candidate"],
    ];
    if (human && human.label !== null) {
      lines.push(["Humans", (human.label ? LABEL_TEXT[human.label] : "annotators disagree") + (human.status ? ", " + human.status : "")]);
    } else if (d.human_verified) {
      lines.push(["Humans", "not linked (verified gold)"]);
    }
    if (human && human.verdict) lines.push(["Model vs humans", human.verdict]);
    return lines;
  };

  Heatmap.prototype.cellBox = function (j, i) { // the cell's rectangle in CSS pixels, relative to the canvas
    return { x: MARGIN_LEFT + i * this.cell, y: MARGIN_TOP + j * this.cell, size: this.cell };
  };

  Heatmap.prototype.cellAt = function (event) {
    const box = this.canvas.getBoundingClientRect();
    const i = Math.floor((event.clientX - box.left - MARGIN_LEFT) / this.cell);
    const j = Math.floor((event.clientY - box.top - MARGIN_TOP) / this.cell);
    return i >= 0 && j >= 0 && i < this.data.cols && j < this.data.rows ? [j, i] : null;
  };

  function showTooltip(tooltip, heatmap, event) {
    const at = heatmap.cellAt(event);
    if (!at) { tooltip.hidden = true; return; }
    fillTooltip(tooltip, heatmap.describe(at[0], at[1]));
    placeTooltip(tooltip, event.clientX, event.clientY);
  }

  function fillTooltip(tooltip, lines) {
    tooltip.replaceChildren();
    for (const [head, text] of lines) {
      const p = document.createElement("p");
      const b = document.createElement("b");
      b.textContent = head + ": ";
      p.append(b, text);
      tooltip.append(p);
    }
  }

  function placeTooltip(tooltip, clientX, clientY) {
    tooltip.hidden = false; // shown first: a hidden element has no size to place
    const box = tooltip.parentElement.getBoundingClientRect();
    tooltip.style.left = Math.max(8, Math.min(clientX - box.left + 14, box.width - tooltip.offsetWidth - 8)) + "px";
    tooltip.style.top = clientY - box.top + 14 + "px";
  }

  let selectedId = new URL(window.location.href).searchParams.get("candidate"); // survives table swaps

  function selectRow(candidateId, scrollPage) {
    selectedId = candidateId;
    document.querySelectorAll("tr.candidate-row.selected").forEach((row) => row.classList.remove("selected"));
    const row = document.getElementById("cand-" + candidateId);
    if (!row) return;
    row.classList.add("selected");
    if (scrollPage) { row.scrollIntoView({ block: "nearest" }); return; }
    const box = row.closest(".table-scroll"); // from the heatmap: scroll the table only, never the page away from the cursor
    if (box && (row.offsetTop < box.scrollTop || row.offsetTop + row.offsetHeight > box.scrollTop + box.clientHeight)) {
      box.scrollTop = row.offsetTop - box.clientHeight / 2;
    }
  }

  function openCandidate(heatmap, candidateId) {
    const canvas = document.getElementById("heatmap");
    if (heatmap) { heatmap.selected = candidateId; heatmap.render(); }
    selectRow(candidateId, false);
    if (!canvas || !window.htmx) return;
    const url = canvas.dataset.diffUrl.replace(/\/0\/diff\/$/, `/${candidateId}/diff/`);
    window.htmx.ajax("GET", url, { target: "#diff", swap: "innerHTML" });
    const page = new URL(window.location.href);
    page.searchParams.set("candidate", candidateId);
    window.history.pushState({}, "", page);
  }

  // Run and measure selects load the page at the current address with one parameter changed, so the
  // sort, the filters and the open pair (which htmx and clicks keep in the address) survive the switch.
  function switchTo(select) {
    const url = new URL(window.location.href);
    url.searchParams.set(select.name, select.value);
    if (select.name === "run") {
      url.searchParams.delete("candidate"); // candidates belong to one run
      const measures = (select.selectedOptions[0].dataset.measures || "").split(" ");
      if (!measures.includes(url.searchParams.get("measure"))) url.searchParams.delete("measure");
    }
    window.location.assign(url.toString());
  }

  // The table's sort links and its filter form were rendered with the table: a filter changed, or a sort clicked, while
  // the table was being replaced went out with the other one's old value, and whichever answer came back last undid
  // the other choice. Each table request now carries the filters as they stand in the form and the sort last clicked
  // (kept in the form's hidden field), and replaces one still on its way (hx-sync on the table's section).
  const FILTERS = ["label", "min_disagreement", "human"];
  function keepLatestChoices(event) {
    const detail = event.detail, elt = detail.elt;
    const section = detail.verb === "get" && elt.closest ? elt.closest("#candidates") : null;
    const form = section ? section.querySelector("form.filters") : null;
    if (!form || elt.tagName !== "A") return; // the form's own request reads the form
    const url = new URL(detail.path, window.location.href);
    form.elements.sort.value = url.searchParams.get("sort") || "";
    for (const name of FILTERS) {
      const field = form.elements[name];
      if (!field) continue;
      if (field.value) url.searchParams.set(name, field.value);
      else url.searchParams.delete(name);
    }
    detail.path = url.pathname + url.search;
  }

  // The table's sort links and filter form were rendered before the last click: give their requests the open pair.
  function keepOpenPair(event) {
    const detail = event.detail;
    if (detail.verb !== "get") return;
    const url = new URL(detail.path, window.location.href);
    if (url.pathname !== window.location.pathname) return; // the diff fragment has its own address
    delete detail.parameters.candidate;
    url.searchParams.delete("candidate");
    if (selectedId !== null) url.searchParams.set("candidate", selectedId);
    detail.path = url.pathname + url.search;
  }

  function announce(heatmap, live) {
    const [j, i] = heatmap.cursor;
    live.textContent = heatmap.describe(j, i).map(([head, text]) => `${head}: ${text}.`).join(" ");
  }

  function showCursor(heatmap, tooltip, live) {
    const [j, i] = heatmap.cursor, cell = heatmap.cellBox(j, i), canvas = heatmap.canvas;
    heatmap.render();
    announce(heatmap, live);
    const scroller = canvas.parentElement; // keep the cursor inside the scrolled heatmap
    if (cell.x < scroller.scrollLeft + MARGIN_LEFT) scroller.scrollLeft = Math.max(0, cell.x - MARGIN_LEFT);
    else if (cell.x + cell.size > scroller.scrollLeft + scroller.clientWidth) scroller.scrollLeft = cell.x + cell.size - scroller.clientWidth + 4;
    if (cell.y < scroller.scrollTop + MARGIN_TOP) scroller.scrollTop = Math.max(0, cell.y - MARGIN_TOP);
    else if (cell.y + cell.size > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = cell.y + cell.size - scroller.clientHeight + 4;
    const box = canvas.getBoundingClientRect();
    fillTooltip(tooltip, heatmap.describe(j, i));
    placeTooltip(tooltip, box.left + cell.x + cell.size / 2, box.top + cell.y + cell.size / 2);
  }

  function startCursor(heatmap) {
    if (heatmap.cursor) return;
    const open = selectedId !== null ? heatmap.cellOf[selectedId] : null;
    const first = Object.keys(heatmap.data.candidates).sort((a, b) => {
      const [ja, ia] = a.split(":").map(Number), [jb, ib] = b.split(":").map(Number);
      return ja - jb || ia - ib;
    })[0];
    heatmap.cursor = open ? open.slice() : first ? first.split(":").map(Number) : [0, 0];
  }

  const MOVES = {
    ArrowUp: (j, i) => [j - 1, i], ArrowDown: (j, i) => [j + 1, i], ArrowLeft: (j, i) => [j, i - 1], ArrowRight: (j, i) => [j, i + 1],
    Home: (j) => [j, 0], End: (j, i, d) => [j, d.cols - 1], PageUp: (j, i) => [j - 10, i], PageDown: (j, i) => [j + 10, i],
  };

  function onKey(heatmap, tooltip, live, event) {
    if (event.altKey || event.ctrlKey || event.metaKey || !heatmap.cursor) return;
    const d = heatmap.data, [j, i] = heatmap.cursor;
    if (MOVES[event.key]) {
      const [nj, ni] = MOVES[event.key](j, i, d);
      heatmap.cursor = [Math.max(0, Math.min(d.rows - 1, nj)), Math.max(0, Math.min(d.cols - 1, ni))];
      showCursor(heatmap, tooltip, live);
    } else if (event.key === "Enter" || event.key === " ") {
      const id = d.candidates[`${j}:${i}`];
      if (id !== undefined) openCandidate(heatmap, String(id));
      else live.textContent = `Simple #${j + 1} and complex #${i + 1} are not a candidate of this run: nothing to compare.`;
    } else return;
    event.preventDefault();
  }

  function setupHeatmap(canvas, source) {
    const heatmap = new Heatmap(canvas, JSON.parse(source.textContent));
    if (selectedId !== null && heatmap.cellOf[selectedId]) { heatmap.selected = selectedId; heatmap.render(); }
    const tooltip = document.getElementById("heatmap-tooltip");
    const live = document.getElementById("heatmap-cursor");
    canvas.addEventListener("mousemove", (event) => showTooltip(tooltip, heatmap, event));
    canvas.addEventListener("mouseleave", () => { if (!heatmap.focused) tooltip.hidden = true; });
    canvas.addEventListener("click", (event) => {
      const at = heatmap.cellAt(event);
      if (at) heatmap.cursor = at;
      const id = at ? heatmap.data.candidates[`${at[0]}:${at[1]}`] : undefined;
      if (id !== undefined) openCandidate(heatmap, String(id));
    });
    canvas.addEventListener("focus", () => { heatmap.focused = true; startCursor(heatmap); showCursor(heatmap, tooltip, live); });
    canvas.addEventListener("blur", () => { heatmap.focused = false; tooltip.hidden = true; heatmap.render(); });
    canvas.addEventListener("keydown", (event) => onKey(heatmap, tooltip, live, event));
    canvas.style.cursor = "crosshair";
    return heatmap;
  }

  function setup() {
    document.querySelectorAll("form[data-autosubmit] select").forEach((select) => {
      select.addEventListener("change", () => switchTo(select));
    });
    document.addEventListener("htmx:configRequest", keepLatestChoices);
    document.addEventListener("htmx:configRequest", keepOpenPair);

    const canvas = document.getElementById("heatmap");
    const source = document.getElementById("heatmap-data");
    const heatmap = canvas && source ? setupHeatmap(canvas, source) : null;

    // A diff opened from far down the table would land out of sight: bring it into view.
    document.addEventListener("htmx:afterSwap", (event) => {
      if (event.target.id !== "diff") return;
      const box = event.target.getBoundingClientRect();
      if (box.top < 0 || box.top > window.innerHeight) event.target.scrollIntoView({ block: "start", behavior: "smooth" });
    });

    document.addEventListener("htmx:load", (event) => { // fired on new content, so also on an outerHTML-swapped table
      if (selectedId !== null && event.target.id === "candidates") selectRow(selectedId, false);
    });

    // Table rows: the whole row opens the diff (its first link carries the hx-get and the href).
    document.addEventListener("click", (event) => {
      const row = event.target.closest("tr.candidate-row");
      if (!row) return;
      if (heatmap) {
        heatmap.selected = row.dataset.candidate;
        if (heatmap.cellOf[row.dataset.candidate]) heatmap.cursor = heatmap.cellOf[row.dataset.candidate].slice();
        heatmap.render();
      }
      selectRow(row.dataset.candidate, true);
      if (!event.target.closest("a")) row.querySelector("a").click();
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();

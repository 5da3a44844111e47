/* Inspection page: draws the similarity heatmap (rows = simple sentences, columns = complex
 * sentences) from the JSON in #heatmap-data, with paragraph-alignment blocks, the Viterbi path,
 * a hover tooltip, and click-to-diff through htmx. Without JavaScript the page still works:
 * the table links and GET forms do the same. */
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
    this.drawLabels(g);
    return base;
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
    const [j, i] = at, d = heatmap.data;
    const candidate = d.candidates[`${j}:${i}`];
    tooltip.replaceChildren();
    const lines = [
      ["Simple #" + (j + 1), d.simple[j]],
      ["Complex #" + (i + 1), d.complex[i]],
      [d.measure, d.values[j][i].toFixed(3) + (candidate ? " · candidate, click to compare" : "")],
    ];
    for (const [head, text] of lines) {
      const p = document.createElement("p");
      const b = document.createElement("b");
      b.textContent = head + ": ";
      p.append(b, text);
      tooltip.append(p);
    }
    tooltip.hidden = false; // shown first: a hidden element has no size to place
    const box = tooltip.parentElement.getBoundingClientRect();
    tooltip.style.left = Math.min(event.clientX - box.left + 14, box.width - tooltip.offsetWidth - 8) + "px";
    tooltip.style.top = event.clientY - box.top + 14 + "px";
  }

  let selectedId = null; // survives table swaps: the sort and filter fragments do not know about clicks since load

  function selectRow(candidateId) {
    selectedId = candidateId;
    document.querySelectorAll("tr.candidate-row.selected").forEach((row) => row.classList.remove("selected"));
    const row = document.getElementById("cand-" + candidateId);
    if (row) {
      row.classList.add("selected");
      row.scrollIntoView({ block: "nearest" });
    }
  }

  function openCandidate(heatmap, candidateId) {
    const canvas = document.getElementById("heatmap");
    if (heatmap) { heatmap.selected = candidateId; heatmap.render(); }
    selectRow(candidateId);
    if (!canvas || !window.htmx) return;
    const url = canvas.dataset.diffUrl.replace(/\/0\/diff\/$/, `/${candidateId}/diff/`);
    window.htmx.ajax("GET", url, { target: "#diff", swap: "innerHTML" });
    const page = new URL(window.location.href);
    page.searchParams.set("candidate", candidateId);
    window.history.pushState({}, "", page);
  }

  function setup() {
    document.querySelectorAll("form[data-autosubmit] select").forEach((select) => {
      select.addEventListener("change", () => select.form.submit());
    });

    let heatmap = null;
    const canvas = document.getElementById("heatmap");
    const source = document.getElementById("heatmap-data");
    if (canvas && source) {
      heatmap = new Heatmap(canvas, JSON.parse(source.textContent));
      const selectedRow = document.querySelector("tr.candidate-row.selected");
      if (selectedRow) { heatmap.selected = selectedRow.dataset.candidate; heatmap.render(); }
      const tooltip = document.getElementById("heatmap-tooltip");
      canvas.addEventListener("mousemove", (event) => showTooltip(tooltip, heatmap, event));
      canvas.addEventListener("mouseleave", () => { tooltip.hidden = true; });
      canvas.addEventListener("click", (event) => {
        const at = heatmap.cellAt(event);
        const id = at ? heatmap.data.candidates[`${at[0]}:${at[1]}`] : undefined;
        if (id !== undefined) openCandidate(heatmap, String(id));
      });
      canvas.style.cursor = "crosshair";
    }

    // A diff opened from far down the table would land out of sight: bring it into view.
    document.addEventListener("htmx:afterSwap", (event) => {
      if (event.target.id !== "diff") return;
      const box = event.target.getBoundingClientRect();
      if (box.top < 0 || box.top > window.innerHeight) event.target.scrollIntoView({ block: "start", behavior: "smooth" });
    });

    document.addEventListener("htmx:load", (event) => { // fired on new content, so also on an outerHTML-swapped table
      if (selectedId !== null && event.target.id === "candidates") selectRow(selectedId);
    });

    // Table rows: the whole row opens the diff (its first link carries the hx-get and the href).
    document.addEventListener("click", (event) => {
      const row = event.target.closest("tr.candidate-row");
      if (!row) return;
      if (heatmap) { heatmap.selected = row.dataset.candidate; heatmap.render(); }
      selectRow(row.dataset.candidate);
      if (!event.target.closest("a")) row.querySelector("a").click();
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();

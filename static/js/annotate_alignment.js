/* The alignment view of the annotation screen (key v): the whole alignment of the pair as rows, as InterText
 * shows it: each aligned group (1:1, 1:2, n:m) with its complex and simple sentences side by side, and each
 * unaligned sentence on a row of its own, in document order, under the paragraph rows they belong to. Colour
 * says the label (green aligned, amber partial), a dashed outline the aligner's suggestion, a solid fill the
 * annotator's own links; a row whose labels contradict a reviewer's decision is marked. The rows and the edits
 * come from annotate_groups.js; this file draws them, keeps the cursor (a row and a sentence in it) and hands
 * an edit's changes to annotate.js, which saves them as one action. */
(function () {
  "use strict";

  const groups = window.annotateGroups;
  const { element, LABEL_NAMES } = window.annotateView;
  const STATUS = { own: "yours", mixed: "partly yours", suggested: "suggested", unaligned: "unaligned" };

  /* root: #annotate; box: the view's container; state: annotate.js's state; edit(result): save an edit's changes;
   * hint(text): say why a key did nothing. */
  function create({ root, box, state, edit, hint }) {
    const model = groups.readModel(root);
    let rows = [];
    let cursor = null; // {side, id}: the sentence the cursor is on

    const node = (side, id) => groups.node(side, id);
    const number = (side, id) => model.number[node(side, id)];
    const rowIndex = () => (cursor ? rows.findIndex((row) => row[cursor.side].includes(cursor.id)) : -1);
    const sentencesOf = (row) => [...row.complex.map((id) => ({ side: "complex", id })), ...row.simple.map((id) => ({ side: "simple", id }))];

    function sentence(side, id) {
      const el = element("p", `align-sentence ${side}-side`);
      el.dataset.side = side;
      el.dataset.id = id;
      el.id = `a-${side[0]}-${id}`;
      el.append(element("span", "sent-no", String(number(side, id))), element("span", "sent-text", model.text[node(side, id)]));
      if (cursor && cursor.side === side && cursor.id === id) el.classList.add("cursor");
      return el;
    }

    function marks(row) {
      const box = element("div", "align-marks");
      const badge = (text, className, title) => {
        const el = box.appendChild(element("span", `badge ${className}`, text));
        if (title) el.title = title;
      };
      if (row.status !== "unaligned") badge(`${STATUS[row.status]} · ${LABEL_NAMES[row.label]}`, row.status === "suggested" ? `suggestion label-${row.label}` : `own own-${row.label}`);
      const suggested = row.links.filter((link) => !link.own);
      if (suggested.length && suggested.every((link) => link.confidence !== null && link.confidence !== undefined)) {
        const lowest = Math.min(...suggested.map((link) => link.confidence));
        badge(`confidence ${lowest.toFixed(2)}`, "suggestion", "How sure the aligner is of its suggested links (the lowest of them), from 0 to 1");
      }
      if (row.links.length > 1 && row.links.length < row.complex.length * row.simple.length) {
        for (const link of row.links) badge(`${number("complex", link.complex)}↔${number("simple", link.simple)} ${LABEL_NAMES[link.label]}`, link.own ? `own own-${link.label}` : `suggestion label-${link.label}`);
      }
      for (const conflict of row.conflicts) {
        badge(`⚠ reviewer: ${number("complex", conflict.complex)}↔${number("simple", conflict.simple)} ${LABEL_NAMES[conflict.decided]}`, "conflict",
          `A reviewer decided complex #${number("complex", conflict.complex)} ~ simple #${number("simple", conflict.simple)} is ${LABEL_NAMES[conflict.decided]}; here it is ${LABEL_NAMES[conflict.current]}`);
      }
      return box;
    }

    function render() {
      rows = groups.rows(state, model);
      if (!cursor || rowIndex() < 0) cursor = rows.length ? sentencesOf(rows[0])[0] : null;
      const current = rowIndex();
      const list = [];
      let para = null;
      rows.forEach((row, index) => {
        if (row.para !== para) {
          para = row.para;
          list.push(element("h3", "align-para", `Paragraphs ${model.paraNames[para]}`));
        }
        const el = element("div", `align-row status-${row.status}${row.label ? ` link-${row.label}` : ""}${index === current ? " current" : ""}${row.conflicts.length ? " has-conflict" : ""}`);
        el.dataset.row = index;
        const side = (name) => {
          const cell = element("div", `align-side align-${name}`);
          cell.append(...row[name].map((id) => sentence(name, id)));
          return cell;
        };
        el.append(element("span", "align-type", row.type), side("complex"), side("simple"), marks(row));
        list.push(el);
      });
      box.querySelector(".align-rows").replaceChildren(...list);
      describe(current);
    }

    // The side panel's current-pair box says where the cursor is and what the edit keys would do there.
    function describe(current) {
      const row = rows[current];
      const panel = document.getElementById("current-pair");
      const line = (text, className) => element("p", className || "", text);
      if (!row) return panel.replaceChildren(line("No sentences.", "muted small"));
      const kind = row.status === "unaligned" ? `unaligned ${row.complex.length ? "complex" : "simple"} sentence` : `${row.type} group, ${STATUS[row.status]}, ${LABEL_NAMES[row.label]}`;
      panel.replaceChildren(
        line(`Row ${current + 1} of ${rows.length}: ${kind}`, "pair-title"),
        line(`cursor on ${cursor.side} #${number(cursor.side, cursor.id)} (h / l move it)`, "muted small"),
        line(row.links.length
          ? "m / M merge with the next / previous row · b split before the cursor · x unalign the cursor sentence · n dissolve"
          : "m / M merge it with the next / previous row to link it", "muted small"),
      );
    }

    function reveal() {
      const el = cursor && box.querySelector(`#a-${cursor.side[0]}-${cursor.id}`);
      const row = el && el.closest(".align-row");
      if (row) window.annotateView.revealPair(row, null, ".align-grid-head");
    }

    function moveRow(delta) {
      if (!rows.length) return;
      const at = rowIndex();
      const next = Math.max(0, Math.min(rows.length - 1, (at < 0 ? 0 : at) + delta));
      cursor = sentencesOf(rows[next])[0];
      render();
      reveal();
    }

    function moveSentence(delta) {
      const row = rows[rowIndex()];
      if (!row) return;
      const list = sentencesOf(row);
      const at = list.findIndex((s) => s.side === cursor.side && s.id === cursor.id);
      cursor = list[Math.max(0, Math.min(list.length - 1, at + delta))];
      render();
    }

    function run(result) {
      if (result.hint) return hint(result.hint);
      if (result.focus) cursor = result.focus;
      edit(result);
    }

    const currentRow = () => rows[rowIndex()];
    const actions = {
      "next-row": () => moveRow(1),
      "prev-row": () => moveRow(-1),
      "next-sentence": () => moveSentence(1),
      "prev-sentence": () => moveSentence(-1),
      "group-aligned": () => currentRow() && run(groups.setLinks(currentRow(), "aligned")),
      "group-partial": () => currentRow() && run(groups.setLinks(currentRow(), "partial")),
      "group-dissolve": () => currentRow() && run(groups.dissolve(currentRow())),
      "merge-next": () => currentRow() && run(groups.merge(currentRow(), rows[rowIndex() + 1], state)),
      "merge-prev": () => currentRow() && run(groups.merge(rows[rowIndex() - 1], currentRow(), state)),
      split: () => currentRow() && run(groups.split(currentRow(), cursor)),
      "unalign-sentence": () => cursor && run(groups.unalign(cursor, state, model)),
    };

    box.addEventListener("click", (event) => {
      const el = event.target.closest(".align-sentence");
      if (!el) return;
      cursor = { side: el.dataset.side, id: Number(el.dataset.id) };
      render();
    });

    return {
      model,
      actions,
      render,
      reveal,
      // The paragraph row of the cursor, for accept-paragraph.
      para: () => (currentRow() ? currentRow().para : null),
      cursor: () => cursor, // {side, id}: the sentence edit dialog (e) opens on it

      // Put the cursor on a sentence (the focus view's selection, or a pair an undo changed).
      focus(side, id) {
        if (id !== null && id !== undefined) cursor = { side, id };
      },
      // The simple sentence the focus view selects when the view is left: the cursor's, or its row's first.
      simple() {
        if (!cursor) return null;
        if (cursor.side === "simple") return cursor.id;
        const row = currentRow();
        return row && row.simple.length ? row.simple[0] : null;
      },
    };
  }

  window.annotateAlignment = { create };
})();

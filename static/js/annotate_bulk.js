/* Bulk accept on the annotation screen (key B): every suggestion of the pair (or, chosen in the dialog, of the current
 * paragraph row) at or above the project's confidence threshold that has no label of yours, accepted with its own
 * label as one edit (one u undoes it), after a dialog that says how many labels it makes and the precision the
 * project's own answers estimate at that threshold.
 * The offer (#annotate-bulk: the project's target, threshold and estimate) comes from the server
 * (annotation.labelling.bulk), which records its own estimate on each label; this file only counts and asks. */
(function () {
  "use strict";

  const LINKED = ["aligned", "partial"];

  /* state: annotate.js's state; offer: {target, answered, estimate: {threshold, precision, low, high, count} | null};
   * edit(result): annotate.js's editAction; hint(text): say why nothing happened; paragraph(): the current paragraph
   * row, {name, simpleIds}, or null: the dialog also offers to accept only its suggestions. */
  function create({ state, offer, edit, hint, paragraph }) {
    const box = document.getElementById("bulk-box");
    let pending = null;

    function changes(threshold, simpleIds = state.simpleIds) {
      const found = [];
      for (const simple of simpleIds) {
        for (const candidate of state.candidates[simple] || []) {
          const own = state.labels[`${simple}:${candidate.complex}`];
          const sure = candidate.confidence !== null && candidate.confidence !== undefined && candidate.confidence >= threshold;
          if (LINKED.includes(candidate.predicted) && sure && !(own && own.label)) {
            found.push({ simple, complex: candidate.complex, label: candidate.predicted, source: "bulk" });
          }
        }
      }
      return found;
    }

    function open() {
      const estimate = offer.estimate;
      if (!estimate) {
        return hint(`Bulk accept is not offered yet: no confidence threshold meets this project's precision target (${offer.target.toFixed(2)}) on 30 or more of its ${offer.answered} answered suggestions. Label pairs and mark them done.`);
      }
      const found = changes(estimate.threshold);
      if (!found.length) return hint(`No suggestion of this pair at confidence ${estimate.threshold.toFixed(2)} or more is left without a label of yours.`);
      const sentences = new Set(found.map((change) => change.simple)).size;
      const wrong = Math.round(found.length * (1 - estimate.precision));
      document.getElementById("bulk-count").textContent = `${found.length} suggestion${found.length > 1 ? "s" : ""} of ${sentences} simple sentence${sentences > 1 ? "s" : ""}`;
      document.getElementById("bulk-threshold").textContent = estimate.threshold.toFixed(2);
      document.getElementById("bulk-estimate").textContent =
        `${estimate.precision.toFixed(3)} (95 % interval ${estimate.low.toFixed(2)}–${estimate.high.toFixed(2)}), ` +
        (estimate.basis === "model"
          ? `from the model's held-out calibration (${estimate.count} of its suggestions at that confidence or more, on documents it never saw): this project has too few answered suggestions yet`
          : `from ${estimate.count} suggestions this project's annotators answered at that confidence or more`);
      document.getElementById("bulk-wrong").textContent = wrong ? `about ${wrong} of them may be wrong` : "fewer than one of them is expected to be wrong";
      const row = paragraph();
      const inRow = row ? changes(estimate.threshold, row.simpleIds) : [];
      const only = document.getElementById("bulk-paragraph");
      only.hidden = !(inRow.length && inRow.length < found.length); // a choice only when the row holds some of them, not all
      only.textContent = `Only paragraphs ${row ? row.name : ""}: ${inRow.length} suggestion${inRow.length > 1 ? "s" : ""}`;
      pending = { changes: found, threshold: estimate.threshold, row: inRow.length ? { changes: inRow, name: row.name } : null };
      box.hidden = false;
    }

    function confirm(scope = "pair") {
      box.hidden = true;
      if (!pending) return;
      const { threshold } = pending;
      const found = scope === "paragraph" && pending.row ? pending.row.changes : pending.changes;
      const where = scope === "paragraph" && pending.row ? ` of paragraphs ${pending.row.name}` : "";
      pending = null;
      edit({ changes: found, text: `${found.length} suggestion${found.length > 1 ? "s" : ""}${where} at confidence ≥ ${threshold.toFixed(2)} bulk accepted`, bulkThreshold: threshold });
    }

    function close() {
      box.hidden = true;
      pending = null;
    }

    return { open, confirm, close, isOpen: () => !box.hidden };
  }

  window.annotateBulk = { create };
})();

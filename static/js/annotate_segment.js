/* The sentence edit dialog of the annotation screen (key e): split the selected sentence of either document at a
 * word, or merge it with the next sentence of its paragraph. The dialog is a plain form (#segment-form) posted to the
 * server (annotation.labelling.segmentation), which carries the labels, refuses with the reason, and reloads the page
 * with the new sentences; undo is a form of the "Sentence edits" card. Offsets are counted in characters as the
 * server counts them (code points), not in UTF-16 units. */
(function () {
  "use strict";

  /* state: annotate.js's state; alignment: its alignment view (cursor()); hint(text): say why nothing happened;
   * unsaved(): how many actions are not saved yet (the form waits for them, so no label is lost). */
  function create({ state, alignment, hint, unsaved }) {
    const box = document.getElementById("segment-box");
    const form = document.getElementById("segment-form");
    const $ = (id) => document.getElementById(id);
    let target = null;

    function sentenceEl(choice) {
      return document.getElementById(`${choice.side[0]}-${choice.id}`);
    }

    function choices() {
      if (state.view === "alignment") return alignment.cursor() ? [alignment.cursor()] : [];
      const found = [];
      if (state.simpleIndex >= 0) found.push({ side: "simple", id: state.simpleIds[state.simpleIndex] });
      if (state.complexId !== null && state.complexId !== undefined) found.push({ side: "complex", id: state.complexId });
      return found.filter((choice) => sentenceEl(choice));
    }

    function ownLabels(choice) {
      return Object.entries(state.labels).filter(([item, value]) => {
        const [simple, complex] = item.split(":").map(Number);
        return value && value.label && (choice.side === "simple" ? simple : complex) === choice.id;
      }).length;
    }

    function describe(choice) {
      const el = sentenceEl(choice);
      return `${choice.side} #${el.dataset.number}`;
    }

    function open() {
      const found = choices();
      if (!found.length) return hint("Select a sentence first (j / k, or click one), then press e to split or merge it.");
      const sides = $("segment-sides");
      sides.querySelectorAll("label").forEach((label) => label.remove());
      for (const choice of found) {
        const label = document.createElement("label");
        const radio = document.createElement("input");
        Object.assign(radio, { type: "radio", name: "segment-choice", checked: choice === found[0] });
        radio.addEventListener("change", () => choose(choice));
        label.append(radio, ` ${describe(choice)}: ${sentenceEl(choice).querySelector(".sent-text").textContent}`);
        sides.append(label);
      }
      choose(found[0]);
      box.hidden = false;
      const first = $("segment-words").querySelector("button");
      (first || $("segment-merge")).focus();
    }

    function choose(choice) {
      target = choice;
      const el = sentenceEl(choice);
      const text = el.querySelector(".sent-text").textContent;
      $("segment-sentence").value = String(choice.id);
      $("segment-offset").value = "";
      $("segment-split").disabled = true;
      $("segment-preview").textContent = "";
      $("segment-error").textContent = "";
      const words = $("segment-words");
      words.replaceChildren();
      for (const match of text.matchAll(/\S+/g)) {
        if (match.index === 0) {
          words.append(document.createTextNode(match[0]));
          continue;
        }
        const button = document.createElement("button");
        Object.assign(button, { type: "button", className: "seg-word", textContent: match[0], title: `Start the second sentence with “${match[0]}”` });
        button.addEventListener("click", () => pick(text, match.index, button));
        words.append(" ", button);
      }
      const next = el.nextElementSibling;
      $("segment-merge").disabled = !next;
      $("segment-merge-note").textContent = next
        ? `Merge joins ${describe(choice)} with the next sentence, #${next.dataset.number}: “${next.querySelector(".sent-text").textContent}”`
        : "It is the last sentence of its paragraph: there is nothing to merge it with (a merge stays within a paragraph).";
      const count = ownLabels(choice);
      $("segment-keep").hidden = !count;
      $("segment-keep").querySelector("input").checked = false;
      $("segment-keep-count").textContent = `${count} in this pair`;
    }

    function pick(text, index, button) {
      $("segment-offset").value = String(Array.from(text.slice(0, index)).length); // code points, as the server counts
      $("segment-words").querySelectorAll("button").forEach((other) => other.setAttribute("aria-pressed", String(other === button)));
      $("segment-preview").replaceChildren(
        Object.assign(document.createElement("p"), { textContent: `1: ${text.slice(0, index).trim()}` }),
        Object.assign(document.createElement("p"), { textContent: `2: ${text.slice(index).trim()}` }),
      );
      $("segment-split").disabled = false;
      $("segment-split").focus();
    }

    form.addEventListener("submit", (event) => {
      if (!unsaved()) return; // nothing waits: the form goes now
      event.preventDefault(); // labels first, so that the edit carries them
      const submitter = event.submitter;
      $("segment-error").textContent = "Saving your labels first…";
      const started = Date.now();
      const retry = window.setInterval(() => {
        if (unsaved() && Date.now() - started < 15000) return;
        window.clearInterval(retry);
        if (unsaved()) $("segment-error").textContent = "Your labels are not saved yet (see the list of unsaved changes): try again when they are.";
        else form.requestSubmit(submitter);
      }, 200);
    });
    box.addEventListener("click", (event) => {
      if (event.target === box || event.target.closest("[data-segment-close]")) close();
    });

    function close() {
      box.hidden = true;
      target = null;
    }

    return { open, close, isOpen: () => !box.hidden, target: () => target };
  }

  window.annotateSegment = { create };
})();

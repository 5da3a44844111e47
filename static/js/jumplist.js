/* The jump list of the annotation screen (key g): every complex sentence of the pair, filtered by
 * what is typed (a sentence number, or words that must all occur), ↑/↓ to move, Enter to pick; the
 * aligner's suggestions for the selected simple sentence are marked with their label and confidence.
 * It only finds and returns a sentence id; annotate.js decides what picking one means. */
(function () {
  "use strict";

  const MAX_SHOWN = 50; // the filter narrows the rest; a long document would otherwise flood the list

  const box = document.getElementById("jump");
  if (!box) return;
  const input = document.getElementById("jump-filter");
  const list = document.getElementById("jump-list");
  const count = document.getElementById("jump-count");
  let onPick = null;
  let proposed = new Map(); // complex id -> the aligner's candidate for the selected simple sentence
  let matches = [];
  let active = 0;

  function sentences() {
    return [...document.querySelectorAll("#annotate .complex-sentence")].map((el) => ({
      id: Number(el.dataset.id),
      number: el.dataset.number,
      text: el.querySelector(".sent-text").textContent,
    }));
  }

  function matching(query) {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    const all = sentences();
    if (!words.length) return all;
    if (words.length === 1 && /^\d+$/.test(words[0])) {
      // A number: that sentence first, then the others whose number starts with it (1 → 1, 10, 11…).
      return all.filter((s) => s.number.startsWith(words[0])).sort((a, b) => (a.number === words[0] ? -1 : b.number === words[0] ? 1 : 0));
    }
    return all.filter((s) => {
      const haystack = `${s.number} ${s.text.toLowerCase()}`;
      return words.every((word) => haystack.includes(word));
    });
  }

  function render() {
    list.replaceChildren();
    matches.slice(0, MAX_SHOWN).forEach((sentence, index) => {
      const item = document.createElement("li");
      item.className = index === active ? "jump-item active" : "jump-item";
      item.id = `jump-${sentence.id}`;
      item.dataset.id = sentence.id;
      item.setAttribute("role", "option");
      item.setAttribute("aria-selected", index === active ? "true" : "false");
      const number = document.createElement("span");
      number.className = "sent-no";
      number.textContent = sentence.number;
      item.append(number, ` ${sentence.text}`);
      const candidate = proposed.get(sentence.id);
      if (candidate && candidate.predicted) {
        const mark = document.createElement("span");
        mark.className = `badge suggestion label-${candidate.predicted}`;
        mark.textContent = `suggested ${window.annotateView.LABEL_NAMES[candidate.predicted]} · ${window.annotateView.confidenceText(candidate)}`;
        item.appendChild(mark);
      }
      list.appendChild(item);
    });
    const more = matches.length > MAX_SHOWN ? ` (first ${MAX_SHOWN} shown: type more to narrow)` : "";
    count.textContent = matches.length ? `${matches.length} complex sentence${matches.length > 1 ? "s" : ""}${more}` : "No complex sentence matches.";
    const current = list.children[active];
    if (current) current.scrollIntoView({ block: "nearest" });
  }

  function filter() {
    matches = matching(input.value);
    active = 0;
    render();
  }

  function close() {
    box.hidden = true;
    input.blur(); // keys go back to the screen
    onPick = null;
  }

  function pick(index) {
    const sentence = matches[index];
    const callback = onPick;
    close();
    if (sentence && callback) callback(sentence.id);
  }

  input.addEventListener("input", filter);
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") return close();
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const shown = Math.min(matches.length, MAX_SHOWN);
      if (shown) active = (active + (event.key === "ArrowDown" ? 1 : shown - 1)) % shown;
      return render();
    }
    if (event.key === "Enter") {
      event.preventDefault();
      pick(active);
    }
  });
  list.addEventListener("click", (event) => {
    const item = event.target.closest(".jump-item");
    if (item) pick(matches.findIndex((s) => s.id === Number(item.dataset.id)));
  });
  box.addEventListener("click", (event) => {
    if (event.target === box || event.target.closest("[data-jump-close]")) close();
  });

  window.jumpList = {
    /** Open the list; ``callback(complexSentenceId)`` runs when one is picked; ``candidates`` are marked. */
    open(callback, title, candidates) {
      onPick = callback;
      proposed = new Map((candidates || []).map((candidate) => [candidate.complex, candidate]));
      document.getElementById("jump-title").textContent = title;
      box.hidden = false;
      input.value = "";
      filter();
      input.focus();
    },
    isOpen: () => !box.hidden,
  };
})();

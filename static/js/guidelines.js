/* The project's guidelines, on the annotation screen and in the queue: key i (or its button, through the
 * page's own script) shows or hides them, and the choice is remembered per project in localStorage, so an
 * annotator who knows them by heart is not shown them on every pair. */
(function () {
  "use strict";

  const box = document.getElementById("guidelines");
  if (!box) return;
  const body = document.getElementById("guidelines-body");
  const storageKey = box.dataset.remember;

  function remembered() {
    try {
      return window.localStorage.getItem(storageKey) === "hidden";
    } catch (error) {
      return false; // storage blocked: shown, as for a first visit
    }
  }

  function show(visible) {
    body.hidden = !visible;
    box.classList.toggle("collapsed", !visible);
    box.querySelectorAll("[data-guidelines-state]").forEach((el) => { el.textContent = visible ? "hide" : "show"; });
    box.querySelectorAll("[aria-controls=guidelines-body]").forEach((el) => el.setAttribute("aria-expanded", String(visible)));
    try {
      if (visible) window.localStorage.removeItem(storageKey);
      else window.localStorage.setItem(storageKey, "hidden");
    } catch (error) {
      // not remembered; the page still shows or hides them
    }
  }

  show(!remembered());
  window.guidelines = {
    toggle() {
      show(body.hidden);
      if (!body.hidden) box.scrollIntoView({ block: "nearest" });
    },
    shown: () => !body.hidden,
  };
})();

// Behaviour every page shares, as listeners instead of inline handlers (the Content-Security-Policy
// allows no inline script): data-submit-on-change on a field submits its form; data-confirm on a
// form asks before sending it; data-swap-client-errors lets htmx show a 4xx answer.
(function () {
  "use strict";
  document.addEventListener("change", (event) => {
    const field = event.target.closest("[data-submit-on-change]");
    if (field && field.form) field.form.requestSubmit();
  });
  document.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });
  // A page left open while someone else signed in, in another tab of this browser: its top bar names the old user, and
  // what it sends goes out as the new one. When the tab comes back into view (or from the back-forward cache) it asks
  // the session probe, and says so above the page if the browser is now signed in as someone else, or signed out.
  const pageUser = document.body.dataset.userId;
  const changed = document.getElementById("session-changed");
  let asking = false; // focus and visibilitychange come together: one probe at a time
  async function checkSession() {
    if (!pageUser || !changed || asking || document.visibilityState !== "visible") return;
    asking = true;
    try {
      const response = await fetch(document.body.dataset.sessionUrl, { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } });
      if (!response.ok) return;
      const answer = await response.json();
      const now = answer.authenticated ? String(answer.user_id) : "";
      if (now === pageUser) return void (changed.hidden = true);
      const who = document.body.dataset.username;
      changed.textContent = answer.authenticated
        ? `This page was opened as ${who}; this browser is now signed in as ${answer.username} (in another tab). Reload it to work as ${answer.username}. `
        : `This page was opened as ${who}, who has signed out since (in another tab). Log in again to go on. `;
      const reload = document.createElement("a");
      reload.href = window.location.href;
      reload.textContent = "Reload";
      changed.append(reload);
      changed.hidden = false;
    } catch (error) {
      // offline: nothing to say about who is signed in
    } finally {
      asking = false;
    }
  }
  document.addEventListener("visibilitychange", checkSession);
  window.addEventListener("pageshow", (event) => { if (event.persisted) checkSession(); });
  window.addEventListener("focus", checkSession);
  // htmx leaves 4xx answers unswapped; an element marked data-swap-client-errors shows them (a 413
  // "upload over the limit" is a page fragment saying so).
  document.addEventListener("htmx:beforeSwap", (event) => {
    const status = event.detail.xhr.status;
    const source = event.detail.requestConfig && event.detail.requestConfig.elt; // the event fires on the target
    if (status >= 400 && status < 500 && source && source.closest("[data-swap-client-errors]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();

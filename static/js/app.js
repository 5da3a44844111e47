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

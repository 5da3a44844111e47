// Behaviour every page shares, as listeners instead of inline handlers (the Content-Security-Policy
// allows no inline script): data-submit-on-change on a field submits its form; data-confirm on a
// form asks before sending it.
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
})();

/* The save queue of the annotation screen. Actions (label, undo, item event) are sent one at a time,
 * in order, with fetch(); each label write names the event it replaces (expected_previous, read when
 * it is sent), so a write from another tab is detected. Network failures and server errors are
 * retried with backoff and stay listed in #pending until saved; refusals (4xx) are listed until
 * dismissed. It owns the #save-status line and asks before the page is left with anything unsaved.
 * annotate.js says what a saved or conflicting answer changes on the screen (the hooks of create). */
(function () {
  "use strict";

  const BACKOFF_S = [1, 2, 4, 8]; // then every 15 s until it goes through
  const SLOW_RETRY_S = 15;
  const { $, element, describe } = window.annotateView;

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
      return match ? decodeURIComponent(match[1]) : "";
    }
  }

  function setStatus(kind, text) {
    const el = $("save-status");
    el.dataset.state = kind;
    el.textContent = text;
  }

  function linkButton(text, onClick) {
    const button = element("button", "link-button", text);
    button.type = "button";
    button.addEventListener("click", onClick);
    return button;
  }

  /* urls: {label, undo, item}; currentLabel(simple, complex): the {label, event} the server last gave
   * for a pair, read when its label write is sent; saved(action, payload): apply an accepted answer; conflict(action, payload): apply a 409
   * answer and return the note to list it with, or null to list it as a plain refusal. */
  function create({ urls, currentLabel, saved, conflict }) {
    const queue = []; // actions not saved yet; the head is in flight
    let refused = []; // actions the server refused (conflict, bad input): shown until dismissed
    let sending = false;
    let retryTimer = null;
    let nextActionId = 1;
    let leaveTo = null; // where a skip goes once every action is saved

    function clearHint() {
      // A hint answered a key press; once the annotator moves on it would only mislead.
      if ($("save-status").dataset.state === "hint" && !queue.length && !refused.length) setStatus("idle", "All saved ✓");
    }

    function renderPending() {
      const list = $("pending");
      list.replaceChildren();
      for (const action of [...queue, ...refused]) {
        const item = element("li", `pending-${action.status}`, `${describe(action)}: ${action.note} `);
        if (action.status === "refused") {
          item.append(linkButton("dismiss", () => { refused = refused.filter((other) => other !== action); renderPending(); }));
        } else if (action.status === "retrying") {
          item.append(linkButton("retry now", () => { clearTimeout(retryTimer); pump(); }));
        }
        list.appendChild(item);
      }
      list.hidden = !list.children.length;
    }

    function enqueue(action) {
      action.id = nextActionId++;
      action.attempts = 0;
      action.status = "queued";
      action.note = "waiting";
      queue.push(action);
      renderPending();
      if (!sending && !retryTimer) pump();
    }

    function requestBody(action) {
      const body = new URLSearchParams();
      if (action.kind === "item") {
        body.set("kind", action.itemKind);
        body.set("text", action.text);
      }
      if (action.kind === "label") {
        const current = currentLabel(action.simple, action.complex);
        body.set("simple_sentence_id", action.simple);
        body.set("complex_sentence_id", action.complex);
        body.set("label", action.label);
        body.set("expected_previous", current ? current.event : ""); // read now: earlier actions may have changed it
        body.set("seconds_spent", action.seconds.toFixed(2));
      }
      return body;
    }

    async function pump() {
      retryTimer = null;
      const action = queue[0];
      if (!action || sending) return;
      sending = true;
      action.status = "sending";
      action.note = "saving…";
      setStatus("saving", "Saving…");
      renderPending();
      let response = null;
      let payload = null;
      try {
        response = await fetch(urls[action.kind], {
          method: "POST",
          body: requestBody(action),
          headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
          credentials: "same-origin",
        });
        if ((response.headers.get("Content-Type") || "").includes("application/json")) payload = await response.json();
      } catch (error) {
        response = null; // network failure: retried below
      }
      sending = false;
      if (response && payload && response.ok) {
        queue.shift();
        saved(action, payload);
      } else if (response && response.status >= 400 && response.status < 500) {
        queue.shift(); // the server said no: retrying would not help, so show why and keep it listed
        refuse(action, response.status, payload || { error: `the server answered ${response.status} ${response.statusText}` });
      } else {
        return scheduleRetry(action, response);
      }
      renderPending();
      if (queue.length) pump();
      else if (leaveTo) window.location.assign(leaveTo);
    }

    function refuse(action, status, payload) {
      action.status = "refused";
      const note = status === 409 ? conflict(action, payload) : null;
      if (note) {
        action.note = note;
        setStatus("conflict", `Conflict: ${payload.error}`);
      } else {
        action.note = `refused: ${payload.error}`;
        setStatus("error", `Not saved: ${payload.error}`);
      }
      refused.push(action);
    }

    function scheduleRetry(action, response) {
      action.attempts += 1;
      const wait = BACKOFF_S[action.attempts - 1] || SLOW_RETRY_S;
      const why = !response ? "no connection" : response.redirected ? "signed out? log in again in another tab" : `server error ${response.status}`;
      action.status = "retrying";
      action.note = `not saved (${why}); retry ${action.attempts} in ${wait} s`;
      setStatus("retrying", `Save failed — retrying (${why})`);
      renderPending();
      retryTimer = setTimeout(pump, wait * 1000);
    }

    window.addEventListener("beforeunload", (event) => {
      if (queue.length) event.preventDefault(); // unsaved actions: the browser asks before leaving
    });

    return {
      enqueue,
      setStatus,
      clearHint,
      leaveWhenSaved: (url) => { leaveTo = url; }, // pump() leaves once nothing is left unsaved
    };
  }

  window.annotateSaving = { create };
})();

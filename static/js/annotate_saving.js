/* The save queue of the annotation screen. Actions (label, edit, undo, item event, done) are sent one at a time,
 * in order, with fetch(); each label write names the event it replaces (expected_previous, read when
 * it is sent), so a write from another tab is detected. Every action carries a client id, is kept in
 * localStorage until the server answers (annotate_unsent.js) and may be sent again safely: the server
 * stores an id once. Network failures and server errors are retried with backoff and stay listed in
 * #pending until saved; a login page, 401 or CSRF refusal holds the queue while annotate_session.js
 * gets the session back; refusals (4xx) are listed until dismissed. A "refresh" reads the pair's
 * labels again before anything after it is sent (a page brought back by Back, or actions left by an
 * earlier page). It owns the #save-status line and asks before the page is left with anything unsaved.
 * annotate.js says what a saved, refreshed or conflicting answer changes on the screen (the hooks of create). */
(function () {
  "use strict";

  const BACKOFF_S = [1, 2, 4, 8]; // then every 15 s until it goes through
  const SLOW_RETRY_S = 15;
  const SESSION_RESENDS = 2; // sent again at once with a fresh token; after that, the usual backoff
  const { $, element, describe } = window.annotateView;

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

  // A save answered by the login page (a redirect), 401, or a 403 that is a CSRF refusal, not a refusal of rights.
  function signedOut(response, payload) {
    if (!response) return false;
    if (response.type === "opaqueredirect" || response.redirected || response.status === 401) return true;
    return response.status === 403 && (!payload || payload.reason === "csrf");
  }

  /* urls: {label, edit, undo, item, done, refresh}; store: annotate_unsent.js; session: annotate_session.js;
   * currentLabel(simple, complex): the {label, event} the server last gave for a pair, read when its
   * label write is sent; saved(action, payload): apply an accepted answer; refreshed(payload): apply
   * the pair's state read again; conflict(action, payload): apply a 409 answer and return the note to
   * list it with, or null to list it as a plain refusal. */
  function create({ urls, store, session, currentLabel, saved, refreshed, conflict }) {
    const queue = []; // actions not saved yet, and refreshes; the head is in flight
    let refused = []; // actions the server refused (conflict, bad input): shown until dismissed
    let sending = false;
    let retryTimer = null;
    let leaveTo = null; // where a skip goes once every action is saved
    let waitingForSession = false;

    const unsent = () => queue.filter((action) => action.kind !== "refresh");

    function clearHint() {
      // A hint answered a key press; once the annotator moves on it would only mislead.
      if ($("save-status").dataset.state === "hint" && !unsent().length && !refused.length) setStatus("idle", "All saved ✓");
    }

    function renderPending() {
      const list = $("pending");
      list.replaceChildren();
      for (const action of [...unsent(), ...refused]) {
        const item = element("li", `pending-${action.status}`, `${describe(action)}: ${action.note} `);
        if (action.status === "refused") {
          item.append(linkButton("dismiss", () => { refused = refused.filter((other) => other !== action); renderPending(); }));
        } else if (action.status === "retrying") {
          item.append(linkButton("retry now", () => { clearTimeout(retryTimer); pump(); }));
        }
        list.appendChild(item);
      }
      list.hidden = !list.children.length;
      session.update();
    }

    function waiting() {
      const actions = unsent();
      const noun = actions.every((action) => action.kind === "label") ? "label" : "change";
      return { count: actions.length, phrase: `${actions.length} ${noun}${actions.length === 1 ? "" : "s"}` };
    }

    function kick() {
      if (!sending && !retryTimer && !waitingForSession) pump();
    }

    function add(action, note) {
      Object.assign(action, { attempts: 0, sessionResends: 0, status: "queued", note });
      queue.push(action);
    }

    function enqueue(fields) {
      const action = { ...fields, clientId: store.newClientId(), madeAt: performance.timeOrigin + performance.now() };
      add(action, "waiting");
      store.remember(action); // kept until the server answers, across a reload
      renderPending();
      kick();
    }

    // Actions an earlier page of this pair left unsent: listed, then sent after whatever is queued (a refresh first).
    function restore(actions) {
      if (!actions.length) return;
      for (const action of actions) add(action, "left unsent by an earlier page; sending");
      setStatus("saving", `${actions.length} change${actions.length === 1 ? "" : "s"} left unsent by an earlier page: sending…`);
      renderPending();
      kick();
    }

    // The labels on screen may be stale (Back, a restored page): read them again before anything else is sent.
    function refreshFirst() {
      if (queue.some((action, at) => action.kind === "refresh" && !(sending && at === 0))) return; // one not yet sent is enough
      queue.splice(sending ? 1 : 0, 0, { kind: "refresh", attempts: 0, sessionResends: 0, status: "queued", note: "" });
      clearTimeout(retryTimer);
      retryTimer = null;
      kick();
    }

    function requestBody(action) {
      const body = new URLSearchParams();
      body.set("client_action_id", action.clientId);
      if (action.kind === "item") {
        body.set("kind", action.itemKind);
        body.set("text", action.text);
      }
      if (action.kind === "edit") {
        // Each change names the event it replaces, read now (as for a label): earlier actions may have changed it.
        const changes = action.changes.map((change) => {
          const current = currentLabel(change.simple, change.complex);
          return { ...change, expected_previous: current ? current.event : null };
        });
        body.set("changes", JSON.stringify(changes));
        body.set("seconds_spent", action.seconds.toFixed(2));
        if (action.suggestions) body.set("suggestions", action.suggestions);
        if (action.bulkThreshold !== undefined) body.set("bulk_threshold", String(action.bulkThreshold)); // a bulk accept's
      }
      if (action.kind === "label") {
        const current = currentLabel(action.simple, action.complex);
        body.set("simple_sentence_id", action.simple);
        body.set("complex_sentence_id", action.complex);
        body.set("label", action.label);
        body.set("source", action.source || "human"); // an action left unsent by an older page has none: human, as it then was
        body.set("expected_previous", current ? current.event : ""); // read now: earlier actions may have changed it
        body.set("seconds_spent", action.seconds.toFixed(2));
        if (action.suggestions) body.set("suggestions", action.suggestions);
      }
      return body;
    }

    async function send(action) {
      const options = action.kind === "refresh"
        ? { method: "GET", cache: "no-store", headers: { Accept: "application/json" } }
        : { method: "POST", body: requestBody(action), headers: { "X-CSRFToken": session.csrfToken(), Accept: "application/json" } };
      try {
        // redirect "manual": a login redirect shows as such, instead of the login page's 200.
        const response = await fetch(urls[action.kind], { ...options, credentials: "same-origin", redirect: "manual" });
        const json = (response.headers.get("Content-Type") || "").includes("application/json");
        return { response, payload: json ? await response.json() : null };
      } catch (error) {
        return { response: null, payload: null }; // network failure: retried
      }
    }

    async function pump() {
      retryTimer = null;
      const action = queue[0];
      if (!action || sending || waitingForSession) return;
      sending = true;
      action.status = "sending";
      action.note = "saving…";
      setStatus("saving", action.kind === "refresh" ? "Reading your labels from the server…" : "Saving…");
      renderPending();
      const { response, payload } = await send(action);
      sending = false;
      if (response && payload && response.ok) {
        queue.shift();
        if (action.kind === "refresh") refreshed(payload);
        else {
          store.forget(action.clientId);
          saved(action, payload);
        }
      } else if (signedOut(response, payload)) {
        return waitForSession(action);
      } else if (response && response.status >= 400 && response.status < 500) {
        queue.shift(); // the server said no: retrying would not help, so show why and keep it listed
        const why = payload || { error: `the server answered ${response.status} ${response.statusText}` };
        if (action.kind === "refresh") setStatus("error", `Could not read your labels from the server (${why.error}): reload the page.`);
        else {
          store.forget(action.clientId);
          refuse(action, response.status, why);
        }
      } else {
        return scheduleRetry(action, response);
      }
      renderPending();
      if (queue.length) pump();
      else if (leaveTo) window.location.assign(leaveTo);
    }

    function waitForSession(action) {
      action.sessionResends += 1;
      if (action.sessionResends > SESSION_RESENDS) return scheduleRetry(action, null, "the server still refuses this session");
      waitingForSession = true;
      action.status = "waiting";
      action.note = "not saved yet: waiting for your session";
      setStatus("signed-out", "Not saved yet: waiting for your session (see the note at the foot of the screen)");
      renderPending();
      session.recover(); // calls resume() once this page's user is signed in
    }

    function resume(afterLogin) {
      if (afterLogin) for (const action of queue) action.sessionResends = 0; // a new login: a fresh start
      waitingForSession = false;
      clearTimeout(retryTimer);
      retryTimer = null;
      kick();
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

    function scheduleRetry(action, response, reason) {
      action.attempts += 1;
      const wait = BACKOFF_S[action.attempts - 1] || SLOW_RETRY_S;
      const why = reason || (!response ? "no connection" : `server error ${response.status}`);
      action.status = "retrying";
      action.note = `not saved (${why}); retry ${action.attempts} in ${wait} s`;
      setStatus("retrying", `${action.kind === "refresh" ? "Could not read your labels" : "Save failed"} — retrying (${why})`);
      renderPending();
      retryTimer = setTimeout(pump, wait * 1000);
    }

    window.addEventListener("beforeunload", (event) => {
      if (unsent().length) event.preventDefault(); // unsaved actions: the browser asks before leaving (they are kept for the next visit)
    });
    window.addEventListener("online", () => {
      if (retryTimer) resume(false); // back online: no need to wait for the next retry
    });

    return {
      enqueue,
      restore,
      refreshFirst,
      resume,
      waiting,
      setStatus,
      clearHint,
      leaveWhenSaved(url) {
        leaveTo = url; // pump() leaves once nothing is left unsaved
        if (!sending && !unsent().length) window.location.assign(url);
      },
    };
  }

  window.annotateSaving = { create };
})();

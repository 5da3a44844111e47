/* Signed out while annotating. When a save is answered by the login page, a 401 or a CSRF refusal,
 * annotate_saving.js holds its queue and calls recover(); this asks the session probe
 * (GET /accounts/session/) whether the browser is signed in, and as whom:
 * - as the page's own user (logged in again in another tab, or only the CSRF token changed): it takes
 *   the new token (for fetch, htmx's hx-headers on <body> and the page's forms) and the queue sends
 *   again at once;
 * - signed out, or as another user: a banner says so, how many changes are waiting and how to log in
 *   (a new tab, so nothing on this page is lost), and the probe is asked again every few seconds and
 *   whenever the tab comes back into view, until the page's own user is back. Nothing is sent as
 *   another user, and nothing is dropped.
 * It also owns the CSRF token that annotate_saving.js sends. */
(function () {
  "use strict";

  const POLL_S = 3;
  const { element } = window.annotateView;

  function tokenOnPage() {
    try {
      const token = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"];
      if (token) return token;
    } catch (error) {
      // fall back to the cookie below
    }
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  /* probeUrl, loginUrl: the probe and the login page; userId, username: whose page this is;
   * waiting(): {count, phrase} of the changes waiting ("3 labels"); resumed(afterLogin): send again. */
  function create({ probeUrl, loginUrl, userId, username, waiting, resumed }) {
    let token = tokenOnPage();
    let pollTimer = null;
    let asking = false;
    let shown = null; // what the banner says now: "signed-out", "other" or "unreachable"; null while hidden
    let otherUser = "";

    function takeToken(fresh) {
      if (!fresh) return;
      token = fresh;
      let headers = {};
      try {
        headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
      } catch (error) {
        headers = {};
      }
      headers["X-CSRFToken"] = fresh;
      document.body.setAttribute("hx-headers", JSON.stringify(headers)); // htmx reads it on every request
      document.querySelectorAll('input[name="csrfmiddlewaretoken"]').forEach((input) => { input.value = fresh; });
    }

    async function probe() {
      try {
        const response = await fetch(probeUrl, { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } });
        if (!response.ok) return "unreachable";
        const answer = await response.json();
        if (!answer.authenticated) return "signed-out";
        if (String(answer.user_id) !== String(userId)) {
          otherUser = answer.username;
          return "other";
        }
        takeToken(answer.csrf_token);
        return "same";
      } catch (error) {
        return "unreachable";
      }
    }

    function loginLink(text) {
      const link = element("a", "button small", text);
      link.href = loginUrl;
      link.target = "_blank"; // a new tab: this page and its waiting changes stay as they are
      link.rel = "noopener";
      return link;
    }

    function renderBanner() {
      const banner = document.getElementById("session-banner");
      banner.hidden = !shown;
      if (!shown) return banner.replaceChildren();
      const { count, phrase } = waiting(); // phrase: "3 labels", "1 change"
      const are = count === 1 ? "is" : "are";
      const sent = count ? " — they are sent as soon as you do." : " — this page picks up the new session by itself.";
      const parts = {
        "signed-out": [count ? `You were signed out; ${phrase} ${are} waiting. ` : "You were signed out. ", loginLink("Log in (opens a new tab)"), sent],
        other: [
          `This browser is now signed in as ${otherUser}, not ${username}: `
            + (count ? `the ${phrase} waiting here ${are} not sent as ${otherUser}. ` : "this page sends nothing as them. "),
          loginLink(`Log in as ${username} (opens a new tab)`), sent,
        ],
        unreachable: [`The server does not answer${count ? `; ${phrase} ${are} waiting and are sent as soon as it does` : ""}.`],
      }[shown];
      banner.dataset.state = shown;
      banner.replaceChildren(...parts);
    }

    function stopPolling() {
      clearInterval(pollTimer);
      pollTimer = null;
    }

    async function check() {
      if (asking) return;
      asking = true;
      const outcome = await probe();
      asking = false;
      if (outcome === "same") {
        const afterLogin = shown !== null;
        stopPolling();
        shown = null;
        renderBanner();
        resumed(afterLogin);
        return;
      }
      shown = outcome;
      renderBanner();
      if (!pollTimer) pollTimer = setInterval(check, POLL_S * 1000);
    }

    function checkNowIfWaiting() {
      if (pollTimer && document.visibilityState === "visible") check();
    }
    window.addEventListener("focus", checkNowIfWaiting);
    document.addEventListener("visibilitychange", checkNowIfWaiting);
    window.addEventListener("online", checkNowIfWaiting);

    return {
      csrfToken: () => token,
      recover: check,
      update: () => { if (shown) renderBanner(); }, // the count of waiting changes moved
    };
  }

  window.annotateSession = { create };
})();

/* The annotation screen's unsent actions in localStorage, so that they outlive the page (a reload, a
 * closed tab, a crash). One entry per user, project and pair (#annotate's data-unsent-key) holds every
 * action the server has not answered yet, by its client id: annotate_saving.js remembers an action
 * when it is made and forgets it once the server answered (saved, or refused and listed), and the next
 * page of the same pair sends what is left. Tabs of one pair share the entry, so each change reads it,
 * changes its own action and writes it back; an action two tabs send is stored once, because the
 * server knows its client id (annotation/client_actions.py). */
(function () {
  "use strict";

  const KINDS = ["label", "edit", "undo", "item", "done"];
  const FIELDS = ["clientId", "madeAt", "kind", "simple", "complex", "label", "source", "suggestions", "seconds", "itemKind", "text", "changes"];
  const CLIENT_ID = /^[0-9a-f]{32}$/;

  // 128 random bits as 32 hex digits: what the server accepts as client_action_id (crypto.randomUUID needs https).
  function newClientId() {
    const bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  }

  function pick(action) {
    const kept = {};
    for (const field of FIELDS) if (action[field] !== undefined) kept[field] = action[field];
    return kept;
  }

  // Only what this page could have written: anything else in the entry is ignored, never sent.
  function isAction(entry) {
    if (!entry || typeof entry !== "object" || !CLIENT_ID.test(entry.clientId) || !KINDS.includes(entry.kind)) return false;
    if (entry.kind === "label") {
      return Number.isInteger(entry.simple) && Number.isInteger(entry.complex) && typeof entry.label === "string" && Number.isFinite(entry.seconds);
    }
    if (entry.kind === "edit") {
      const change = (c) => c && Number.isInteger(c.simple) && Number.isInteger(c.complex) && typeof c.label === "string";
      return Array.isArray(entry.changes) && entry.changes.length > 0 && entry.changes.every(change) && typeof entry.text === "string"
        && Number.isFinite(entry.seconds);
    }
    return entry.kind !== "item" || (typeof entry.itemKind === "string" && typeof entry.text === "string");
  }

  function create(storageKey) {
    function read() {
      try {
        const entries = JSON.parse(window.localStorage.getItem(storageKey) || "{}");
        return entries && typeof entries === "object" ? entries : {};
      } catch (error) {
        return {}; // storage blocked (privacy settings) or an entry that is not ours
      }
    }

    function write(entries) {
      try {
        if (Object.keys(entries).length) window.localStorage.setItem(storageKey, JSON.stringify(entries));
        else window.localStorage.removeItem(storageKey);
        return true;
      } catch (error) {
        return false; // full or blocked: the page still holds the action, and asks before it is left
      }
    }

    return {
      newClientId,
      remember(action) {
        const entries = read();
        entries[action.clientId] = pick(action);
        return write(entries);
      },
      forget(clientId) {
        const entries = read();
        if (!(clientId in entries)) return;
        delete entries[clientId];
        write(entries);
      },
      // What earlier pages of this pair left unsent, oldest first.
      left() {
        return Object.values(read()).filter(isAction).map(pick).sort((a, b) => (a.madeAt || 0) - (b.madeAt || 0));
      },
    };
  }

  window.annotateUnsent = { create };
})();

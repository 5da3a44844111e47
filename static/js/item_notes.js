/* The annotator's notes on a document pair (annotation screen): the flag and skip marks, the
 * comments, and the comment box (key c; Ctrl+Enter saves, Esc cancels). Saving goes through
 * annotate_saving.js's action queue, which calls openComment's callback with the checked text. */
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const box = $("comment-box");
  if (!box) return;
  const field = $("comment-text");
  let onSave = null;
  const when = (iso) => iso.slice(0, 16).replace("T", " ");

  function render(notes) {
    $("flag-mark").hidden = !notes.flagged;
    $("skip-mark").hidden = !notes.skipped_at;
    if (notes.skipped_at) $("skip-mark").textContent = `You skipped this pair ${when(notes.skipped_at)}`;
    $("comments").replaceChildren(...notes.comments.map((comment) => {
      const item = document.createElement("li");
      const at = document.createElement("span");
      at.className = "muted small";
      at.textContent = `${when(comment.at)} · `;
      item.append(at, comment.text);
      return item;
    }));
    $("notes").hidden = !notes.flagged && !notes.skipped_at && !notes.comments.length;
  }

  function close() {
    box.hidden = true;
    field.blur(); // keys go back to the screen
    onSave = null;
  }

  function save() {
    const text = field.value.trim();
    const limit = Number(field.getAttribute("maxlength"));
    if (!text) return ($("comment-error").textContent = "The comment is empty: write something or press Esc.");
    if (text.length > limit) return ($("comment-error").textContent = `The comment has ${text.length} characters; at most ${limit} are kept.`);
    const callback = onSave;
    field.value = "";
    close();
    if (callback) callback(text);
  }

  field.addEventListener("keydown", (event) => {
    if (event.key === "Escape") close();
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) save();
  });
  box.addEventListener("click", (event) => {
    if (event.target.closest("[data-comment-save]")) save();
    if (event.target === box || event.target.closest("[data-comment-cancel]")) close();
  });

  window.itemNotes = {
    render,
    openComment(callback) {
      onSave = callback;
      $("comment-error").textContent = "";
      box.hidden = false;
      field.focus();
    },
  };
})();

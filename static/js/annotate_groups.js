/* The alignment of a pair as groups, and the edits of the alignment view, computed from the screen's state.
 * Nothing here draws or saves: annotate_alignment.js draws the rows, annotate.js sends the changes.
 *
 * A link is a sentence pair labelled aligned or partial: by the annotator (own), or suggested by the aligner
 * where the annotator has no label of their own (an own "not aligned" hides the suggestion). Groups are the
 * connected sets of linked sentences (1:1, 1:2, 2:1, n:m); every sentence in no group is a row of its own
 * (unaligned), placed after the group that holds the sentences before it, as InterText lays them out. An
 * edit is a list of changes {simple, complex, label, source}: stored as ordinary label events, together. */
(function () {
  "use strict";

  const LINKED = ["aligned", "partial"];
  const pairKey = (simple, complex) => `${simple}:${complex}`;
  const node = (side, id) => `${side}:${id}`;
  const SIDES = ["complex", "simple"];

  /* The pair's sentences in document order, each one's number, text and paragraph row, read from the focus view. */
  function readModel(root) {
    const model = { complex: [], simple: [], number: {}, para: {}, text: {}, paraNames: [] };
    root.querySelectorAll(".para-row:not(.doc-heads)").forEach((row, index) => {
      const numbers = { complex: [], simple: [] };
      row.querySelectorAll(".sentence").forEach((el) => {
        const side = el.dataset.side;
        const id = Number(el.dataset.id);
        model[side].push(id);
        model.number[node(side, id)] = Number(el.dataset.number);
        model.para[node(side, id)] = index;
        model.text[node(side, id)] = el.querySelector(".sent-text").textContent;
      });
      row.querySelectorAll(".para-no").forEach((el) => numbers[el.closest(".complex-cell") ? "complex" : "simple"].push(el.textContent));
      model.paraNames.push(`${numbers.complex.join(" ") || "–"} ↔ ${numbers.simple.join(" ") || "–"}`);
    });
    for (const side of SIDES) model[side].sort((a, b) => model.number[node(side, a)] - model.number[node(side, b)]);
    return model;
  }

  /* "simple:complex" -> {simple, complex, label, own, confidence}: own labels (not aligned included), then suggestions. */
  function linkMap(state) {
    const map = new Map();
    for (const [key, value] of Object.entries(state.labels)) {
      if (!value.label) continue; // undone: no label of their own, so the suggestion shows again
      const [simple, complex] = key.split(":").map(Number);
      map.set(key, { simple, complex, label: value.label, own: true });
    }
    for (const [simple, list] of Object.entries(state.candidates)) {
      for (const candidate of list) {
        const key = pairKey(simple, candidate.complex);
        if (map.has(key) || !LINKED.includes(candidate.predicted)) continue;
        map.set(key, { simple: Number(simple), complex: candidate.complex, label: candidate.predicted, own: false, confidence: candidate.confidence, basis: candidate.basis });
      }
    }
    return map;
  }

  const isLink = (link) => link && LINKED.includes(link.label);

  function groupsOf(links, model) {
    const parent = new Map();
    const find = (x) => {
      while (parent.get(x) !== x) x = parent.get(x);
      return x;
    };
    for (const link of links) {
      const [a, b] = [node("simple", link.simple), node("complex", link.complex)];
      for (const x of [a, b]) if (!parent.has(x)) parent.set(x, x);
      const [ra, rb] = [find(a), find(b)];
      if (ra !== rb) parent.set(ra, rb);
    }
    const groups = new Map();
    for (const x of parent.keys()) {
      const root = find(x);
      if (!groups.has(root)) groups.set(root, { complex: [], simple: [], links: [] });
      const [side, id] = x.split(":");
      groups.get(root)[side].push(Number(id));
    }
    for (const link of links) groups.get(find(node("simple", link.simple))).links.push(link);
    const number = (side, id) => model.number[node(side, id)] || 0;
    const first = (group, side) => (group[side].length ? number(side, group[side][0]) : Infinity);
    const sorted = [...groups.values()];
    for (const group of sorted) for (const side of SIDES) group[side].sort((a, b) => number(side, a) - number(side, b));
    sorted.sort((a, b) => first(a, "simple") - first(b, "simple") || first(a, "complex") - first(b, "complex"));
    return { sorted, grouped: new Set(parent.keys()), number };
  }

  /* The rows of the alignment view, in order: groups, and between them the sentences no group holds. */
  function rows(state, model) {
    const map = linkMap(state);
    const { sorted, grouped, number } = groupsOf([...map.values()].filter(isLink), model);
    const gaps = sorted.map(() => []).concat([[]]);
    for (const side of SIDES) {
      for (const id of model[side]) {
        if (grouped.has(node(side, id))) continue;
        let gap = 0;
        sorted.forEach((group, k) => { if (group[side].some((other) => number(side, other) < number(side, id))) gap = k + 1; });
        gaps[gap].push({ complex: side === "complex" ? [id] : [], simple: side === "simple" ? [id] : [], links: [] });
      }
    }
    const result = [];
    gaps.forEach((gap, k) => {
      result.push(...gap);
      if (k < sorted.length) result.push(sorted[k]);
    });
    return result.map((row) => describeRow(row, state, map, model));
  }

  // What a row shows: its type (2:1), whose links they are, its colour, its paragraph row and any reviewer decision it contradicts.
  function describeRow(row, state, map, model) {
    const own = row.links.filter((link) => link.own).length;
    const status = !row.links.length ? "unaligned" : own === row.links.length ? "own" : own ? "mixed" : "suggested";
    const label = row.links.some((link) => link.label === "partial") ? "partial" : row.links.length ? "aligned" : "";
    const anchor = row.simple.length ? node("simple", row.simple[0]) : node("complex", row.complex[0]);
    const simpleIds = new Set(row.simple.map(String));
    const conflicts = [];
    for (const [key, decided] of Object.entries(state.decisions || {})) {
      const [simple, complex] = key.split(":");
      if (!simpleIds.has(simple)) continue;
      const mine = map.get(key);
      const current = mine ? mine.label : "not_aligned"; // no link: not aligned, as a pair marked done reads
      if (current !== decided) conflicts.push({ simple: Number(simple), complex: Number(complex), decided, current });
    }
    return { ...row, type: `${row.complex.length}:${row.simple.length}`, status, label, para: model.para[anchor], conflicts };
  }

  // ----- edits: each answers {changes, text} or {hint} ------------------------------------------------

  const change = (link, label, source) => ({ simple: link.simple, complex: link.complex, label, source: source || "human" });

  function setLinks(row, label) {
    if (!row.links.length) return { hint: "This row is one unaligned sentence: merge it with a neighbour (m / M) to link it." };
    const changes = row.links
      .filter((link) => !(link.own && link.label === label))
      .map((link) => change(link, label, !link.own && link.label === label ? "suggestion" : "human"));
    if (!changes.length) return { hint: `Every link of this group is ${label} already.` };
    return { changes, text: `${row.type} group → ${label}` };
  }

  function dissolve(row) {
    if (!row.links.length) return { hint: "This sentence is unaligned already." };
    return { changes: row.links.map((link) => change(link, "not_aligned")), text: `${row.type} group dissolved: its sentences unaligned` };
  }

  // Merge two neighbouring rows, given in their order on screen; the cursor goes to the merged group's first sentence.
  function merge(row, other, state) {
    if (!row || !other) return { hint: "There is no row to merge with in that direction." };
    const complex = [...row.complex, ...other.complex];
    const simple = [...row.simple, ...other.simple];
    if (!complex.length || !simple.length) {
      return { hint: `Two ${complex.length ? "complex" : "simple"} sentences make no group: merge with a row that has a ${complex.length ? "simple" : "complex"} sentence.` };
    }
    const map = linkMap(state);
    const changes = [];
    for (const s of simple) {
      for (const c of complex) {
        const link = map.get(pairKey(s, c));
        if (link && link.own && isLink(link)) continue;
        changes.push(link && !link.own ? change(link, link.label, "suggestion") : { simple: s, complex: c, label: "aligned", source: "human" });
      }
    }
    return { changes, text: `merged into a ${complex.length}:${simple.length} group`, focus: { side: "complex", id: complex[0] } };
  }

  function split(row, cursor) {
    if (!row.links.length) return { hint: "Nothing to split: this row is one unaligned sentence." };
    const side = cursor.side;
    const other = side === "complex" ? "simple" : "complex";
    let cut = row[side].indexOf(cursor.id);
    if (cut <= 0) cut = 1;
    if (cut >= row[side].length) {
      return { hint: `Put the cursor (h / l) on the sentence that should start the second part. A 1:1 group has nothing to split: x marks a sentence unaligned, n dissolves the group.` };
    }
    const keep = Math.round((row[other].length * cut) / row[side].length);
    const firstPart = new Set([...row[side].slice(0, cut).map((id) => node(side, id)), ...row[other].slice(0, keep).map((id) => node(other, id))]);
    const crossing = row.links.filter((link) => firstPart.has(node("simple", link.simple)) !== firstPart.has(node("complex", link.complex)));
    if (!crossing.length) return { hint: "The two parts share no link: nothing to cut." };
    return { changes: crossing.map((link) => change(link, "not_aligned")), text: `${row.type} group split in two`, focus: cursor };
  }

  function unalign(cursor, state, model) {
    const map = linkMap(state);
    const field = cursor.side === "simple" ? "simple" : "complex";
    const links = [...map.values()].filter((link) => isLink(link) && link[field] === cursor.id);
    const name = `${cursor.side} #${model.number[node(cursor.side, cursor.id)]}`;
    if (links.length) return { changes: links.map((link) => change(link, "not_aligned")), text: `${name} unaligned`, focus: cursor };
    if (cursor.side === "complex") return { hint: `Complex #${model.number[node("complex", cursor.id)]} has no link: it is unaligned already.` };
    const mine = Object.entries(state.labels).some(([key, value]) => key.startsWith(`${cursor.id}:`) && value.label);
    if (mine) return { hint: `You marked ${name} unaligned already.` };
    const candidates = state.candidates[cursor.id] || [];
    if (!candidates.length) return { hint: `${name} has no candidate to mark; with no label it counts as unaligned once you mark the pair done (d).` };
    return { changes: [{ simple: cursor.id, complex: candidates[0].complex, label: "not_aligned", source: "human" }], text: `${name} unaligned`, focus: cursor };
  }

  function acceptParagraph(para, state, model) {
    const changes = [];
    for (const simple of model.simple) {
      if (model.para[node("simple", simple)] !== para) continue;
      for (const candidate of state.candidates[simple] || []) {
        const own = state.labels[pairKey(simple, candidate.complex)];
        if (LINKED.includes(candidate.predicted) && !(own && own.label)) changes.push({ simple, complex: candidate.complex, label: candidate.predicted, source: "suggestion" });
      }
    }
    if (!changes.length) return { hint: `No suggestion is left in paragraphs ${model.paraNames[para]}.` };
    return { changes, text: `${changes.length} suggestion${changes.length > 1 ? "s" : ""} of paragraphs ${model.paraNames[para]} accepted` };
  }

  window.annotateGroups = { LINKED, readModel, linkMap, rows, setLinks, dissolve, merge, split, unalign, acceptParagraph, node };
})();

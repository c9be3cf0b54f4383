// GRACE, the reviewer page: escalations, the gap report and the
// reliability diagram over the review endpoints (served at
// /assets/review.js; the page's policy runs no inline script).
"use strict";

/** The knowledge base this page serves: `?kb=NAME` in its address, else
 * the server's `default` (a name that is not one's never leaves the page). */
const KB = (() => {
  const kb = new URLSearchParams(location.search).get("kb");
  return kb && /^[a-z0-9][a-z0-9_-]{0,63}$/.test(kb) ? kb : null;
})();

/** `path` on this page's knowledge base: `/v1/x` is `/v1/kbs/KB/x`. */
function onKb(path) {
  return KB && path.startsWith("/v1/") ? `/v1/kbs/${KB}/${path.slice(4)}` : path;
}

// ---------------------------------------------------------------- page ---
const $ = (id) => document.getElementById(id);
const listEl = $("list");
const listPanel = $("list-panel");
const noticeEl = $("notice");
const tokenEl = $("token");
const whoamiEl = $("whoami");
const countEl = $("count");
/** The session storage key of the reviewer's token: it stays in this tab
 * only, one per knowledge base the page serves. */
const TOKEN = KB ? `grace-token:${KB}` : "grace-token";

/** What #whoami says signed out (on a server without keys, then with them) and as the administrator. */
const SIGNED_OUT_OPEN = "Signed out. This server needs no key on this machine, so you can read every escalation; sign in with your reviewer token to answer.";
const SIGNED_OUT_CLOSED = "Signed out: sign in with your reviewer token to see the escalations.";
const ADMIN = "Administrator: you can read every escalation and see the gaps and calibration; answering, claiming and detaching need a reviewer's own token.";
/** Beside a card's options, for whoever may read but not answer. */
const READ_ONLY = {
  "signed-out": "Reading only: sign in with your reviewer token to answer.",
  admin: "Reading only: answering needs a reviewer's own token.",
};

/** Who the page acts as: its role, the reviewer's id, and whether it may list escalations. */
let session = { role: "signed-out", reviewer: null, canRead: false };

/** Says `text` in the notice line; an error stands out. */
function say(text, isError) {
  noticeEl.textContent = text;
  noticeEl.className = isError ? "error" : "";
}

/** A date as the reader's locale writes it. */
function when(iso) {
  return new Date(iso).toLocaleString();
}

// ----------------------------------------------------------------- api ---
/** A refused request: its HTTP status and the server's message. */
class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** Calls the review API with the signed-in token; the answer's JSON. */
async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  const token = sessionStorage.getItem(TOKEN);
  if (token) headers.Authorization = "Bearer " + token;
  const res = await fetch(onKb(path), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, (data.error && data.error.message) || res.statusText);
  return data;
}

// ------------------------------------------------------------- sign-in ---
/** Asks the server whom the stored token names, and shows the page for that role. */
async function identify() {
  let me;
  try {
    me = await api("GET", "/v1/review/me");
  } catch (err) {
    // 404: no knowledge base of the page's you may review (a token of
    // another one): as a wrong token.
    if (err.status !== 401 && err.status !== 404) {
      say(`Cannot tell who you are: ${err.message}`, true);
      return;
    }
    if (sessionStorage.getItem(TOKEN)) {
      // A wrong (or replaced) token: forget it, and read as signed out.
      sessionStorage.removeItem(TOKEN);
      tokenEl.setAttribute("aria-invalid", "true");
      say(`That token was not accepted: ${err.message}`, true);
      await identify();
      return;
    }
    become("signed-out", null, SIGNED_OUT_CLOSED, false);
    return;
  }
  if (!sessionStorage.getItem(TOKEN)) become("signed-out", null, SIGNED_OUT_OPEN, true);
  else if (me.role === "reviewer") become("reviewer", me.reviewer, `signed in as ${me.reviewer}`, true);
  else become("admin", null, ADMIN, true);
}

/** Shows the page as `role`: what #whoami says, sign-in or sign-out, and a list drawn afresh (its controls depend on the role). */
function become(role, reviewer, text, canRead) {
  const changed = role !== session.role || reviewer !== session.reviewer || canRead !== session.canRead;
  session = { role, reviewer, canRead };
  document.body.dataset.role = role;
  whoamiEl.textContent = text;
  $("sign-in").hidden = role !== "signed-out";
  $("sign-out").hidden = role === "signed-out";
  if (role !== "signed-out") {
    tokenEl.value = "";
    tokenEl.removeAttribute("aria-invalid");
  }
  if (changed) {
    shownKey = "";
    listEl.replaceChildren();
  }
  refresh();
}

/** Signs in with the typed token; a refused one leaves the page signed out, focus on the field. */
async function signIn(ev) {
  ev.preventDefault();
  const token = tokenEl.value.trim();
  if (!token) {
    say("Paste your reviewer token first.", true);
    tokenEl.focus();
    return;
  }
  say("");
  sessionStorage.setItem(TOKEN, token);
  await identify();
  if (session.role === "signed-out") tokenEl.focus();
  else $("sign-out").focus();
}

/** Forgets the token: the page reads as signed out. */
async function signOut() {
  sessionStorage.removeItem(TOKEN);
  say("Signed out.");
  await identify();
  tokenEl.focus();
}

// ---------------------------------------------------------------- list ---
/** The key of what was last drawn: the list is drawn again only when it changes. */
let shownKey = "";
/** Bumped by each refresh: an older one that answers late is dropped. */
let refreshes = 0;

/** Loads the open escalations and shows what changed. */
async function refresh() {
  const ticket = ++refreshes;
  if (!session.canRead) {
    countEl.textContent = "";
    return;
  }
  try {
    const list = await api("GET", "/v1/review/escalations");
    if (ticket === refreshes) show(list);
  } catch (err) {
    if (ticket !== refreshes) return;
    if (err.status === 401) identify();
    else say(`Cannot load escalations: ${err.message}`, true);
  }
}

/** What makes a card look different: drawn again when it changes. */
function cardKey(e) {
  return JSON.stringify([e.id, e.status, e.claimed_by, e.updated_at, (e.also_asked || []).map((a) => a.id)]);
}

/** The cards on the page now. */
function cardsOf() {
  return [...listEl.querySelectorAll("section.escalation")];
}

/** The card of escalation `id`, if listed. */
function cardFor(id) {
  return listEl.querySelector(`section.escalation[data-id="${id}"]`);
}

/**
 * Puts `list` on the page: unchanged cards stay as they are (typing, focus,
 * open sections), changed ones are drawn again with what was done in them
 * carried over, and focus on a card that left moves to the one after it.
 */
function show(list) {
  countEl.textContent = `${list.length} open`;
  const key = JSON.stringify(list.map(cardKey));
  if (key === shownKey) return;
  shownKey = key;
  const active = document.activeElement;
  const before = cardsOf();
  const focusedAt = before.findIndex((c) => c.contains(active));
  const old = new Map(before.map((c) => [c.dataset.id, c]));
  const redrawn = [];
  const cards = list.map((e) => {
    const was = old.get(String(e.id));
    if (was && was.dataset.key === cardKey(e)) return was;
    const fresh = card(e);
    if (was) redrawn.push([was, fresh]);
    return fresh;
  });
  place(listEl, cards.length ? cards : [el("p", { class: "empty", text: "Nothing to review." })]);
  for (const [was, fresh] of redrawn) carryOver(was, fresh, active);
  if (focusedAt >= 0 && !listEl.contains(document.activeElement)) {
    const now = cardsOf();
    if (now.length) now[Math.min(focusedAt, now.length - 1)].focus();
  }
}

/** Makes `parent`'s children `nodes`, moving only what must move (a moved element loses focus). */
function place(parent, nodes) {
  const keep = new Set(nodes);
  for (const child of [...parent.children]) if (!keep.has(child)) child.remove();
  let at = parent.firstElementChild;
  for (const node of nodes) {
    if (node === at) at = at.nextElementSibling;
    else parent.insertBefore(node, at);
  }
}

/** A selector for a card's `control` (its kind and first class; an option's number too), or null. */
function selectorOf(control) {
  if (!control.classList.length) return null;
  const base = `${control.tagName.toLowerCase()}.${control.classList[0]}`;
  return control.classList.contains("option") ? `${base}[value="${control.value}"]` : base;
}

/** Carries into a card drawn again what was done in it: typed text, the chosen option, ticked boxes, open sections, and focus. */
function carryOver(was, fresh, active) {
  for (const old of was.querySelectorAll("textarea, input, select, details")) {
    const selector = selectorOf(old);
    const twin = selector && fresh.querySelector(selector);
    if (!twin) continue;
    if (old.tagName === "DETAILS") twin.open = old.open;
    else if (old.type === "radio" || old.type === "checkbox") twin.checked = old.checked;
    else twin.value = old.value;
  }
  if (!was.contains(active)) return;
  const selector = active === was ? null : selectorOf(active);
  const target = (selector && fresh.querySelector(selector)) || fresh;
  target.focus();
  if (target.tagName === "TEXTAREA" || target.type === "text") target.setSelectionRange(active.selectionStart, active.selectionEnd);
}

// ---------------------------------------------------------------- card ---
/** One escalation as a focusable card: what was asked, why GRACE was unsure, the passages, and what the role may do. */
function card(e) {
  return el("section", {
    class: "escalation", "data-id": e.id, "data-key": cardKey(e), tabindex: 0,
    "aria-label": `Escalation #${e.id}: ${e.question}`,
  },
    el("h2", { text: `#${e.id}: ${e.question}` }),
    metaOf(e),
    groupOf(e),
    conversationOf(e.run),
    e.run.rewrite ? el("p", { class: "rewrite", text: `Read as: ${e.run.rewrite.question}` }) : null,
    el("p", { class: "reason", text: `Why escalated: ${e.reason}` }),
    factorsOf(e.run),
    passagesOf(e),
    ...actionsOf(e));
}

/** Its status, who claimed and asked it, GRACE's confidence, and how long the asker waits. */
function metaOf(e) {
  const holder = e.claimed_by ? ` by ${e.claimed_by === session.reviewer ? "you" : e.claimed_by}` : "";
  return el("p", { class: "meta" },
    el("span", { class: "status", text: e.status + holder }),
    ` · asked by ${e.asker} · confidence ${Math.round(e.run.confidence * 100)}%`,
    ` · the asker waits until ${when(e.asker_waits_until)} · in the queue until ${when(e.expires_at)}`);
}

/** The other askers answered with this one; a reviewer detaches one that asks something else. */
function groupOf(e) {
  const others = e.also_asked || [];
  if (!others.length) return null;
  const ul = el("ul", { class: "also-asked" });
  for (const a of others) {
    const detach = session.role !== "reviewer" ? null : el("button", {
      type: "button", class: "detach", title: "It asks something else: answer it on its own",
      onclick: () => detachOne(a.id),
    }, "Detach");
    ul.append(el("li", {}, `#${a.id} ${a.asker}: `, el("q", { text: a.question }), " ", detach));
  }
  return el("details", { class: "group", open: true },
    el("summary", { text: `Asked by ${1 + others.length} people: one answer goes to each` }), ul);
}

/** Takes escalation `id` out of its group: it is answered on its own. */
async function detachOne(id) {
  try {
    await api("POST", `/v1/review/escalations/${id}/detach`);
    say(`Escalation #${id} stands alone now.`);
  } catch (err) {
    say(`Escalation #${id}: ${err.message}`, true);
  }
  refresh();
}

/** The asker's earlier turns, oldest first: each question and GRACE's answer. */
function conversationOf(run) {
  const turns = run.conversation || [];
  if (!turns.length) return null;
  const ol = el("ol");
  for (const turn of turns) {
    ol.append(el("li", {},
      el("p", {}, el("span", { class: "label", text: "Asked: " }), turn.question),
      turn.answer
        ? el("div", {}, el("span", { class: "label", text: "GRACE answered:" }), markdownInto(el("div"), turn.answer, null))
        : el("p", { class: "meta", text: "Not answered." })));
  }
  return el("div", { class: "conversation" }, el("h3", { text: "Conversation so far" }), ol);
}

// ------------------------------------------------------------- factors ---
/** Why GRACE was not sure: where every answer starts, what raised and lowered it (largest first), and the total. */
function factorsOf(run) {
  const box = el("details", { class: "factors" }, el("summary", { text: "Why GRACE was not sure" }));
  const score = lastScore(run.steps);
  if (!score) {
    box.append(el("p", { text: "No confidence factors recorded." }));
    return box;
  }
  const logistic = score.model !== "grace_v1";
  if (logistic && Number.isFinite(score.bias)) box.append(el("p", { text: `Every answer starts at ${signed(score.bias)}; from there:` }));
  const terms = effects(score);
  for (const [raised, title] of [[true, "What raised it:"], [false, "What lowered it:"]]) {
    const mine = terms.filter((c) => (c.term > 0) === raised);
    if (!mine.length) continue;
    box.append(el("p", { text: title }), el("ul", {}, ...mine.map((c) =>
      el("li", { class: raised ? "raised" : "lowered", "data-factor": c.factor, text: `${factorText("en", c, raised)} (${signed(c.term)})` }))));
  }
  const percent = Math.round(score.score * 100);
  box.append(el("p", { class: "total", text: logistic && Number.isFinite(score.logit)
    ? `= ${signed(score.logit)}: confidence ${percent}%`
    : `Together: confidence ${percent}%` }));
  return box;
}

// ------------------------------------------------------------ passages ---
/** Lower-cased words of `text` (letters, digits and _ in any script). */
function wordsOf(text) {
  return text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) || [];
}

/**
 * Where a sentence ends: . ! ? before white space (not a list item's
 * number), 。！？, a blank line, or a line break before a list item (other
 * line breaks are soft wraps of running text).
 */
const SENTENCE_END = /(?<!(?:^|\n)[ \t]*\d{1,3})[.!?]+["')\]]*(?=\s|$)|[。！？]+|\n\s*\n|\n(?=[ \t]*(?:[-*•]|\d{1,3}[.)])[ \t])/g;

/** `text` cut into sentences: [start, end) ranges that cover it all. */
function sentenceRanges(text) {
  const ranges = [];
  let start = 0;
  for (const m of text.matchAll(SENTENCE_END)) {
    ranges.push([start, m.index + m[0].length]);
    start = m.index + m[0].length;
  }
  if (start < text.length) ranges.push([start, text.length]);
  return ranges;
}

/** The sentences of `text` that hold a word. */
function sentencesOf(text) {
  return sentenceRanges(text).map(([a, b]) => text.slice(a, b)).filter((s) => wordsOf(s).length);
}

/**
 * The draft's sentences by the source number they rest on: a `[n]` marker
 * covers the sentences since the marker before it (one right after another
 * covers the same ones), Markdown's backticks and asterisks left out.
 */
function claimsOf(draft) {
  const claims = new Map();
  const parts = draft.replace(/[`*]/g, "").split(/\[(\d{1,3})\]/);
  let covered = [];
  for (let i = 1; i < parts.length; i += 2) {
    const since = sentencesOf(parts[i - 1]);
    if (since.length) covered = since;
    const n = Number(parts[i]);
    claims.set(n, (claims.get(n) || []).concat(covered));
  }
  return claims;
}

/** A sentence in a <mark>, the white space around it left outside. */
function marked(sentence) {
  const [, before, body, after] = /^(\s*)([\s\S]*?)(\s*)$/.exec(sentence);
  return [before, el("mark", { text: body }), after];
}

/** `text` as nodes, each sentence that best matches one of `claims` (at least half of its words) marked. */
function markedText(text, claims) {
  const ranges = sentenceRanges(text);
  const words = ranges.map(([a, b]) => new Set(wordsOf(text.slice(a, b))));
  const chosen = new Set();
  for (const claim of claims) {
    const mine = [...new Set(wordsOf(claim))];
    let best = -1;
    let bestShare = 0;
    words.forEach((set, i) => {
      const share = mine.filter((w) => set.has(w)).length / mine.length;
      if (share > bestShare) [best, bestShare] = [i, share];
    });
    if (bestShare >= 0.5) chosen.add(best);
  }
  return ranges.flatMap(([a, b], i) => (chosen.has(i) ? marked(text.slice(a, b)) : [text.slice(a, b)]));
}

/** Where a passage or a citation is from: source, § section, page. */
function whereOf(x) {
  return x.source + (x.section ? ` § ${x.section}` : "") + (x.page ? ` · p. ${x.page}` : "");
}

/** Every passage the run's searches found, once each (by source, section and chunk), best first. */
function passagesFound(run) {
  const seen = new Set();
  const found = [];
  for (const s of run.steps || []) {
    const out = s.result && s.result.output;
    if (!out || out.type !== "passages") continue;
    for (const p of out.data) {
      const key = JSON.stringify([p.source, p.section, p.chunk_index]);
      if (!seen.has(key)) {
        seen.add(key);
        found.push(p);
      }
    }
  }
  return found;
}

/** Whether passage `p` is what citation `c` cites: the same source, and section and page where both say. */
function isCited(c, p) {
  return p.source === c.source && (!c.section || p.section === c.section) && (!c.page || !p.page || p.page === c.page);
}

/** The id of the cited passage numbered `n` in card `id` (the draft's [n] links to it). */
function citedId(id, n) {
  return `source-${id}-${n}`;
}

/** A passage in full: where it is from (after `label`, when given), then its text with `claims` marked. */
function passageItem(p, label, claims, id) {
  return el("li", { class: label ? "passage cited" : "passage", id },
    el("p", { class: "where" }, label, whereOf(p), el("span", { class: "meta", text: ` · match ${p.score.toFixed(2)}` })),
    el("div", { class: "passage-text" }, ...markedText(p.text, claims)));
}

/** First the passages the draft cites, by its numbers, the sentences it rests on marked; then every other passage found. */
function passagesOf(e) {
  const found = passagesFound(e.run);
  const draft = e.run.answer;
  const citations = draft ? [...(draft.citations || [])].sort((a, b) => a.number - b.number) : [];
  const claims = draft ? claimsOf(draft.text) : new Map();
  const cited = new Set();
  const box = el("div", { class: "sources" });
  if (citations.length) {
    const ul = el("ul", { class: "passages cited-passages" });
    for (const c of citations) {
      const p = found.find((x) => isCited(c, x));
      const label = `[${c.number}] `;
      if (p) {
        cited.add(p);
        ul.append(passageItem(p, label, claims.get(c.number) || [], citedId(e.id, c.number)));
      } else {
        ul.append(el("li", { class: "passage cited", id: citedId(e.id, c.number) },
          el("p", { class: "where" }, label, whereOf(c)),
          el("p", { class: "meta", text: "This passage is not among those GRACE found in this run." })));
      }
    }
    box.append(el("h3", { text: "Passages the draft cites" }), ul);
  }
  const others = found.filter((p) => !cited.has(p));
  if (others.length) {
    box.append(el("details", { class: "other-passages", open: !citations.length },
      el("summary", { text: `Other passages GRACE found (${others.length})` }),
      el("ul", { class: "passages" }, ...others.map((p) => passageItem(p, null, [], null)))));
  }
  if (!found.length && !citations.length) box.append(el("p", { class: "meta", text: "GRACE found no passages." }));
  if (e.withheld) {
    box.append(el("p", { class: "withheld", role: "note",
      text: `${e.withheld} ${e.withheld === 1 ? "passage or draft is" : "passages or drafts are"} withheld: ` +
        "they come from documents you may not read. Hand this question to someone who may read them." }));
  }
  return box;
}

// ------------------------------------------------------------- actions ---
/** One of GRACE's options as Markdown, its [n] markers linked to the passages the draft cites. */
function draftOf(e, option) {
  const numbers = new Set(((e.run.answer && e.run.answer.citations) || []).map((c) => c.number));
  return markdownInto(el("div", { class: "draft" }), option, (n) =>
    numbers.has(n) ? el("a", { href: `#${citedId(e.id, n)}`, class: "cite", text: `[${n}]` }) : null);
}

/** What the role may do with `e`: a reviewer answers, claims or rejects it; anyone else reads its options. */
function actionsOf(e) {
  if (session.role !== "reviewer") return [optionsList(e), el("p", { class: "read-only", text: READ_ONLY[session.role] })];
  if (e.status === "claimed" && e.claimed_by !== session.reviewer) {
    return [optionsList(e), el("p", { class: "read-only", text: `Reading only: ${e.claimed_by} claimed it, and only they can answer it now.` })];
  }
  return [answerForm(e), rejectBox(e)];
}

/** GRACE's options, to read. */
function optionsList(e) {
  if (!e.request.options.length) return null;
  return el("div", { class: "options" }, el("h3", { text: "GRACE's options" }),
    el("ol", {}, ...e.request.options.map((o) => el("li", {}, draftOf(e, o)))));
}

/** The reviewer's answer: an option or their own words, the promote box, the verdict on the draft; Answer and Claim. */
function answerForm(e) {
  const id = e.id;
  const form = el("form", { class: "answer-form", onsubmit: (ev) => { ev.preventDefault(); sendAnswer(form, id); } });
  if (e.request.options.length) {
    form.append(el("fieldset", { class: "options" }, el("legend", { text: "Answer with one of GRACE's options" }),
      ...e.request.options.map((o, i) => el("label", { class: "option-row" },
        el("input", { type: "radio", name: `option-${id}`, value: i + 1, class: "option" }),
        el("span", { text: `${i + 1}.` }),
        draftOf(e, o)))));
  }
  form.append(
    el("label", { class: "field-label", for: `answer-${id}`, text: e.request.options.length ? "…or in your own words" : "Your answer" }),
    el("p", { class: "help", id: `answer-help-${id}`, text: "\"redo: hint\" makes GRACE search again with your hint. Ctrl+Enter sends." }),
    el("textarea", { id: `answer-${id}`, class: "answer-text", rows: 3, "aria-describedby": `answer-help-${id}` }),
    el("div", { class: "actions" },
      el("button", { type: "submit", class: "answer primary", text: "Answer" }),
      e.status === "pending" ? el("button", { type: "button", class: "claim", text: "Claim", onclick: () => claim(id) }) : null,
      el("label", {}, el("input", { type: "checkbox", class: "promote" }), " add to the knowledge base"),
      el("label", {}, "GRACE's draft was ", el("select", { class: "verdict" },
        el("option", { value: "", text: "as my answer implies" }),
        el("option", { value: "right", text: "right" }),
        el("option", { value: "partly_right", text: "partly right" }),
        el("option", { value: "wrong", text: "wrong" })))));
  return form;
}

/** Reject, folded away: the reason (the asker reads it) and the button. */
function rejectBox(e) {
  const form = el("form", { class: "reject-form", onsubmit: (ev) => { ev.preventDefault(); reject(form, e.id); } },
    el("label", { for: `why-${e.id}`, text: "Why GRACE cannot answer this (the asker reads it)" }),
    el("input", { type: "text", id: `why-${e.id}`, class: "reject-why", autocomplete: "off" }),
    el("button", { type: "submit", class: "reject", text: "Reject" }));
  return el("details", { class: "reject-box" }, el("summary", { class: "reject-toggle", text: "Reject…" }), form);
}

/**
 * Runs a card's action and says how it went; when it worked, empties the
 * card's forms if `clears` and puts focus on the card (the next one takes
 * it if this one leaves the list).
 */
async function act(id, label, request, clears) {
  try {
    const result = await request();
    say(label === "answered" && result.status === "claimed"
      ? `Escalation #${id}: GRACE searched again with your hint; see the new options.`
      : `Escalation #${id}: ${label}.`);
    const here = cardFor(id);
    if (here) {
      if (clears) for (const form of here.querySelectorAll("form")) form.reset();
      if (here.contains(document.activeElement)) here.focus();
    }
  } catch (err) {
    say(`Escalation #${id}: ${err.message}`, true);
  }
  await refresh();
}

/** Sends the typed answer, else the chosen option, with the promote box and the verdict. */
function sendAnswer(form, id) {
  act(id, "answered", () => {
    const text = form.querySelector("textarea.answer-text").value.trim();
    const chosen = form.querySelector("input.option:checked");
    if (!text && !chosen) throw new Error("write an answer or pick an option");
    const body = text ? { text } : { option: Number(chosen.value) };
    body.promote = form.querySelector("input.promote").checked;
    const verdict = form.querySelector("select.verdict").value;
    if (verdict) body.verdict = verdict;
    return api("POST", `/v1/review/escalations/${id}/answer`, body);
  }, true);
}

/** Claims escalation `id` for the signed-in reviewer. */
function claim(id) {
  act(id, "claimed", () => api("POST", `/v1/review/escalations/${id}/claim`), false);
}

/** Rejects escalation `id` with the reason typed in `form`. */
function reject(form, id) {
  act(id, "rejected", () => {
    const why = form.querySelector("input.reject-why").value.trim();
    if (!why) throw new Error("a rejection needs a reason");
    return api("POST", `/v1/review/escalations/${id}/reject`, { why });
  }, true);
}

// ------------------------------------------------------------ keyboard ---
/** Whether keys typed at `target` are text (a radio button or a checkbox is not). */
function isTyping(target) {
  return target.matches("textarea, select, [contenteditable], input:not([type=radio]):not([type=checkbox])");
}

/** Focuses the card `step` after the one holding focus (the first or the last when none does). */
function moveFocus(here, step) {
  const cards = cardsOf();
  if (!cards.length) return;
  const at = cards.indexOf(here);
  const next = at < 0 ? (step > 0 ? 0 : cards.length - 1) : Math.min(Math.max(at + step, 0), cards.length - 1);
  cards[next].focus({ preventScroll: true });
  cards[next].scrollIntoView({ block: "start" });
}

/** The page's keys: j/k move between cards; on a card, a answers, c claims, 1–9 pick an option; in the answer, Ctrl+Enter sends and Esc goes back to the card. */
function onKey(ev) {
  const target = ev.target;
  if (target.matches("textarea.answer-text")) {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      target.form.requestSubmit();
    } else if (ev.key === "Escape") {
      target.closest("section.escalation").focus();
    }
    return;
  }
  if (ev.ctrlKey || ev.metaKey || ev.altKey || isTyping(target) || listPanel.hidden) return;
  const here = target.closest("section.escalation");
  if (ev.key === "j" || ev.key === "k") {
    ev.preventDefault();
    moveFocus(here, ev.key === "j" ? 1 : -1);
    return;
  }
  if (!here) return;
  const control = ev.key === "a" ? here.querySelector("textarea.answer-text")
    : ev.key === "c" ? here.querySelector("button.claim")
    : /^[1-9]$/.test(ev.key) ? here.querySelector(`input.option[value="${ev.key}"]`)
    : null;
  if (!control) return;
  ev.preventDefault();
  if (control.tagName === "BUTTON") control.click();
  else {
    if (control.type === "radio") control.checked = true;
    control.focus();
  }
}

// ---------------------------------------------------------------- gaps ---
const gapList = $("gap-list");

/** The gap report: unanswered questions grouped by meaning, most asked first. */
async function loadGaps() {
  const days = $("gap-days").value.trim();
  try {
    const r = await api("GET", "/v1/review/gaps" + (days ? `?days=${encodeURIComponent(days)}` : ""));
    if (!r.groups.length) {
      gapList.replaceChildren(el("p", { class: "empty", text: "No unanswered questions in this window." }));
      return;
    }
    const half = Math.round((new Date(r.until) - new Date(r.since)) / 86400000 / 2);
    gapList.replaceChildren(el("p", { class: "meta", text: `${r.questions} questions in ${r.total_groups} groups.` }),
      ...r.groups.map((g, i) => {
        const why = [[g.declined, "declined"], [g.escalated, "escalated"], [g.rated_down, "rated down"]]
          .filter(([n]) => n > 0).map(([n, w]) => `${n} ${w}`).join(", ");
        const trend = g.recent > g.earlier ? "rising" : g.recent < g.earlier ? "falling" : "steady";
        return el("section", { class: "gap" },
          el("h2", { text: `${i + 1}. ${g.label}` }),
          el("p", { class: "meta", text: `asked ${g.count} times (${why}); ${trend}: ${g.recent} in the last ${half} days, ${g.earlier} before; last ${when(g.last_asked)}` }),
          el("ul", {}, ...g.examples.map((q) => el("li", { text: q }))));
      }));
  } catch (err) {
    say(`Cannot load the gap report: ${err.message}`, true);
  }
}

// --------------------------------------------------------- calibration ---
const fitView = $("fit-view");
/** The SVG namespace, read from the page's own <svg> (so no address is written here). */
const SVG_NS = $("svg-kind").content.firstElementChild.namespaceURI;

/** An SVG element with attributes and, optionally, text. */
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The reliability diagram: confidence given against share right, one dot per tenth with its count. */
function diagram(bins) {
  const size = 320, pad = 40, span = size - 2 * pad;
  const x = (v) => pad + v * span, y = (v) => size - pad - v * span;
  const root = svg("svg", { width: size, height: size, viewBox: `0 0 ${size} ${size}`, role: "img",
    "aria-label": "reliability diagram: confidence given against share right" });
  root.append(svg("rect", { x: pad, y: pad, width: span, height: span, fill: "none", stroke: "#6b7580" }));
  root.append(svg("line", { x1: x(0), y1: y(0), x2: x(1), y2: y(1), stroke: "#6b7580", "stroke-dasharray": "4 3" }));
  root.append(svg("text", { x: size / 2, y: size - 8, "text-anchor": "middle", "font-size": 12 }, "confidence given"));
  root.append(svg("text", { x: 12, y: size / 2, "text-anchor": "middle", "font-size": 12, transform: `rotate(-90 12 ${size / 2})` }, "share right"));
  for (const v of [0, 0.5, 1]) {
    root.append(svg("text", { x: x(v), y: size - pad + 14, "text-anchor": "middle", "font-size": 11 }, String(v)));
    root.append(svg("text", { x: pad - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11 }, String(v)));
  }
  const path = bins.map((b, i) => `${i ? "L" : "M"}${x(b.predicted).toFixed(1)},${y(b.observed).toFixed(1)}`).join(" ");
  if (bins.length) root.append(svg("path", { d: path, fill: "none", stroke: "#0b57a4", "stroke-width": 2 }));
  for (const b of bins) {
    root.append(svg("circle", { cx: x(b.predicted), cy: y(b.observed), r: 4, fill: "#0b57a4", class: "bin" }));
    root.append(svg("text", { x: x(b.predicted) + 6, y: y(b.observed) - 6, "font-size": 11 }, String(b.count)));
  }
  return root;
}

/** The same bins as a table. */
function binTable(bins) {
  return el("table", {},
    el("thead", {}, el("tr", {}, ...["confidence", "labels", "mean given", "share right"].map((h) => el("th", { scope: "col", text: h })))),
    el("tbody", {}, ...bins.map((b) => el("tr", {},
      el("td", { text: `${b.lo.toFixed(1)}–${b.hi.toFixed(1)}` }), el("td", { text: String(b.count) }),
      el("td", { text: b.predicted.toFixed(2) }), el("td", { text: b.observed.toFixed(2) })))));
}

/** The calibration tab: the diagram, its table, and how GRACE learns from people's labels. */
async function loadFit() {
  try {
    const f = await api("GET", "/v1/review/calibration");
    const last = f.history.length ? f.history[f.history.length - 1] : null;
    const learning = f.mode === "off"
      ? `Learning is off (confidence.feedback_calibration); ${f.labels} labels kept.`
      : `${f.labels} label${f.labels === 1 ? "" : "s"} from people; the next refit at ${f.next_refit_at}.` +
        (last ? ` Last refit ${when(last.at)} on ${last.labels} labels: ${last.kept ? "kept" : "not kept"} (${last.why}).` : "");
    const shown = f.reliability.length
      ? [diagram(f.reliability), binTable(f.reliability)]
      : [el("p", { class: "empty", text: "No ratings or verdicts yet." })];
    fitView.replaceChildren(...shown, el("p", { class: "meta learning", text: learning }));
  } catch (err) {
    say(`Cannot load the calibration: ${err.message}`, true);
  }
}

// ---------------------------------------------------------------- tabs ---
const tabs = [["tab-list", listPanel, null], ["tab-gaps", $("gaps"), loadGaps], ["tab-fit", $("fit"), loadFit]];

/** Shows tab `id`'s panel (and loads it), the others hidden. */
function selectTab(id) {
  for (const [tab, panel, load] of tabs) {
    const selected = tab === id;
    $(tab).setAttribute("aria-selected", String(selected));
    $(tab).tabIndex = selected ? 0 : -1;
    panel.hidden = !selected;
    if (selected && load) load();
  }
}

/** Arrow keys, Home and End move between the tabs. */
function onTabKey(ev) {
  const ids = tabs.map(([tab]) => tab);
  const at = ids.indexOf(ev.target.id);
  const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: ids.length - 1 }[ev.key];
  if (to === undefined) return;
  ev.preventDefault();
  const id = ids[(to + ids.length) % ids.length];
  selectTab(id);
  $(id).focus();
}

for (const [tab] of tabs) {
  $(tab).addEventListener("click", () => selectTab(tab));
  $(tab).addEventListener("keydown", onTabKey);
}
$("gap-refresh").addEventListener("click", loadGaps);
$("sign-in").addEventListener("submit", signIn);
$("sign-out").addEventListener("click", signOut);
document.addEventListener("keydown", onKey);

identify();
setInterval(refresh, 2000);

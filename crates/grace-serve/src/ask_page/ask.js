// GRACE, the asker's page: a chat over the HTTP API.
//
// - A question streams from POST /v1/ask (server-sent events): the steps as
//   they run, then the outcome with its decision, confidence and citations.
// - Follow-ups continue a session (POST /v1/sessions); the page shows the
//   standalone question GRACE understood.
// - An escalation is followed with GET /v1/escalations/{id}?handle=&wait=
//   until a reviewer settles it; a clarifying question (needs_input) is
//   answered with POST /v1/runs/{id}/reply.
// - The conversation is kept in this tab's session storage, so a reload
//   shows the same state; the link #escalation=ID&handle=H reopens one
//   escalation anywhere.
// - An empty page offers example questions (GET /v1/examples); the
//   service-key field shows only once the server asks for a key (a 401).
// - The confidence factors' words are the server's (FACTOR_WORDS and
//   factorText, from /assets/factors.js, loaded before this script).
//
// Every text from the server is written with textContent: a question or a
// passage holding HTML is shown as text, never run.
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

// ------------------------------------------------------------- texts ---
const TEXTS = {
  en: {
    skip: "Skip to the question",
    tagline: "Answers from the knowledge base, and a person when GRACE is not sure.",
    new: "New conversation",
    language: "Language",
    key: "Service key",
    keyHelp: "This server asks for one (server.api_key). Kept in this tab only.",
    conversation: "Conversation",
    empty: "Ask a question about the knowledge base. GRACE shows how sure it is and why, and asks a person when it is not sure enough.",
    examples: "Try asking",
    question: "Your question",
    send: "Ask",
    questionHelp: "Enter sends; Shift+Enter adds a line.",
    close: "Close",
    you: "You asked",
    understood: "Understood as: {0}",
    decision: {
      answer: "Confident answer",
      caveat: "Answer with a caveat",
      escalate: "Not sure: a person is asked",
      decline: "Not in the knowledge base",
      needs_input: "GRACE needs more from you",
    },
    heading: {
      answer: "Answer",
      caveat: "Answer, with a caveat",
      escalate: "A person has been asked",
      decline: "Not answered",
      needs_input: "A question for you",
    },
    confidence: "Confidence {0}%",
    caveatNote: "GRACE is fairly, but not fully, sure. Check the passages it cites before you rely on this.",
    declined: "The knowledge base does not cover this question, so GRACE does not answer it.",
    askPerson: "Ask a person",
    rate: "Did this answer help?",
    rateUp: "Yes",
    rateDown: "No",
    rateWhy: "What was wrong with it?",
    reasons: { wrong: "Wrong", incomplete: "Incomplete", not_what_i_asked: "Not what I asked", outdated: "Outdated" },
    rated: { up: "Thank you: you said this answer helped.", down: "Thank you: you said this answer did not help." },
    checking: "A person will check this answer; their reply will show here.",
    askingPerson: "Asking a person…",
    escalated: "GRACE is not sure enough to answer this alone, so it has asked a person.",
    possiblyRelevant: "Possibly relevant while a person checks (not an answer):",
    typicalWait: "A person usually answers here within {0}.",
    noTypicalWait: "No question has been answered by a person here yet.",
    told: "You will see the answer here, and at the link below, when a person answers.",
    units: ["{0} s", "{0} min", "{0} h", "{0} days"],
    status: {
      pending: "Waiting for a reviewer. You can leave this page; the link below brings you back.",
      claimed: "A reviewer is working on it.",
      answered: "A reviewer answered.",
      rejected: "The reviewer could not answer this.",
      expired: "No reviewer answered in time.",
      cancelled: "The question was withdrawn.",
    },
    statusLabel: "Status",
    reviewerNote: "The reviewer's note: {0}",
    answeredFor: "Answered for a question like yours: “{0}”",
    unreviewed: "GRACE's own answer, not reviewed by a person:",
    comeBack: "Link to come back to this question",
    reviewerAnswer: "Answer from a reviewer",
    reviewerAnswerBy: "Answer from a reviewer ({0})",
    sources: "Sources",
    why: "Why this confidence?",
    raised: "What raised it",
    lowered: "What lowered it",
    missing: "What was missing",
    startsAt: "Every answer starts at {0}; from there:",
    total: "Together {0}: confidence {1}%",
    combined: "The run's confidence, {0}%, is not this step's alone: it weighs every step, and is 0 when a step failed.",
    noFactors: "No measurements were recorded for this answer.",
    effect: "effect {0}",
    clarify: "GRACE needs to know more",
    otherReply: "Or write your own reply",
    sendReply: "Send reply",
    skipReply: "Skip: let GRACE assume",
    replied: "You replied: {0}",
    skipped: "You let GRACE go on without a reply.",
    page: "p. {0}",
    passageMissing: "The passage could not be found in the knowledge base any more.",
    stepStarted: {
      rag_search: "Searching the knowledge base…",
      reasoning: "Reading the passages and writing the answer…",
      other: "Running {0}…",
    },
    stepFinished: {
      rag_search: "Searched the knowledge base",
      reasoning: "Answer written",
      other: "Ran {0}",
    },
    stepFailed: "{0} failed: {1}",
    recovering: "Not sure yet: searching more widely…",
    thinking: "Thinking: {0}",
    searchingFor: "Searching for “{0}”…",
    calling: "Using {0}…",
    writing: "Writing the answer…",
    escalating: "Asking a person…",
    failed: "Something went wrong",
    keyRejected: "The service key was not accepted. Enter this server's key (server.api_key) above and ask again.",
    keyNeeded: "This server needs a service key. Enter it above and ask again.",
    busy: "The server is busy; try again in a moment.",
    sessionExpired: "The earlier conversation expired; this question starts a new one.",
    notFound: "This escalation is not known here, or the link's handle is wrong.",
    answerReady: "GRACE replied: {0}.",
    personAnswered: "A reviewer answered your question.",
    offline: "Cannot reach the server; retrying…",
    newStarted: "A new conversation started.",
    copy: "Copy",
    copied: "Copied",
    copyLabel: "Copy the answer",
    copiedNotice: "The answer is on the clipboard.",
    copyFailed: "The answer could not be copied: select its text and copy it.",
  },
  ja: {
    skip: "質問欄へ移動",
    tagline: "ナレッジベースから回答し、確信がないときは担当者に確認します。",
    new: "新しい会話",
    language: "言語",
    key: "サービスキー",
    keyHelp: "このサーバーでは必要です（server.api_key）。このタブにだけ保存されます。",
    conversation: "会話",
    empty: "ナレッジベースについて質問してください。GRACE はどのくらい確かか、その理由を示し、確信が足りないときは担当者に確認します。",
    examples: "質問の例",
    question: "質問",
    send: "質問する",
    questionHelp: "Enter で送信、Shift+Enter で改行します。",
    close: "閉じる",
    you: "あなたの質問",
    understood: "次のように解釈しました：{0}",
    decision: {
      answer: "確かな回答",
      caveat: "注意付きの回答",
      escalate: "確信なし：担当者に確認中",
      decline: "ナレッジベースにありません",
      needs_input: "追加の情報が必要です",
    },
    heading: {
      answer: "回答",
      caveat: "回答（注意付き）",
      escalate: "担当者に確認を依頼しました",
      decline: "回答できません",
      needs_input: "確認したいことがあります",
    },
    confidence: "確信度 {0}%",
    caveatNote: "GRACE はある程度確かですが、完全ではありません。使う前に引用元を確認してください。",
    declined: "この質問はナレッジベースの範囲外のため、GRACE は回答しません。",
    askPerson: "担当者に聞く",
    rate: "この回答は役に立ちましたか？",
    rateUp: "はい",
    rateDown: "いいえ",
    rateWhy: "どこが問題でしたか？",
    reasons: { wrong: "誤り", incomplete: "不十分", not_what_i_asked: "質問と違う", outdated: "古い" },
    rated: { up: "ありがとうございます。役に立ったと記録しました。", down: "ありがとうございます。役に立たなかったと記録しました。" },
    checking: "担当者がこの回答を確認します。返答はここに表示されます。",
    askingPerson: "担当者に確認しています…",
    escalated: "GRACE だけでは確信が足りないため、担当者に確認を依頼しました。",
    possiblyRelevant: "担当者の確認を待つ間の参考（回答ではありません）:",
    typicalWait: "ここでは通常 {0} 以内に担当者が回答しています。",
    noTypicalWait: "ここではまだ担当者が回答した質問がありません。",
    told: "担当者が回答すると、ここと下のリンクに表示されます。",
    units: ["{0} 秒", "{0} 分", "{0} 時間", "{0} 日"],
    status: {
      pending: "担当者の回答を待っています。このページを離れても、下のリンクから戻れます。",
      claimed: "担当者が対応中です。",
      answered: "担当者が回答しました。",
      rejected: "担当者はこの質問に回答できませんでした。",
      expired: "期限内に担当者の回答がありませんでした。",
      cancelled: "質問は取り下げられました。",
    },
    statusLabel: "状況",
    reviewerNote: "担当者のメモ：{0}",
    answeredFor: "同じ趣旨の質問への回答です：「{0}」",
    unreviewed: "担当者の確認を受けていない GRACE の回答：",
    comeBack: "この質問に戻るためのリンク",
    reviewerAnswer: "担当者の回答",
    reviewerAnswerBy: "担当者の回答（{0}）",
    sources: "出典",
    why: "この確信度の理由",
    raised: "上げた要因",
    lowered: "下げた要因",
    missing: "足りなかったもの",
    startsAt: "どの回答も {0} から始まり、そこから:",
    total: "合計 {0}: 確信度 {1}%",
    combined: "全体の確信度 {0}% はこのステップだけのものではありません。各ステップを重み付けし、失敗したステップがあれば 0 です。",
    noFactors: "この回答には測定値が記録されていません。",
    effect: "影響 {0}",
    clarify: "GRACE から確認したいことがあります",
    otherReply: "または自由に返答する",
    sendReply: "返答を送る",
    skipReply: "省略して GRACE に任せる",
    replied: "あなたの返答：{0}",
    skipped: "返答せずに GRACE に続けてもらいました。",
    page: "{0} ページ",
    passageMissing: "この箇所はナレッジベースに見つかりませんでした。",
    stepStarted: {
      rag_search: "ナレッジベースを検索しています…",
      reasoning: "文書を読み、回答を書いています…",
      other: "{0} を実行しています…",
    },
    stepFinished: {
      rag_search: "ナレッジベースを検索しました",
      reasoning: "回答を書きました",
      other: "{0} を実行しました",
    },
    stepFailed: "{0} に失敗しました：{1}",
    recovering: "まだ確信がないため、範囲を広げて検索しています…",
    thinking: "考えています：{0}",
    searchingFor: "「{0}」を検索しています…",
    calling: "{0} を使っています…",
    writing: "回答を書いています…",
    escalating: "担当者に確認しています…",
    failed: "問題が発生しました",
    keyRejected: "サービスキーが受け付けられませんでした。上の欄にこのサーバーのキー（server.api_key）を入力して、もう一度質問してください。",
    keyNeeded: "このサーバーにはサービスキーが必要です。上の欄に入力して、もう一度質問してください。",
    busy: "サーバーが混み合っています。少し待ってからもう一度お試しください。",
    sessionExpired: "前の会話は期限切れです。この質問から新しい会話を始めます。",
    notFound: "このエスカレーションは見つからないか、リンクのハンドルが正しくありません。",
    answerReady: "GRACE の返答：{0}。",
    personAnswered: "担当者があなたの質問に回答しました。",
    offline: "サーバーに接続できません。再試行しています…",
    newStarted: "新しい会話を始めました。",
    copy: "コピー",
    copied: "コピーしました",
    copyLabel: "回答をコピー",
    copiedNotice: "回答をクリップボードにコピーしました。",
    copyFailed: "回答をコピーできませんでした。テキストを選択してコピーしてください。",
  },
};

const params = new URLSearchParams(location.search);
let lang = pickLanguage();

function pickLanguage() {
  const asked = params.get("lang") || localStorage.getItem("grace-lang");
  if (asked && TEXTS[asked]) return asked;
  for (const l of navigator.languages || [navigator.language || "en"]) {
    const base = String(l).toLowerCase().split("-")[0];
    if (TEXTS[base]) return base;
  }
  return "en";
}

/** The text `key` (dotted) in the page's language, `{0}`… filled in. */
function t(key, ...args) {
  const find = (texts) => key.split(".").reduce((o, k) => (o == null ? o : o[k]), texts);
  let s = find(TEXTS[lang]);
  if (s == null) s = find(TEXTS.en);
  if (s == null) return key;
  return String(s).replace(/\{(\d)\}/g, (_, i) => String(args[Number(i)] ?? ""));
}

// -------------------------------------------------------------- state ---
// The conversation, kept in this tab: survives a reload, not the tab.
/** Where the conversation is kept: one per knowledge base the page serves. */
const STORE = KB ? `grace-ask:${KB}` : "grace-ask";
/** The most turns kept (older ones leave the page and the storage). */
const MAX_ENTRIES = 30;
let state = load();
/** Bumped by "New conversation": loops of the old one stop. */
let generation = 0;

function load() {
  try {
    const s = JSON.parse(sessionStorage.getItem(STORE) || "null");
    if (s && Array.isArray(s.entries)) return s;
  } catch (_) { /* a damaged store starts afresh */ }
  return { sessionId: null, entries: [] };
}

function save() {
  state.entries = state.entries.slice(-MAX_ENTRIES);
  for (;;) {
    try {
      sessionStorage.setItem(STORE, JSON.stringify(state));
      return;
    } catch (_) {
      // Over the browser's quota: drop the oldest turn and try again.
      if (state.entries.length <= 1) return;
      state.entries.shift();
    }
  }
}

// ---------------------------------------------------------------- dom ---
const $ = (id) => document.getElementById(id);
const conversationEl = $("conversation");
const questionEl = $("question");
const keyEl = $("key");
const keyFieldEl = $("key-field");
const noticeEl = $("notice");
const sendEl = $("send");

function say(text, isError) {
  noticeEl.textContent = text;
  noticeEl.className = isError ? "error" : "";
}

// ---------------------------------------------------------------- api ---
class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra) {
  const h = Object.assign({ "Content-Type": "application/json" }, extra || {});
  const key = keyEl.value.trim();
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

async function failure(res) {
  const data = await res.json().catch(() => ({}));
  return new ApiError(res.status, (data.error && data.error.message) || res.statusText || String(res.status));
}


async function api(method, path, body) {
  const res = await fetch(onKb(path), { method, headers: headers(), body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) throw await failure(res);
  if (res.status === 204) return null;
  return res.json();
}

/** POSTs `body` to `path` as a stream; calls `onEvent(name, data)` per event. */
async function stream(path, body, onEvent) {
  const res = await fetch(onKb(path), {
    method: "POST",
    headers: headers({ Accept: "text/event-stream" }),
    body: JSON.stringify(Object.assign({}, body, { stream: true })),
  });
  if (!res.ok) throw await failure(res);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const dispatch = (block) => {
    let name = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) return; // a keep-alive comment
    let value;
    try { value = JSON.parse(data.join("\n")); } catch (_) { value = { error: data.join("\n") }; }
    onEvent(name, value);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      dispatch(block);
    }
  }
  if (buffer.trim()) dispatch(buffer);
}

/** Shows a refused key on the page and moves focus to the key field (shown
 * from now on: the server has asked for a key). */
function keyProblem(err) {
  if (!(err instanceof ApiError) || err.status !== 401) return false;
  revealKey();
  keyEl.setAttribute("aria-invalid", "true");
  say(keyEl.value.trim() ? t("keyRejected") : t("keyNeeded"), true);
  keyEl.focus();
  return true;
}

/** Says on the page why a request failed. */
function problem(err) {
  if (keyProblem(err)) return;
  const status = err instanceof ApiError ? err.status : 0;
  // A 400 is the server refusing what was sent (a question too long, or
  // without words): its own message says what to change.
  if (status === 400) say(err.message, true);
  else if (status === 429) say(t("busy"), true);
  else say(`${t("failed")}: ${err.message}`, true);
}

// ------------------------------------------------------------ rendering ---
function whyOf(outcome) {
  const score = lastScore(outcome.steps);
  const details = el("details", { class: "why" }, el("summary", { text: t("why") }));
  if (!score) {
    details.append(el("p", { text: t("noFactors") }));
    return details;
  }
  // Where every answer starts, then every factor, largest first: what is
  // listed adds up to the total shown. A declined question leads with what
  // was missing.
  const logistic = score.model !== "grace_v1";
  if (logistic && Number.isFinite(score.bias)) details.append(el("p", { class: "help baseline", text: t("startsAt", signed(score.bias)) }));
  const terms = effects(score);
  const up = [true, "raised", t("raised")];
  const down = [false, "lowered", t(outcome.decision === "decline" ? "missing" : "lowered")];
  for (const [raised, cls, title] of outcome.decision === "decline" ? [down, up] : [up, down]) {
    const mine = terms.filter((c) => (c.term > 0) === raised);
    if (!mine.length) continue;
    const ul = el("ul", { "aria-label": title });
    for (const c of mine) {
      const effect = signed(c.term);
      ul.append(el("li", { class: cls, "data-factor": c.factor }, factorText(lang, c, raised), " ",
        el("span", { class: "help", text: `(${t("effect", effect)})` })));
    }
    details.append(el("p", { class: "help", text: title }), ul);
  }
  if (logistic && Number.isFinite(score.logit)) {
    details.append(el("p", { class: "help total", text: t("total", signed(score.logit), Math.round(score.score * 100)) }));
    const run = Math.round((outcome.confidence || 0) * 100);
    if (run !== Math.round(score.score * 100)) details.append(el("p", { class: "help", text: t("combined", run) }));
  }
  return details;
}

function confidenceOf(outcome) {
  const percent = Math.round((outcome.confidence || 0) * 100);
  const decision = outcome.decision;
  const bar = el("span", { class: "bar", role: "img", "aria-label": t("confidence", percent) }, el("span"));
  bar.firstChild.style.width = `${percent}%`;
  return el("div", { class: "confidence", "data-decision": decision },
    el("span", { class: `badge ${decision}`, text: t(`decision.${decision}`) }),
    bar,
    el("span", { class: "percent", text: t("confidence", percent) }));
}

/**
 * The answer's Markdown as elements (`markdown.js`), its `[n]` markers
 * links to citation n.
 */
function answerText(text, citations, outcome) {
  return markdownInto(el("div", { class: "text" }), text, (n) => {
    const c = citations.find((x) => x.number === n);
    return c ? citationLink(`[${c.number}]`, c, outcome) : null;
  });
}

/** An answer as shown on a card: its text, its sources and "Copy". */
function answerParts(answer, outcome) {
  const citations = answer.citations || [];
  return [answerText(answer.text, citations, outcome), citationsOf(citations, outcome), copyButton(answer.text)]
    .filter(Boolean);
}

// ------------------------------------------------------------- copying ---
/** How long "Copy" reads "Copied" after a copy (milliseconds). */
const COPIED_FOR_MS = 2000;

/** "Copy": puts the answer's text on the clipboard and, once it is there,
 * reads "Copied" for a moment (the notice says so to screen readers). */
function copyButton(text) {
  const button = el("button", { type: "button", class: "copy", "aria-label": t("copyLabel"), text: t("copy") });
  button.addEventListener("click", async () => {
    if (!(await copyText(withoutMarkers(text), button))) {
      say(t("copyFailed"), true);
      return;
    }
    button.textContent = t("copied");
    say(t("copiedNotice"));
    setTimeout(() => { button.textContent = t("copy"); }, COPIED_FOR_MS);
  });
  return el("div", { class: "actions copy-actions" }, button);
}

/** The answer's Markdown without its `[n]` citation markers; code, in
 * backticks or fenced, is kept as written. */
function withoutMarkers(text) {
  return String(text)
    .split(/(```[\s\S]*?```|`[^`\n]+`)/)
    .map((part, i) => (i % 2 ? part : part.replace(/ ?\[\d{1,3}\]/g, "")))
    .join("");
}

/** Puts `text` on the clipboard; true when it got there. The Clipboard API
 * needs a secure page (https, or this computer), else the older way. */
async function copyText(text, button) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (_) { /* refused (no permission, say): the older way may work */ }
  }
  return copyWithTextarea(text, button);
}

/** The older way: `text` in a hidden textarea, selected and copied; focus
 * goes back to `button`. */
function copyWithTextarea(text, button) {
  const area = el("textarea", { class: "copy-buffer", readonly: true, tabindex: -1 });
  area.value = text;
  document.body.append(area);
  area.focus({ preventScroll: true });
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch (_) { /* not allowed here: said as not copied */ }
  area.remove();
  button.focus();
  return copied;
}

function where(c) {
  const bits = [];
  if (c.page) bits.push(t("page", c.page));
  if (c.section) bits.push(`§ ${c.section}`);
  return bits.join(" · ");
}

function citationLink(label, c, outcome) {
  return el("a", {
    href: "#passage",
    class: "cite",
    "data-number": c.number,
    onclick: (e) => { e.preventDefault(); openPassage(c, outcome, e.currentTarget); },
  }, label);
}

function citationsOf(citations, outcome) {
  if (!citations.length) return null;
  const ol = el("ol", { class: "citations", "aria-label": t("sources") });
  for (const c of citations) {
    const label = [c.source || "?", where(c)].filter(Boolean).join(" · ");
    ol.append(el("li", { value: c.number }, citationLink(label, c, outcome)));
  }
  return ol;
}

/** A cited passage's text: from the run's own search, else searched for. */
async function passageFor(c, outcome) {
  const same = (p) => p.source === c.source && (!c.section || p.section === c.section) && (!c.page || !p.page || p.page === c.page);
  for (const s of outcome.steps || []) {
    const out = s.result && s.result.output;
    if (out && out.type === "passages") {
      const hit = out.data.find(same);
      if (hit) return hit;
    }
  }
  if (!c.source) return null;
  const query = (outcome.rewrite && outcome.rewrite.question) || outcome.question || c.section || c.source;
  const found = await api("POST", "/v1/search", { query, source: c.source, limit: 50 });
  return found.passages.find(same) || found.passages[0] || null;
}

async function openPassage(c, outcome, opener) {
  const dialog = $("passage");
  $("passage-title").textContent = c.source || "";
  $("passage-where").textContent = where(c);
  $("passage-text").textContent = "…";
  dialog.dataset.number = c.number;
  dialog.showModal();
  $("passage-close").focus();
  dialog.addEventListener("close", () => opener && opener.focus(), { once: true });
  try {
    const p = await passageFor(c, outcome);
    $("passage-text").textContent = p ? p.text : t("passageMissing");
  } catch (err) {
    $("passage-text").textContent = err.message;
    keyProblem(err);
  }
}

/** The reply card of a run; `past` is the turn's history item when the
 * asker has acted on it already (a reply sent, a person asked). */
function replyOf(entry, outcome, past) {
  const decision = outcome.decision;
  const answer = outcome.answer && !outcome.answer.abstained ? outcome.answer : null;
  const card = el("section", { class: `reply ${decision.replace("_", "-")}`, "data-decision": decision });
  card.append(el("h3", { text: t(`heading.${decision}`) }));
  if (decision === "answer" || decision === "caveat") {
    if (decision === "caveat") card.append(el("p", { class: "caveat-note", text: t("caveatNote") }));
    if (answer) card.append(...answerParts(answer, outcome));
    if (outcome.answer_id && !past) card.append(ratingOf(entry, outcome));
    if (entry.escalation) card.append(escalationOf(entry));
  } else if (decision === "decline") {
    card.append(el("p", { class: "text", text: t("declined") }));
    if (!past) {
      card.append(el("div", { class: "actions" }, el("button", {
        type: "button", class: "ask-person", text: t("askPerson"),
        onclick: () => askPerson(entry),
      })));
    }
  } else if (decision === "escalate") {
    card.append(el("p", { class: "text", text: t("escalated") }));
    const waiting = whileWaitingOf(outcome);
    if (waiting) card.append(waiting);
    card.append(escalationOf(entry));
  } else if (decision === "needs_input") {
    card.append(clarificationOf(entry, outcome, past));
  }
  card.append(confidenceOf(outcome), whyOf(outcome));
  return card;
}

/** Under an answer: "Did this answer help?", Yes / No, and with No, the
 * reasons (POST /v1/answers/{id}/feedback as the conversation's asker; a
 * second choice replaces the first). */
function ratingOf(entry, outcome) {
  const box = el("div", { class: "rating", "data-answer": outcome.answer_id });
  if (entry.rating) {
    box.append(el("p", { class: "rated", role: "status", text: t(`rated.${entry.rating.vote}`) }));
  }
  const send = async (vote, reason) => {
    try {
      const body = { vote, session_id: state.sessionId };
      if (reason) body.reason = reason;
      const stored = await api("POST", `/v1/answers/${encodeURIComponent(outcome.answer_id)}/feedback`, body);
      entry.rating = { vote, reason: reason || null };
      // A "wrong" answer is put to a person (feedback.escalate_on_wrong):
      // followed here like any escalation.
      if (stored.escalation) {
        entry.escalation = { id: stored.escalation.review_id, handle: stored.escalation.review_handle, view: null };
      }
      save();
      update(entry);
      say(t(stored.escalation ? "checking" : `rated.${vote}`));
      if (stored.escalation) follow(entry);
    } catch (err) {
      problem(err);
    }
  };
  const voted = (v) => entry.rating && entry.rating.vote === v ? "true" : "false";
  box.append(el("div", { class: "actions", role: "group", "aria-label": t("rate") },
    el("span", { class: "rate-question", text: t("rate") }),
    el("button", { type: "button", class: "rate-up", "aria-pressed": voted("up"), text: t("rateUp"), onclick: () => send("up") }),
    el("button", { type: "button", class: "rate-down", "aria-pressed": voted("down"), text: t("rateDown"),
      onclick: () => send("down") })));
  if (entry.rating && entry.rating.vote === "down") {
    const reasons = el("div", { class: "actions reasons", role: "group", "aria-label": t("rateWhy") },
      el("span", { text: t("rateWhy") }));
    for (const r of ["wrong", "incomplete", "not_what_i_asked", "outdated"]) {
      const chosen = entry.rating && entry.rating.reason === r ? "true" : "false";
      reasons.append(el("button", { type: "button", class: `reason reason-${r}`, "aria-pressed": chosen,
        text: t(`reasons.${r}`), onclick: () => send("down", r) }));
    }
    box.append(reasons);
  }
  return box;
}

/** While a person checks: the passages GRACE found, as possibly relevant
 * (never as an answer), how long people usually take here, and that the
 * answer will come here. */
function whileWaitingOf(outcome) {
  const w = outcome.while_waiting;
  if (!w) return null;
  const box = el("div", { class: "while-waiting" });
  if ((w.possibly_relevant || []).length) {
    box.append(el("p", { class: "help", text: t("possiblyRelevant") }));
    const ul = el("ul", { class: "possibly-relevant" });
    for (const p of w.possibly_relevant) {
      const label = [p.source || "?", where(p)].filter(Boolean).join(" · ");
      // Cut on characters, at a word's end: never "a failed producti".
      const chars = [...p.text];
      const text = chars.length > 240 ? `${chars.slice(0, 240).join("").replace(/\s+\S*$/, "")} …` : p.text;
      ul.append(el("li", {}, el("b", { text: label }), el("br"), el("span", { text })));
    }
    box.append(ul);
  }
  const s = w.typical_review_seconds;
  if (s == null) {
    box.append(el("p", { class: "help typical-wait", text: t("noTypicalWait") }));
  } else {
    const [i, n] = s < 90 ? [0, Math.max(1, s)] : s < 5400 ? [1, s / 60] : s < 129600 ? [2, s / 3600] : [3, s / 86400];
    box.append(el("p", { class: "help typical-wait", text: t("typicalWait", t(`units.${i}`, Math.round(n))) }));
  }
  box.append(el("p", { class: "help", text: t("told") }));
  return box;
}

/** The live status of an escalation, and the reviewer's answer once given. */
function escalationOf(entry) {
  const e = entry.escalation;
  const box = el("div", { class: "escalation", "data-id": e ? e.id : "" });
  if (!e) return box;
  const status = (e.view && e.view.status) || "pending";
  box.append(el("p", { class: "status-line", role: "status", "data-status": status },
    `${t("statusLabel")}: `, t(`status.${status}`)));
  const link = `${location.pathname}${location.search}#escalation=${encodeURIComponent(e.id)}&handle=${encodeURIComponent(e.handle)}`;
  if (status === "pending" || status === "claimed") {
    box.append(el("p", { class: "handle" }, el("a", { href: link, class: "come-back", text: t("comeBack") })));
  }
  const r = e.view && e.view.resolution;
  if (r && r.note) box.append(el("p", { class: "help", text: t("reviewerNote", r.note) }));
  return box;
}

/** A reviewer's answer (or GRACE's unreviewed one after a timeout). */
function settledOf(entry) {
  const e = entry.escalation;
  const r = e && e.view && e.view.resolution;
  const answer = r && r.report && r.report.answer;
  if (!answer || !(r.outcome === "answered" || r.outcome === "proceeded_unreviewed")) return null;
  const byReviewer = r.outcome === "answered";
  const who = String(r.decided_by || "").replace(/^reviewer:/, "");
  const card = el("section", { class: byReviewer ? "reply reviewer" : "reply caveat", "data-decision": byReviewer ? "reviewer" : "unreviewed" });
  card.append(el("h3", { text: byReviewer ? (who ? t("reviewerAnswerBy", who) : t("reviewerAnswer")) : t("unreviewed") }));
  if (r.for_question) card.append(el("p", { class: "help for-question", text: t("answeredFor", r.for_question) }));
  card.append(...answerParts(answer, r.report));
  return card;
}

function clarificationOf(entry, outcome, past) {
  const c = outcome.clarification || { question: "", options: [] };
  const box = el("div", { class: "clarification" });
  box.append(el("p", { class: "text clarify-question", text: c.question }));
  if (c.reason) box.append(el("p", { class: "help", text: c.reason }));
  if (past) {
    box.append(el("p", { class: "help replied", text: past.reply === null ? t("skipped") : t("replied", past.reply) }));
    return box;
  }
  const actions = el("div", { class: "actions", role: "group", "aria-label": t("clarify") });
  for (const option of c.options || []) {
    actions.append(el("button", { type: "button", class: "option", text: option, onclick: () => reply(entry, option) }));
  }
  actions.append(el("button", { type: "button", class: "skip-reply", text: t("skipReply"), onclick: () => reply(entry, null) }));
  const own = el("input", { type: "text", class: "own-reply", maxlength: 4000, "aria-label": t("otherReply"), placeholder: t("otherReply") });
  own.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.isComposing && own.value.trim()) { e.preventDefault(); reply(entry, own.value.trim()); }
  });
  const send = el("button", { type: "button", class: "send-reply", text: t("sendReply"), onclick: () => own.value.trim() && reply(entry, own.value.trim()) });
  box.append(actions, el("div", { class: "actions" }, own, send));
  return box;
}

/** A plan step's line: the tool's own words when it has some, else its name. */
function actionText(kind, action) {
  return TEXTS.en[kind][action] ? t(`${kind}.${action}`) : t(`${kind}.other`, action);
}

/** One streamed event as a line in the turn's step list. */
function stepLine(name, data) {
  switch (name) {
    case "step_started":
      return { key: `step:${data.id}`, text: actionText("stepStarted", data.action) };
    case "step_finished":
      if (!data.success) return { key: `step:${data.id}`, text: t("stepFailed", data.action, data.error || ""), cls: "failed" };
      return { key: `step:${data.id}`, text: actionText("stepFinished", data.action), cls: "done" };
    case "recovering": return { text: t("recovering") };
    case "think": return { text: t("thinking", data.text || "") };
    case "tool_call": {
      const query = data.arguments && data.arguments.query;
      return { key: `call:${data.id}`, text: data.name === "rag_search" && query ? t("searchingFor", query) : t("calling", data.name) };
    }
    case "observation": return { key: `call:${data.id}`, text: data.summary || data.name, cls: data.success ? "done" : "failed" };
    case "answer": return { text: t("writing") };
    case "escalated": return { text: t("escalating") };
    default: return null;
  }
}

function turnView(entry) {
  const li = el("li", { class: "turn", "data-entry": entry.id });
  li.append(el("p", { class: "asked" }, el("span", { class: "visually-hidden", text: `${t("you")}: ` }),
    el("span", { class: "question-text", text: entry.question })));
  const outcome = entry.outcome;
  const rewrite = outcome && outcome.rewrite && outcome.rewrite.question;
  if (rewrite && rewrite !== entry.question) li.append(el("p", { class: "understood", text: t("understood", rewrite) }));
  const steps = el("ol", { class: "steps" });
  for (const s of entry.steps || []) steps.append(el("li", { class: s.cls || "", text: s.text }));
  li.append(steps);
  for (const past of entry.history || []) li.append(replyOf(entry, past.outcome, past));
  if (outcome) li.append(replyOf(entry, outcome, null));
  else if (entry.linked && entry.escalation) {
    // Opened from a link: the escalation alone, without the run.
    li.append(el("section", { class: "reply escalate", "data-decision": "escalate" },
      el("h3", { text: t("heading.escalate") }), escalationOf(entry)));
  }
  if (entry.error) li.append(el("section", { class: "reply failed" }, el("h3", { text: t("failed") }), el("p", { class: "text", text: entry.error })));
  const settled = settledOf(entry);
  if (settled) li.append(settled);
  return li;
}

function render() {
  conversationEl.replaceChildren(...state.entries.map(turnView));
  showEmpty();
}

/** Re-renders one turn in place. */
function update(entry) {
  const old = conversationEl.querySelector(`li[data-entry="${entry.id}"]`);
  const fresh = turnView(entry);
  if (old) old.replaceWith(fresh); else conversationEl.append(fresh);
  showEmpty();
  return fresh;
}

/** The empty page's text and example questions, shown only while the
 * conversation has no turn. */
function showEmpty() {
  const empty = state.entries.length === 0;
  $("empty").hidden = !empty;
  $("examples-box").hidden = !empty || examples.length === 0;
}

// ------------------------------------------------------------- examples ---
/** Up to five questions the knowledge base answers (GET /v1/examples), in
 * its language; none until the server gives some. */
let examples = [];

/** Fetches the example questions once the server gives them; a failure
 * shows none (a 401 shows the key field). */
async function loadExamples() {
  if (examples.length) return;
  try {
    const found = await api("GET", "/v1/examples");
    examples = found && Array.isArray(found.questions) ? found.questions : [];
  } catch (err) {
    keyProblem(err);
    return;
  }
  $("examples").replaceChildren(...examples.map((q) =>
    el("li", {}, el("button", { type: "button", class: "example", text: q, onclick: () => askExample(q) }))));
  showEmpty();
}

/** Asks an example question as if it were typed and sent. */
function askExample(question) {
  questionEl.value = question;
  questionEl.focus();
  $("ask-form").requestSubmit();
}

// -------------------------------------------------------------- asking ---
/** Who asks, as reviewers see it. */
const ASKER = "web page";
let busy = false;

async function ensureSession() {
  if (state.sessionId) return state.sessionId;
  const s = await api("POST", "/v1/sessions");
  state.sessionId = s.id;
  save();
  return s.id;
}

/** Runs `path` with `body` as a stream into `entry`, then follows it. */
async function runInto(entry, path, body) {
  const mine = generation;
  const onEvent = (name, data) => {
    if (mine !== generation) return;
    if (name === "done") {
      entry.outcome = data.outcome;
      if (data.outcome.review_id != null && data.outcome.review_handle) {
        entry.escalation = { id: data.outcome.review_id, handle: data.outcome.review_handle, view: null };
      }
    } else if (name === "failed") {
      entry.error = data.error || t("failed");
    } else {
      const line = stepLine(name, data);
      if (!line) return;
      entry.steps = entry.steps || [];
      const at = line.key ? entry.steps.findIndex((s) => s.key === line.key) : -1;
      if (at >= 0) entry.steps[at] = line; else entry.steps.push(line);
    }
    update(entry);
  };
  await stream(path, body, onEvent);
  if (mine !== generation) return;
  save();
  const fresh = update(entry);
  if (entry.outcome) {
    say(t("answerReady", t(`decision.${entry.outcome.decision}`)));
    if (entry.outcome.decision === "needs_input") {
      const first = fresh.querySelector("button.option, input.own-reply");
      if (first) first.focus();
    }
  }
  if (entry.escalation) follow(entry);
}

async function ask(question) {
  if (busy) return;
  busy = true;
  sendEl.disabled = true;
  say("");
  let entry = null;
  try {
    let sessionId = await ensureSession();
    entry = { id: Date.now() + Math.random(), question, steps: [] };
    state.entries.push(entry);
    questionEl.value = "";
    update(entry).scrollIntoView({ block: "nearest" });
    try {
      await runInto(entry, "/v1/ask", { question, session_id: sessionId, asker: ASKER });
    } catch (err) {
      // An expired conversation: this question starts a new one.
      if (!(err instanceof ApiError && err.status === 404)) throw err;
      state.sessionId = null;
      sessionId = await ensureSession();
      say(t("sessionExpired"));
      await runInto(entry, "/v1/ask", { question, session_id: sessionId, asker: ASKER });
    }
  } catch (err) {
    if (entry && !entry.outcome) {
      // Nothing was answered: the question goes back in the box.
      state.entries = state.entries.filter((e) => e !== entry);
      render();
      if (!questionEl.value) questionEl.value = question;
    }
    problem(err);
  } finally {
    save();
    busy = false;
    sendEl.disabled = false;
    if (document.activeElement === document.body) questionEl.focus();
  }
}

/** Runs a turn on from its outcome: the outcome moves to the turn's
 * history (`past` says what the asker did with it) and `run` streams the
 * next one in; if that fails, the turn is as it was. */
async function continueTurn(entry, past, run) {
  if (busy) return;
  busy = true;
  entry.history = (entry.history || []).concat([Object.assign({ outcome: entry.outcome }, past)]);
  entry.outcome = null;
  update(entry);
  try {
    await run();
  } catch (err) {
    entry.outcome = entry.history.pop().outcome;
    update(entry);
    problem(err);
  } finally {
    busy = false;
    save();
  }
}

/** Puts a declined question to a person (`escalate: true`). */
function askPerson(entry) {
  return continueTurn(entry, {}, async () => {
    entry.steps = [{ text: t("askingPerson") }];
    update(entry);
    await runInto(entry, "/v1/ask", { question: entry.question, session_id: await ensureSession(), escalate: true, asker: ASKER });
  });
}

/** Sends the asker's reply to a clarifying question (`null`: skip). */
async function reply(entry, text) {
  const runId = entry.outcome && entry.outcome.run_id;
  if (!runId) return;
  await continueTurn(entry, { reply: text },
    () => runInto(entry, `/v1/runs/${encodeURIComponent(runId)}/reply`, { reply: text }));
  questionEl.focus();
}

// ---------------------------------------------------------- escalations ---
const SETTLED = ["answered", "rejected", "expired", "cancelled"];
/** Seconds each long poll waits: a claim shows within this. */
const WAIT_SECONDS = 5;

/** The escalations this page is following now (not kept: a reload starts
 * following again). */
const following = new Set();

/** Follows `entry`'s escalation until it is settled (or the page moves on). */
async function follow(entry) {
  const e = entry.escalation;
  if (!e || following.has(e.id)) return;
  following.add(e.id);
  const mine = generation;
  let wait = 0;
  while (mine === generation) {
    try {
      const path = `/v1/escalations/${encodeURIComponent(e.id)}?handle=${encodeURIComponent(e.handle)}&wait=${wait}`;
      const view = await api("GET", path);
      if (mine !== generation) break;
      const changed = !e.view || e.view.status !== view.status;
      e.view = view;
      if (!entry.question) entry.question = view.question;
      if (changed) {
        save();
        update(entry);
        if (view.status === "answered") say(t("personAnswered"));
      }
      if (SETTLED.includes(view.status)) break;
      wait = WAIT_SECONDS;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        entry.error = t("notFound");
        update(entry);
        break;
      }
      if (keyProblem(err)) break;
      say(t("offline"), true);
      await new Promise((r) => setTimeout(r, 3000));
    }
  }
  following.delete(e.id);
  save();
}

/** `#escalation=ID&handle=H`: shows that escalation and follows it. */
function openLinkedEscalation() {
  const h = new URLSearchParams(location.hash.slice(1));
  const id = Number(h.get("escalation"));
  const handle = h.get("handle");
  if (!Number.isSafeInteger(id) || id <= 0 || !handle) return;
  let entry = state.entries.find((x) => x.escalation && x.escalation.id === id);
  if (!entry) {
    entry = { id: Date.now() + Math.random(), question: "", linked: true, steps: [],
      outcome: null, escalation: { id, handle, view: null } };
    state.entries.push(entry);
    save();
  }
  render();
  follow(entry);
}

// --------------------------------------------------------------- wiring ---
function applyLanguage() {
  document.documentElement.lang = lang;
  for (const node of document.querySelectorAll("[data-t]")) node.textContent = t(node.dataset.t);
  $("language").value = lang;
  render();
}

/** Where this tab keeps the service key, and whether its field is shown. */
const KEY_STORE = "grace-key";
const KEY_SHOWN_STORE = "grace-key-shown";

/** Shows the service-key field, for as long as this tab lives: once the
 * server has asked for a key (a 401), or one is kept already. */
function revealKey() {
  keyFieldEl.hidden = false;
  sessionStorage.setItem(KEY_SHOWN_STORE, "1");
}

keyEl.value = sessionStorage.getItem(KEY_STORE) || "";
if (keyEl.value || sessionStorage.getItem(KEY_SHOWN_STORE)) revealKey();
keyEl.addEventListener("input", () => {
  sessionStorage.setItem(KEY_STORE, keyEl.value.trim());
  keyEl.removeAttribute("aria-invalid");
});

$("language").addEventListener("change", (e) => {
  lang = TEXTS[e.target.value] ? e.target.value : "en";
  localStorage.setItem("grace-lang", lang);
  applyLanguage();
});

$("new-conversation").addEventListener("click", () => {
  generation += 1;
  const old = state.sessionId;
  state = { sessionId: null, entries: [] };
  save();
  if (old) api("DELETE", `/v1/sessions/${encodeURIComponent(old)}`).catch(() => {});
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  render();
  loadExamples();
  say(t("newStarted"));
  questionEl.focus();
});

$("ask-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const q = questionEl.value.trim();
  if (q) ask(q);
});

questionEl.addEventListener("keydown", (e) => {
  // Enter sends, Shift+Enter adds a line; Enter that ends an input
  // method's composition (Japanese) only commits the text.
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
    e.preventDefault();
    $("ask-form").requestSubmit();
  }
});

$("passage-close").addEventListener("click", () => $("passage").close());

applyLanguage();
for (const entry of state.entries) {
  // A reload resumes what was waiting.
  if (entry.escalation && !(entry.escalation.view && SETTLED.includes(entry.escalation.view.status))) follow(entry);
}
openLinkedEscalation();
window.addEventListener("hashchange", openLinkedEscalation);
loadExamples();

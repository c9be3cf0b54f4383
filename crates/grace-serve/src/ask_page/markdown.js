"use strict";
/*
 * GRACE's answers as elements, for the asker's page and the reviewer's:
 * the Markdown GRACE writes (code in backticks or in a fenced block, a
 * term in bold, a list a line an item; paragraphs apart by a blank line)
 * and `[n]` markers. Only text nodes are made from the answer: nothing in
 * it is read as HTML. Also `el`, the element helper both pages build with.
 */

/** An element with attributes (`text`: its text, `on…`: a listener) and
 * children (strings become text nodes, never markup). */
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

/** A fenced code block: a line of three backticks (and perhaps the code's
 * language), the code, a line of three backticks. Captured: the fence's
 * indent, then the code. */
const FENCED = /^( {0,3})```[^`\n]*\n([\s\S]*?)^ {0,3}```[ \t]*$/gm;

/**
 * Appends `text` to `box` as paragraphs, fenced code blocks, numbered and
 * bulleted lists, `code` and **bold**. `cite(n)` gives the element for
 * marker `[n]`, or null to keep the marker as text.
 */
function markdownInto(box, text, cite) {
  // Split on fences: text, then a fence's indent and code, then text…
  const parts = String(text).split(FENCED);
  for (let i = 0; i < parts.length; i += 3) {
    markdownParagraphs(box, parts[i], cite);
    if (i + 2 < parts.length) box.append(codeBlock(parts[i + 2], parts[i + 1].length));
  }
  return box;
}

/** A fenced block's code as `<pre><code>`, less the fence's `indent`
 * (spaces) on each line; focusable, so a keyboard can scroll a long line. */
function codeBlock(code, indent) {
  const pre = document.createElement("pre");
  pre.tabIndex = 0;
  const element = document.createElement("code");
  const lines = code.replace(/\n$/, "").split("\n");
  element.textContent = lines.map((line) => line.replace(new RegExp(`^ {0,${indent}}`), "")).join("\n");
  pre.append(element);
  return pre;
}

/** Paragraphs and lists of `text` (no fenced code in it). */
function markdownParagraphs(box, text, cite) {
  for (const para of text.split(/\n\s*\n/)) {
    let list = null;
    let p = null;
    for (const line of para.split("\n")) {
      if (!line.trim()) continue;
      const item = /^(\d{1,3})[.)]\s+(.*)$/.exec(line) || /^[-*•]\s+(.*)$/.exec(line);
      if (item) {
        const ordered = item.length === 3;
        if (!list || (list.tagName === "OL") !== ordered) {
          list = document.createElement(ordered ? "ol" : "ul");
          box.append(list);
        }
        const li = document.createElement("li");
        if (ordered) li.value = Number(item[1]);
        markdownLine(li, item[item.length - 1], cite);
        list.append(li);
        p = null;
      } else {
        list = null;
        if (!p) {
          p = document.createElement("p");
          box.append(p);
        } else {
          p.append(" ");
        }
        markdownLine(p, line, cite);
      }
    }
  }
}

/** `code`, **bold** and `[n]` markers inside one line. */
function markdownLine(parent, text, cite) {
  for (const part of String(text).split(/(`[^`]+`|\*\*[^*]+\*\*|\[\d{1,3}\])/)) {
    if (!part) continue;
    const marker = /^\[(\d{1,3})\]$/.exec(part);
    const link = marker && cite ? cite(Number(marker[1])) : null;
    if (link) parent.append(link);
    else if (/^`[^`]+`$/.test(part)) {
      const code = document.createElement("code");
      code.textContent = part.slice(1, -1);
      parent.append(code);
    } else if (/^\*\*[^*]+\*\*$/.test(part)) {
      const strong = document.createElement("strong");
      strong.textContent = part.slice(2, -2);
      parent.append(strong);
    } else parent.append(part);
  }
}

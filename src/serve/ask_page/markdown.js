"use strict";
/*
 * GRACE's answers as elements, for the asker's page and the reviewer's:
 * the Markdown GRACE writes (code in backticks, a term in bold, a list a
 * line an item; paragraphs apart by a blank line) and `[n]` markers.
 * Only text nodes are made from the answer: nothing in it is read as HTML.
 */

/**
 * Appends `text` to `box` as paragraphs, numbered and bulleted lists,
 * `code` and **bold**. `cite(n)` gives the element for marker `[n]`, or
 * null to keep the marker as text.
 */
function markdownInto(box, text, cite) {
  for (const para of String(text).split(/\n\s*\n/)) {
    let list = null;
    let p = null;
    for (const line of para.split("\n")) {
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
  return box;
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

// fen-fs web: the pages' script. Plain JavaScript, no library, served from the
// binary. It only ever puts a session's text into the page as text (textContent),
// or HTML that the server rendered for it (the Session page's messages, where every
// text of the session is escaped by the renderer).
"use strict";

(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c == null) continue;
      e.append(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return e;
  }

  async function getJSON(url) {
    const r = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!r.ok) throw new Error((await r.text()).trim() || r.statusText);
    return r.json();
  }

  // The Session page is written by the shared renderer, without the bar: the bar
  // is added here, the same as on every other page.
  function ensureBar() {
    if ($("header.bar")) return;
    const form = el("form", { class: "search", action: "/search", method: "get", role: "search" },
      el("input", {
        type: "search", name: "q", id: "q", autocomplete: "off", spellcheck: "false",
        placeholder: "Search: words, \"a phrase\", -word, prefix*, agent:claude, cwd:/dir, since:7d",
        "aria-label": "Search every session",
      }),
      el("div", { id: "live", class: "live", hidden: "" }));
    const nav = el("nav", {},
      el("a", { class: "brand", href: "/" }, "fen-fs"),
      el("a", { href: "/" }, "Sessions"),
      el("a", { href: "/usage" }, "Usage"),
      el("a", { href: "/machines" }, "Machines"));
    document.body.prepend(el("header", { class: "bar" }, nav, form));
  }

  // ---- Search as you type -------------------------------------------------

  function marked(snippet) {
    const span = el("span", { class: "snippet" });
    snippet.split("**").forEach((piece, i) => {
      span.append(i % 2 ? el("mark", {}, piece) : document.createTextNode(piece));
    });
    return span;
  }

  function hitList(answer) {
    const box = document.createDocumentFragment();
    if (answer.error) {
      box.append(el("p", { class: "note error", role: "status" }, answer.error));
      return box;
    }
    for (const n of answer.notes || []) box.append(el("p", { class: "note partial", role: "status" }, n));
    if (answer.partial) box.append(el("p", { class: "note partial", role: "status" }, answer.partial));
    if (!answer.hits.length) {
      if (answer.query.trim()) box.append(el("p", { class: "note empty" }, "No session matches."));
      return box;
    }
    const ol = el("ol", { class: "hits" });
    for (const h of answer.hits) {
      const meta = [h.agent, h.host, h.cwd || ""].join(" · ") + (h.in_conversation ? "" : " · compacted out of the conversation");
      ol.append(el("li", {}, el("a", { class: "hit", href: h.href },
        el("span", { class: "title" }, h.title), " ",
        el("span", { class: "meta" }, meta),
        marked(h.snippet))));
    }
    box.append(ol);
    return box;
  }

  function liveSearch() {
    const q = $("#q");
    if (!q) return;
    const onSearchPage = location.pathname === "/search" && $("#results");
    const target = onSearchPage ? $("#results") : $("#live");
    let asked = 0;
    let timer = null;
    let retry = null;
    async function ask() {
      const text = q.value;
      const mine = ++asked;
      clearTimeout(retry);
      if (!text.trim()) {
        if (!onSearchPage) target.hidden = true;
        target.replaceChildren();
        return;
      }
      let answer;
      try {
        answer = await getJSON("/api/search?q=" + encodeURIComponent(text) + (onSearchPage ? "&limit=50" : ""));
      } catch (e) {
        answer = { query: text, hits: [], notes: [], error: String(e.message || e) };
      }
      if (mine !== asked) return; // a later key was typed meanwhile
      target.replaceChildren(hitList(answer));
      target.hidden = false;
      if (onSearchPage) history.replaceState(null, "", "/search?q=" + encodeURIComponent(text));
      // A partial answer is asked again while the index is brought up to date.
      if (answer.partial) retry = setTimeout(ask, 500);
    }
    q.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(ask, 80);
    });
    q.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && !onSearchPage) {
        target.hidden = true;
      }
    });
    document.addEventListener("click", (e) => {
      if (!onSearchPage && !target.contains(e.target) && e.target !== q) target.hidden = true;
    });
    q.addEventListener("focus", () => {
      if (!onSearchPage && target.childNodes.length) target.hidden = false;
    });
    if (onSearchPage && q.value.trim() && $(".note.partial", target)) retry = setTimeout(ask, 500);
  }

  // ---- Sessions page -------------------------------------------------------

  function sessionsPage() {
    const form = $("#filters");
    if (form) {
      for (const s of $$("select, input[type=date]", form)) {
        s.addEventListener("change", () => form.requestSubmit());
      }
    }
    const pending = $$("td[data-usage]");
    if (!pending.length) return;
    // Each session as `agent/host/id` (an id alone could name two agents' sessions).
    const keys = Array.from(new Set(pending.map((td) => td.dataset.usage)));
    async function fill() {
      let r;
      try {
        r = await getJSON("/api/session-usage?keys=" + encodeURIComponent(keys.join("\n")));
      } catch (e) {
        return setTimeout(fill, 2000);
      }
      if (!r.counted) return setTimeout(fill, 1000);
      for (const td of pending) {
        const v = r.sessions[td.dataset.usage];
        td.textContent = v ? v[td.dataset.what] : "–";
        td.classList.remove("pending");
      }
      for (const n of $$(".note.partial")) {
        if (n.textContent.startsWith("Tokens and cost are still")) n.remove();
      }
    }
    fill();
  }

  // ---- Usage page ----------------------------------------------------------

  function usagePage() {
    if (!$("[data-reload-when-counted]")) return;
    async function poll() {
      try {
        const s = await getJSON("/api/status");
        if (s.usage_counted || s.usage_failed) return location.reload();
      } catch (e) { /* the server restarted? try again */ }
      setTimeout(poll, 1000);
    }
    poll();
  }

  // ---- Session page --------------------------------------------------------

  function sessionPage() {
    const more = $("#more");
    const messages = $("#messages");
    if (!more || !messages) return;
    let next = Number(more.dataset.next);
    let done = more.dataset.done === "1";
    let busy = false;

    function add(html, before) {
      const t = document.createElement("template");
      t.innerHTML = html;
      if (before) before.before(t.content);
      else more.before(t.content);
    }

    async function load() {
      if (busy) return;
      busy = true;
      try {
        const f = await getJSON(more.dataset.href + "?from=" + next);
        if (f.html) add(f.html);
        next = Math.max(next, f.next);
        done = f.done;
        more.textContent = done ? "" : "Loading more messages…";
      } catch (e) {
        more.textContent = "Could not load more messages: " + (e.message || e);
      } finally {
        busy = false;
      }
      if (!done && visible()) setTimeout(load, 0);
    }

    function visible() {
      const r = more.getBoundingClientRect();
      return r.top < window.innerHeight + 1500;
    }

    new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting) && !done) load();
    }, { rootMargin: "1500px 0px" }).observe(more);

    // New messages of a session being written: asked every half second once the
    // page holds them all (a session that did not change answers after one stat).
    async function follow() {
      if (done && !busy && !document.hidden) {
        const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
        await load();
        if (atBottom && messages.lastElementChild) window.scrollTo(0, document.body.scrollHeight);
      }
      setTimeout(follow, 500);
    }
    setTimeout(follow, 500);

    const earlier = $("#earlier button");
    if (earlier) {
      earlier.addEventListener("click", async () => {
        const before = Number(earlier.dataset.before);
        try {
          const f = await getJSON(more.dataset.href + "?before=" + before);
          const anchor = $("#earlier");
          add(f.html, anchor.nextSibling);
          if (f.from > 0) {
            earlier.dataset.before = String(f.from);
            earlier.textContent = f.from + " earlier messages: show them";
          } else {
            anchor.remove();
          }
        } catch (e) {
          earlier.textContent = "Could not load them: " + (e.message || e);
        }
      });
    }

    const focus = more.dataset.focus;
    if (focus && !location.hash) {
      const target = document.getElementById(focus);
      if (target) {
        target.classList.add("focus");
        target.scrollIntoView({ block: "center" });
      }
    }

    // Copy buttons beside each command that continues the session.
    for (const code of $$("code.command")) {
      const b = el("button", { type: "button", class: "copy", title: "Copy the command" }, "Copy");
      b.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText(code.textContent);
          b.textContent = "Copied";
        } catch (e) {
          const range = document.createRange();
          range.selectNodeContents(code);
          const sel = getSelection();
          sel.removeAllRanges();
          sel.addRange(range);
          b.textContent = "Selected: Ctrl+C";
        }
        setTimeout(() => { b.textContent = "Copy"; }, 1500);
      });
      code.after(" ", b);
    }
  }

  function start() {
    ensureBar();
    liveSearch();
    sessionsPage();
    usagePage();
    sessionPage();
    document.documentElement.dataset.ready = "1";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

/* verl-doctor FAQ: instant search, the paste box, copy buttons. Progressive: every feature works as a plain form without it. */
(() => {
  "use strict";
  const root = document.body.dataset.root || "";
  document.documentElement.classList.add("js");

  /* Build DOM from data with textContent only: nothing user-supplied is ever parsed as HTML. */
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  async function getJSON(url, options) {
    const res = await fetch(url, { credentials: "same-origin", ...options, headers: { Accept: "application/json", ...(options && options.headers) } });
    let body = null;
    try { body = await res.json(); } catch (_) { body = null; }
    if (!res.ok) {
      const msg = body && (body.detail || body.title) ? (body.detail || body.title) : `HTTP ${res.status}`;
      const err = new Error(res.status === 401 ? "The server needs its access token: reload the page to sign in." : msg);
      err.status = res.status;
      throw err;
    }
    return body;
  }

  const areaBadge = (area) => h("a", { class: `badge area area-${area}`, href: `${root}/areas/${encodeURIComponent(area)}` }, area);
  const entryHref = (id) => `${root}/entries/${encodeURIComponent(id)}`;

  /* ---------------------------------------------------------------- instant search */
  for (const form of document.querySelectorAll("form[data-instant-search]")) {
    const input = form.querySelector("input[name=q]");
    const out = document.querySelector("[data-search-results]");
    if (!input || !out) continue;
    let timer = 0, controller = null, last = input.value.trim();

    const render = (q, hits) => {
      if (!hits.length) {
        out.replaceChildren(h("p", { class: "empty" }, "No entry matches ", h("q", {}, q), ". Try fewer words, an error message, or paste the log."));
        return;
      }
      out.replaceChildren(
        h("p", { class: "summary" }, `${hits.length} result${hits.length === 1 ? "" : "s"} for `, h("q", {}, q)),
        h("ol", { class: "hits" }, hits.map((hit) => h("li", { class: "hit" },
          h("a", { class: "hit-title", href: entryHref(hit.id) }, hit.title),
          h("span", { class: "hit-meta" }, areaBadge(hit.area),
            h("span", { class: "score", title: `score (${hit.match})` }, hit.score.toFixed(2)),
            h("span", { class: "hit-kind" }, hit.match)))))
      );
    };

    const run = async () => {
      const q = input.value.trim();
      if (q === last) return;
      last = q;
      if (controller) controller.abort();
      if (form.hasAttribute("data-update-url")) history.replaceState(null, "", q ? `?q=${encodeURIComponent(q)}` : location.pathname);
      if (!q) { out.replaceChildren(); out.removeAttribute("aria-busy"); return; }
      controller = new AbortController();
      out.setAttribute("aria-busy", "true");
      try {
        const hits = await getJSON(`${root}/v1/search?top=10&query=${encodeURIComponent(q)}`, { signal: controller.signal });
        if (q === input.value.trim()) render(q, hits);
      } catch (err) {
        if (err.name === "AbortError") return;
        out.replaceChildren(h("p", { class: "alert" }, `Search failed: ${err.message}`));
      } finally {
        out.removeAttribute("aria-busy");
      }
    };

    input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, 180); });
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "ArrowDown") {
        const first = out.querySelector("a.hit-title");
        if (first) { ev.preventDefault(); first.focus(); }
      }
    });
  }

  /* ---------------------------------------------------------------- paste box */
  /* Python regexes as JS ones, where they translate; otherwise the whole line is highlighted. */
  function jsRegex(pattern) {
    if (!pattern) return null;
    let flags = "";
    let p = pattern.replace(/^\(\?([aiLmsux]+)\)/, (_, f) => { if (f.includes("i")) flags += "i"; if (f.includes("s")) flags += "s"; return ""; });
    p = p.replace(/\(\?P</g, "(?<").replace(/\(\?P=(\w+)\)/g, "\\k<$1>").replace(/\\Z/g, "$");
    try { return new RegExp(p, flags); } catch (_) { return null; }
  }

  function highlighted(text, pattern) {
    const re = jsRegex(pattern);
    const m = re ? re.exec(text) : null;
    if (!m || !m[0]) return [h("mark", {}, text)];
    return [text.slice(0, m.index), h("mark", {}, m[0]), text.slice(m.index + m[0].length)].filter((x) => x !== "");
  }

  /* Minimal, safe Markdown for causes and actions: paragraphs and `code` spans only, built as DOM nodes. */
  const inline = (text) => (text || "").split(/(`[^`]+`)/).map((s) => (s.length > 1 && s.startsWith("`") && s.endsWith("`") ? h("code", {}, s.slice(1, -1)) : s));
  const prose = (text) => (text || "").split(/\n\s*\n/).filter((p) => p.trim()).map((para) => h("p", {}, inline(para.replace(/\s*\n\s*/g, " "))));

  function copyBlock(label, lines) {
    return h("div", { class: "overrides" },
      h("div", { class: "overrides-head" }, h("span", { class: "overrides-label" }, label), h("button", { type: "button", class: "copy", "data-copy": true }, "Copy")),
      h("pre", { class: "override-lines", "data-copy-source": true }, h("code", {}, lines.join("\n"))));
  }

  function matchCard(m, rank, versionUsed) {
    const parts = [
      h("header", { class: "match-head" },
        h("span", { class: "rank" }, `#${rank}`),
        h("span", { class: "verdict" }, m.verdict),
        h("a", { class: "match-title", href: entryHref(m.id) }, m.title),
        areaBadge(m.area),
        h("span", { class: "confidence", title: "confidence" },
          h("span", { class: "meter" }, h("meter", { min: 0, max: 1, value: m.confidence })), `${Math.round(m.confidence * 100)}%`)),
    ];
    if (m.evidence.length) {
      parts.push(h("h4", {}, "Evidence"), h("ol", { class: "evidence" }, m.evidence.map((ev) => h("li", { class: `ev ev-${ev.kind}` },
        h("span", { class: "ln" }, ev.line_no ? `L${ev.line_no}` : ev.kind),
        h("code", { class: "ev-text" }, highlighted(ev.text, ev.pattern)),
        ev.steps ? h("span", { class: "steps" }, `steps ${ev.steps[0]}–${ev.steps[1]}`) : null))));
    }
    if (m.conditions.length) {
      parts.push(h("h4", {}, "Conditions"), h("ul", { class: "conditions" }, m.conditions.map((c) =>
        h("li", { class: `cond cond-${c.status}` }, h("span", { class: "status" }, c.status), c.text))));
    }
    parts.push(h("h4", {}, "Why it happens"), h("div", { class: "md" }, prose(m.cause)));
    if (m.overrides.length) {
      /* Without a known verl version, one block per range: lines for different releases must not be pasted together. */
      const groups = new Map();
      for (const o of m.overrides) {
        const label = versionUsed ? `verl ${versionUsed}` : `verl ${o.verl}`;
        if (!groups.has(label)) groups.set(label, []);
        groups.get(label).push(o.line);
      }
      parts.push(h("h4", {}, "Overrides"), [...groups].map(([label, lines]) => copyBlock(label, lines)));
    }
    if (m.actions.length) parts.push(h("h4", {}, "Actions"), h("ul", { class: "actions" }, m.actions.map((a) => h("li", {}, inline(a)))));
    return h("article", { class: `match verdict-${m.verdict}` }, parts);
  }

  function renderResult(out, result) {
    const n = result.matches.length;
    const s = result.signals;
    /* Each chip once: an exception chain names the same type at every level. */
    const pills = [...new Set([...s.exceptions, ...s.hydra_errors, ...Object.entries(s.versions).map(([k, v]) => `${k} ${v}`)])];
    out.replaceChildren(...[
      h("h2", {}, "Diagnosis"),
      h("p", { class: "summary" },
        result.abstained ? h("span", { class: "verdict-line abstain" }, "No confident match.") : h("span", { class: "verdict-line ok" }, "Known problem found."),
        ` ${n} candidate${n === 1 ? "" : "s"} from ${s.lines} line${s.lines === 1 ? "" : "s"}${result.verl_version_used ? `; overrides for verl ${result.verl_version_used}` : ""}.`),
      pills.length ? h("p", { class: "signals" }, pills.map((p) => h("span", { class: "pill" }, p))) : null,
      result.notes.map((note) => h("p", { class: "note" }, note)),
      result.matches.map((m, i) => matchCard(m, i + 1, result.verl_version_used)),
    ].flat().filter(Boolean));
  }

  /* ---------------------------------------------------------------- permalinks */
  /* A diagnosis's permalink carries the pasted text itself in the URL's fragment (#diagnose=z.<base64url of
     the raw-DEFLATEd UTF-8>): no server state, and the fragment never reaches a server or its logs. Opening
     the link puts the text back in the paste box (as a value, never as markup) and diagnoses it again.
     server/web/permalink.py writes the same format; MAX_LINK is its MAX_PERMALINK. */
  const LINK_KEY = "diagnose";
  const MAX_LINK = 32000;          /* characters of payload: longer links break in chat tools and trackers */
  const MAX_TEXT_BYTES = 4 << 20;  /* what a link may inflate to: a few KB of link must not become GBs */

  const b64url = (bytes) => {
    let bin = "";
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  };
  const unb64url = (text) => {
    const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  };

  async function readCapped(stream) {
    const reader = stream.getReader();
    const parts = [];
    let total = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > MAX_TEXT_BYTES) { reader.cancel(); throw new Error(`it holds more than ${MAX_TEXT_BYTES >> 20} MB of text`); }
      parts.push(value);
    }
    const out = new Uint8Array(total);
    let at = 0;
    for (const p of parts) { out.set(p, at); at += p.length; }
    return out;
  }

  async function encodeLink(text) {
    const bytes = new TextEncoder().encode(text);
    if (typeof CompressionStream === "undefined") return `u.${b64url(bytes)}`;
    const packed = await readCapped(new Blob([bytes]).stream().pipeThrough(new CompressionStream("deflate-raw")));
    return `z.${b64url(packed)}`;
  }

  async function decodeLink(payload) {
    if (payload.length > MAX_LINK) throw new Error(`it is ${payload.length} characters long; at most ${MAX_LINK} are read`);
    const [kind, data] = [payload.slice(0, 2), payload.slice(2)];
    if (!/^[A-Za-z0-9_-]*$/.test(data)) throw new Error("it is not base64url");
    let bytes = unb64url(data);
    if (kind === "z.") bytes = await readCapped(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw")));
    else if (kind !== "u.") throw new Error("its format is unknown");
    if (bytes.length > MAX_TEXT_BYTES) throw new Error(`it holds more than ${MAX_TEXT_BYTES >> 20} MB of text`);
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  }

  const linkPayload = () => {
    const m = /^#diagnose=(.*)$/s.exec(location.hash);
    return m ? m[1] : null;
  };

  function permalinkRow(payload, length) {
    if (payload === null) {
      return h("p", { class: "permalink-row muted" }, `This paste is too long for a permalink (${length} characters); share the log itself.`);
    }
    const url = `${location.origin}${location.pathname}#${LINK_KEY}=${payload}`;
    return h("p", { class: "permalink-row" },
      h("a", { class: "permalink", href: url }, "Permalink"), " ",
      h("button", { type: "button", class: "copy", "data-copy-value": url }, "Copy link"),
      h("span", { class: "muted" }, " the paste rides in the link: opening it diagnoses the same text again"));
  }

  for (const form of document.querySelectorAll("form[data-diagnose]")) {
    const out = document.querySelector("[data-diagnosis]");
    const button = form.querySelector("button[type=submit]");
    const label = button.textContent;
    let shown = null;  /* the payload of the diagnosis on screen: a hashchange to it is our own */

    const diagnose = async (text, fromLink) => {
      button.disabled = true;
      button.textContent = "Diagnosing…";
      out.hidden = false;
      out.setAttribute("aria-busy", "true");
      try {
        const top = Number(form.elements.top ? form.elements.top.value : 5) || 5;
        const result = await getJSON(`${root}/v1/diagnose`, {
          method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ input: text, top }),
        });
        renderResult(out, result);
        let payload = fromLink;
        if (payload === null) {
          try { payload = await encodeLink(text); } catch (_) { payload = null; }
          if (payload !== null && payload.length > MAX_LINK) payload = null;
        }
        shown = payload;
        history.replaceState(null, "", payload === null ? `${location.pathname}${location.search}` : `#${LINK_KEY}=${payload}`);
        out.querySelector("h2").after(permalinkRow(payload, text.length));
      } catch (err) {
        out.replaceChildren(h("p", { class: "alert", role: "alert" }, `Diagnosis failed: ${err.message}`));
      } finally {
        out.removeAttribute("aria-busy");
        button.disabled = false;
        button.textContent = label;
        out.scrollIntoView({ behavior: "smooth", block: "start" });
      }
    };

    form.addEventListener("submit", (ev) => {
      const text = form.elements.input.value;
      if (!out || !text.trim()) return;
      ev.preventDefault();
      diagnose(text, null);
    });

    const openLink = async () => {
      const payload = linkPayload();
      if (payload === null || payload === shown || !out) return;
      let text;
      try {
        text = await decodeLink(payload);
      } catch (err) {
        out.hidden = false;
        out.replaceChildren(h("p", { class: "alert", role: "alert" }, `This permalink cannot be read: ${err.message}.`));
        return;
      }
      form.elements.input.value = text;  /* a value, never markup */
      diagnose(text, payload);
    };
    window.addEventListener("hashchange", openLink);
    openLink();
  }

  /* ---------------------------------------------------------------- copy buttons */
  function fallbackCopy(text) {
    const area = h("textarea", { readonly: true, class: "offscreen" });
    area.value = text;
    document.body.append(area);
    area.select();
    let ok = false;
    try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
    area.remove();
    return ok;
  }

  document.addEventListener("click", async (ev) => {
    const button = ev.target.closest("[data-copy], [data-copy-value]");
    if (!button) return;
    const value = button.getAttribute("data-copy-value");
    const source = value === null ? button.closest(".overrides").querySelector("[data-copy-source]") : button;
    const text = value === null ? source.textContent.trim() + "\n" : value;
    let ok = false;
    if (navigator.clipboard && window.isSecureContext) {
      try { await navigator.clipboard.writeText(text); ok = true; } catch (_) { ok = false; }
    }
    if (!ok) ok = fallbackCopy(text);
    if (!ok) {  /* last resort: select the lines so Ctrl+C works */
      const range = document.createRange();
      range.selectNodeContents(source);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
    }
    const idle = button.dataset.label || (button.dataset.label = button.textContent);
    button.textContent = ok ? "Copied" : "Press Ctrl+C";
    button.classList.toggle("copied", ok);
    setTimeout(() => { button.textContent = idle; button.classList.remove("copied"); }, 1800);
  });

  /* ---------------------------------------------------------------- version picker */
  for (const form of document.querySelectorAll("form[data-autosubmit]")) {
    const select = form.querySelector("select");
    if (select) select.addEventListener("change", () => form.submit());
  }
})();

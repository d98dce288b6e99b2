"""The report page's stylesheet and script, inlined into every page (a report is one file that works from
``file://``, with no server and nothing fetched).

They are Python strings rather than ``.css``/``.js`` files so that every install carries them: the package data
patterns ship ``.txt``/``.json`` files only. The script draws records only through ``textContent`` and
``createTextNode`` -- never ``innerHTML`` -- so no record text can become markup.

The script reads the JSON of ``<script id="report-data">`` (``{"facets": [...], "page_size": N, "records":
[...]}``, see :mod:`evigraph.report.data`), builds one filter per facet, and draws one page of the records that
pass the filters. The state lives in the URL's fragment -- ``#f.label=SUPPORT&f.correct=no&q=tower&page=2&size=50``
(``size=all`` draws every match) -- so a filtered view can be bookmarked or linked. When the first page is drawn
it sets ``data-ready-ms`` on ``<html>`` (milliseconds since navigation started), what the size benchmark reads.
"""

from __future__ import annotations

__all__ = ("SCRIPT", "STYLE")

STYLE = """
:root { --fg: #1d232b; --muted: #5c6670; --line: #d9dee3; --card: #ffffff; --bg: #f4f6f8; }
* { box-sizing: border-box; }
body { margin: 0; padding: 16px 24px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--fg); background: var(--bg); }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
.muted { color: var(--muted); }
.run-info { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 0 0 8px; color: var(--muted); }
.run-info b { color: var(--fg); font-weight: 600; }
.cards { display: flex; flex-wrap: wrap; gap: 8px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px;
  min-width: 120px; }
.card .k { font-size: 12px; color: var(--muted); }
.card .v { font-size: 18px; font-weight: 600; }
table { border-collapse: collapse; background: var(--card); margin: 4px 0 8px; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eef1f4; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.metric-table { margin-right: 16px; display: inline-block; vertical-align: top; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
.plots figure { margin: 0; background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 6px; }
.plots img { display: block; max-width: 460px; width: 100%; height: auto; }
.plots figcaption { font-size: 12px; color: var(--muted); text-align: center; }
pre, .mono { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap;
  word-break: break-word; }
.controls { position: sticky; top: 0; z-index: 2; background: var(--bg); padding: 8px 0; border-bottom: 1px solid
  var(--line); display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; }
.controls label { font-size: 13px; color: var(--muted); margin-right: 12px; }
.controls select, .controls input { font: inherit; margin-left: 4px; }
.pager button { font: inherit; padding: 1px 8px; }
.record { background: var(--card); border: 1px solid var(--line); border-radius: 8px; margin: 12px 0;
  padding: 8px 12px; }
.record-head { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: baseline; margin-bottom: 6px; }
.rid { font-weight: 700; }
.verdict { font-weight: 600; }
.gold { color: #6b5200; }
.mark { font-size: 12px; border-radius: 10px; padding: 0 8px; }
.mark.yes { background: #d7f5dc; color: #14632a; }
.mark.no { background: #ffdcdc; color: #8a1414; }
.mark.unscored { background: #eceff2; color: var(--muted); }
.chip { font-size: 12px; background: #eef1f4; border-radius: 10px; padding: 0 8px; color: var(--muted); }
.run-error { background: #fff0f0; border-left: 3px solid #c62828; padding: 4px 8px; margin: 4px 0; }
.section-title { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted);
  margin: 8px 0 2px; }
details.block { margin: 4px 0; }
details.block > summary { cursor: pointer; font-weight: 600; font-size: 13px; }
.text { white-space: pre-wrap; word-break: break-word; padding: 2px 0 2px 12px; max-height: 24em; overflow: auto; }
.segments { padding-left: 12px; }
.seg { display: flex; gap: 8px; border-left: 3px solid var(--line); padding: 2px 6px; margin: 2px 0; }
.seg .tag { flex: 0 0 92px; font: 600 12px/1.6 ui-monospace, monospace; color: var(--muted); }
.seg-text { white-space: pre-wrap; word-break: break-word; flex: 1; max-height: 20em; overflow: auto; }
.seg-plan { border-color: #8e6cc4; } .seg-search { border-color: #2f6fd6; } .seg-think { border-color: #c9a227; }
.seg-answer { border-color: #2e9d4a; background: #f3fbf4; }
.seg-information { border-color: #9aa4ae; background: #f6f7f9; font-size: 13px; }
.origin-environment .tag { color: #2f6fd6; }
mark { border-radius: 2px; padding: 0 1px; background: transparent; color: inherit; }
mark.hl-good { background: #bfeac6; }
mark.hl-bad { background: #ffc0c0; }
mark.hl-warn { background: #ffe1a3; }
mark.hl-info { background: #cfe2ff; }
mark.hl-gold { text-decoration: underline 2px dashed #a37800; text-underline-offset: 3px; }
tr.tone-good td { background: #eefaf0; } tr.tone-bad td { background: #fff0f0; }
tr.tone-warn td { background: #fff8e6; } tr.tone-info td { background: #eef4ff; }
tr.tone-gold td { background: #fbf6e6; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 1px 12px; margin: 2px 0 2px 12px; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; white-space: pre-wrap; word-break: break-word; }
.scores { font-size: 12px; color: var(--muted); margin-top: 6px; }
.legend mark { margin-right: 8px; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var records = data.records, facetNames = data.facets, defaultSize = data.page_size;
  var root = document.getElementById("records");
  var status = document.getElementById("status");
  var state = {f: {}, q: "", page: 1, size: defaultSize};
  var selects = {};

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function safe(name) { return String(name).replace(/[^A-Za-z0-9_-]/g, "_"); }

  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    state.f = {};
    facetNames.forEach(function (name) {
      var value = params.get("f." + name);
      if (value) state.f[name] = value;
    });
    state.q = params.get("q") || "";
    state.page = Math.max(1, parseInt(params.get("page") || "1", 10) || 1);
    var size = params.get("size");
    state.size = size === "all" ? Infinity : Math.max(1, parseInt(size || "", 10) || defaultSize);
  }
  function writeHash() {
    var params = new URLSearchParams();
    Object.keys(state.f).forEach(function (name) { if (state.f[name]) params.set("f." + name, state.f[name]); });
    if (state.q) params.set("q", state.q);
    if (state.page > 1) params.set("page", String(state.page));
    if (state.size !== defaultSize) params.set("size", state.size === Infinity ? "all" : String(state.size));
    var hash = params.toString();
    try { history.replaceState(null, "", "#" + hash); } catch (e) { /* some file:// setups refuse it */ }
  }

  function haystack(record) {
    if (record._hay === undefined) {
      var parts = [record.id, record.verdict, record.gold || "", record.error || ""];
      record.input.forEach(function (b) { (b.pieces || []).forEach(function (p) { parts.push(p[0]); }); });
      record._hay = parts.join("\n").toLowerCase();
    }
    return record._hay;
  }
  function matches(record) {
    for (var name in state.f) {
      if (state.f[name] && (record.facets[name] || []).indexOf(state.f[name]) < 0) return false;
    }
    return !state.q || haystack(record).indexOf(state.q.toLowerCase()) >= 0;
  }

  function textBody(pieces, cls) {
    var div = el("div", cls);
    pieces.forEach(function (piece) {
      if (piece.length === 1) { div.appendChild(document.createTextNode(piece[0])); return; }
      var mark = el("mark", piece[1].split(" ").map(function (t) { return "hl-" + safe(t); }).join(" "), piece[0]);
      if (piece[2]) mark.title = piece[2];
      div.appendChild(mark);
    });
    return div;
  }
  function block(b) {
    var details = el("details", "block block-" + safe(b.kind));
    if (b.open) details.open = true;
    details.appendChild(el("summary", null, b.title));
    var body;
    if (b.kind === "text") {
      body = textBody(b.pieces, b.mono ? "text mono" : "text");
    } else if (b.kind === "segments") {
      body = el("div", "segments");
      b.segments.forEach(function (s) {
        var row = el("div", "seg seg-" + safe(s.tag) + " origin-" + safe(s.origin));
        row.appendChild(el("span", "tag", s.tag));
        row.appendChild(textBody(s.pieces, "seg-text"));
        body.appendChild(row);
      });
    } else if (b.kind === "kv") {
      body = el("dl", "kv");
      b.items.forEach(function (item) {
        body.appendChild(el("dt", null, item[0]));
        body.appendChild(el("dd", null, item[1]));
      });
    } else if (b.kind === "table") {
      body = el("table", "rows");
      var head = el("tr");
      b.columns.forEach(function (c) { head.appendChild(el("th", null, c)); });
      body.appendChild(head);
      b.rows.forEach(function (row, i) {
        var tr = el("tr", b.tones && b.tones[i] ? "tone-" + safe(b.tones[i]) : null);
        row.forEach(function (cell) { tr.appendChild(el("td", null, cell)); });
        body.appendChild(tr);
      });
    } else {
      body = el("pre", null, JSON.stringify(b, null, 2));
    }
    details.appendChild(body);
    return details;
  }
  function card(record) {
    var article = el("article", "record");
    article.setAttribute("data-id", record.id);
    var head = el("header", "record-head");
    head.appendChild(el("span", "rid", record.id));
    head.appendChild(el("span", "verdict", record.verdict));
    if (record.gold !== null) head.appendChild(el("span", "gold", "gold: " + record.gold));
    var mark = record.correct === null ? ["unscored", "not scored"]
      : record.correct ? ["yes", "correct"] : ["no", "wrong"];
    head.appendChild(el("span", "mark " + mark[0], mark[1]));
    facetNames.forEach(function (name) {
      if (name === "correct" || name === "run") return;
      (record.facets[name] || []).forEach(function (v) { head.appendChild(el("span", "chip", name + ": " + v)); });
    });
    article.appendChild(head);
    if (record.error) article.appendChild(el("div", "run-error", "run failed: " + record.error));
    [["input", record.input], ["trajectory", record.trajectory]].forEach(function (section) {
      if (!section[1].length) return;
      article.appendChild(el("div", "section-title", section[0]));
      section[1].forEach(function (b) { article.appendChild(block(b)); });
    });
    var names = Object.keys(record.scores);
    if (names.length) {
      article.appendChild(el("div", "scores", "rewards: " + names.map(function (k) {
        var v = record.scores[k];
        return k + " " + (v === null ? "n/a" : Number(v).toFixed(3));
      }).join(" · ")));
    }
    return article;
  }

  function render() {
    var matching = records.filter(matches);
    var size = state.size === Infinity ? Math.max(1, matching.length) : state.size;
    var pages = Math.max(1, Math.ceil(matching.length / size));
    if (state.page > pages) state.page = pages;
    var first = (state.page - 1) * size;
    var shown = matching.slice(first, first + size);
    var fragment = document.createDocumentFragment();
    shown.forEach(function (r) { fragment.appendChild(card(r)); });
    root.textContent = "";
    root.appendChild(fragment);
    status.textContent = matching.length + " of " + records.length + " records match · page " + state.page +
      " of " + pages + (shown.length ? " (records " + (first + 1) + "–" + (first + shown.length) + ")" : "");
    root.setAttribute("data-matching", String(matching.length));
    root.setAttribute("data-shown", String(shown.length));
    document.getElementById("prev").disabled = state.page <= 1;
    document.getElementById("next").disabled = state.page >= pages;
  }
  function syncControls() {
    facetNames.forEach(function (name) { selects[name].value = state.f[name] || ""; });
    document.getElementById("search").value = state.q;
  }
  function update() { writeHash(); render(); window.scrollTo(0, document.getElementById("controls").offsetTop); }

  function buildControls() {
    var box = document.getElementById("filters");
    facetNames.forEach(function (name) {
      var counts = {};
      records.forEach(function (r) {
        (r.facets[name] || []).forEach(function (v) { counts[v] = (counts[v] || 0) + 1; });
      });
      var label = el("label", null, name);
      var select = el("select");
      select.setAttribute("data-facet", name);
      select.appendChild(el("option", null, "all"));
      select.firstChild.value = "";
      Object.keys(counts).sort().forEach(function (v) {
        var option = el("option", null, v + " (" + counts[v] + ")");
        option.value = v;
        select.appendChild(option);
      });
      select.addEventListener("change", function () { state.f[name] = select.value; state.page = 1; update(); });
      selects[name] = select;
      label.appendChild(select);
      box.appendChild(label);
    });
    var search = document.getElementById("search");
    var timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { state.q = search.value; state.page = 1; update(); }, 200);
    });
    document.getElementById("prev").addEventListener("click", function () { state.page -= 1; update(); });
    document.getElementById("next").addEventListener("click", function () { state.page += 1; update(); });
    window.addEventListener("hashchange", function () { readHash(); syncControls(); render(); });
  }

  readHash();
  buildControls();
  syncControls();
  render();
  document.documentElement.setAttribute("data-ready-ms", performance.now().toFixed(1));
})();
"""

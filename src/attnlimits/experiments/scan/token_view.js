// The scan page's token view and thumbnails: window.SCAN.tokens (token_view.token_data) drawn
// as coloured tokens (CircuitsVis style: the query outlined, each key shaded by its weight over
// the row's largest, the weight on hover), and one layer's heads as small pattern thumbnails
// (window.SCAN.patterns, the binned rows). Nothing is fetched; scan.js calls show and thumbs.
(function () {
  "use strict";
  const D = window.SCAN, T = D.tokens || {};
  const $ = (id) => document.getElementById(id);
  const cache = {};
  const view = { layer: null, head: null, L: null, r: 0 };

  function decode(b64, bytes) {
    const text = atob(b64), out = new Uint8Array(text.length);
    for (let c = 0; c < text.length; c++) out[c] = text.charCodeAt(c);
    return bytes === 4 ? new Uint32Array(out.buffer) : new Uint16Array(out.buffer);
  }

  function packed(what, L, i, bytes) {
    const key = `${what}/${L}/${i}`;
    if (!cache[key]) cache[key] = decode(T.lengths[L][what][i], bytes);
    return cache[key];
  }

  // Layer i's binned patterns at L (head, row, bin inside), decoded on first use.
  function pattern(L, i) {
    const key = `pattern/${L}/${i}`;
    if (!cache[key]) cache[key] = decode(D.patterns[L].data[i], 2);
    return cache[key];
  }

  // The sampled rows of head (i, j) at L: [{row, seen, keys, weights}], keys ascending.
  function rowsOf(L, i, j) {
    const p = T.lengths && T.lengths[L];
    if (!p) return null;
    const total = p.counts.reduce((a, b) => a + b, 0);
    const w = packed("weights", L, i, 2), k = p.dense ? null : packed("keys", L, i, p.keyBytes);
    const pad = p.keyBytes === 4 ? 0xffffffff : 0xffff;
    let at = j * total;
    return p.rows.map((row, r) => {
      const keys = [], weights = [];
      for (let s = 0; s < p.counts[r]; s++, at++) {
        const key = k ? k[at] : s;
        if (key !== pad) { keys.push(key); weights.push(w[at] / 65535); }
      }
      return { row: row, seen: p.seen[r], keys: keys, weights: weights,
        full: keys.length === p.seen[r] };
    });
  }

  function esc(s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }

  function span(pos, weight, top, isQuery) {
    const text = T.text[pos] === undefined ? "?" : T.text[pos];
    const shown = esc(text.replace(/\n/g, "↵")) || "&nbsp;";
    const a = weight === null ? 0 : weight / top;
    const style = [`background:rgba(8,48,107,${a.toFixed(3)})`, a > 0.5 ? "color:#fff" : ""];
    if (isQuery) style.push("outline:2px solid #d62728");
    const title = weight === null ? `position ${pos}: not among the stored keys`
      : `key ${pos} ${JSON.stringify(text)}: weight ${weight.toPrecision(4)}`;
    const data = weight === null ? "" : ` data-key="${pos}" data-weight="${weight}"`;
    return `<span class="tok${isQuery ? " query" : ""}"${data} title="${esc(title)}" ` +
      `style="${style.join(";")}">${shown}</span>`;
  }

  function render() {
    const box = $("tokens"), L = String(view.L);
    const i = D.layers.indexOf(view.layer), j = D.heads.indexOf(view.head);
    const rows = rowsOf(L, i, j);
    if (!rows) {
      box.innerHTML = `<p class="note">No token rows at L = ${L} (a scan from before they ` +
        "were stored).</p>";
      return;
    }
    view.r = Math.min(Math.max(view.r, 0), rows.length - 1);
    const row = rows[view.r], top = Math.max(...row.weights, 1e-12);
    const weight = new Map(row.keys.map((k, n) => [k, row.weights[n]]));
    let positions;
    if (row.full) {
      positions = Array.from({ length: row.row + 1 }, (_, n) => n);
    } else {  // the top keys with two tokens either side, and the query's last five
      const set = new Set();
      for (const k of [...row.keys, row.row]) {
        for (let d = k === row.row ? -4 : -2; d <= 2; d++) {
          if (k + d >= 0 && k + d <= row.row) set.add(k + d);
        }
      }
      positions = [...set].sort((a, b) => a - b);
    }
    const parts = [];
    positions.forEach((pos, n) => {
      if (n > 0 && pos > positions[n - 1] + 1) parts.push('<span class="gap"> … </span>');
      parts.push(span(pos, weight.has(pos) ? weight.get(pos) : null, top, pos === row.row));
    });
    const what = row.full ? `every weight of its ${row.seen} keys`
      : `its ${row.keys.length} largest weights of ${row.seen} keys (in context)`;
    box.innerHTML = `<div class="tok-head"><button id="tok-prev">◀</button> ` +
      `<button id="tok-next">▶</button> <b>layer ${view.layer}, head ${view.head}, L = ${L}: ` +
      `query row ${view.r + 1} of ${rows.length}</b> (position ${row.row}, outlined), ${what}; ` +
      "shade: weight / the row's largest; hover a token for its weight.</div>" +
      `<div class="tok-text">${parts.join("")}</div>`;
    $("tok-prev").disabled = view.r === 0;
    $("tok-next").disabled = view.r === rows.length - 1;
    $("tok-prev").onclick = () => { view.r -= 1; render(); };
    $("tok-next").onclick = () => { view.r += 1; render(); };
  }

  function show(layer, head, L) {
    if (!$("tokens")) return;
    if (view.layer !== layer || view.head !== head || view.L !== Number(L)) view.r = 0;
    Object.assign(view, { layer: layer, head: head, L: Number(L) });
    render();
  }

  // One layer's heads at L as thumbnails of their binned rows (each row over its largest bin).
  function thumbs(layer, L, onPick) {
    const box = $("thumbs"), p = D.patterns[String(L)], i = D.layers.indexOf(layer);
    if (!box) return;
    if (!p || i < 0) {
      box.innerHTML = `<p class="note">No patterns at L = ${L}: rows are materialised only ` +
        "up to the scan's analysis_max_length.</p>";
      return;
    }
    const data = pattern(String(L), i), R = p.rows.length, B = p.bins;
    box.innerHTML = `<p class="note">Layer ${layer} at L = ${L}: each head's ${R} sampled rows ` +
      `(top to bottom) over ${B} key bins (left to right); click one to open it.</p>`;
    D.heads.forEach((head, j) => {
      const fig = document.createElement("figure"), canvas = document.createElement("canvas");
      canvas.width = B; canvas.height = R;
      canvas.className = "thumb"; canvas.dataset.layer = layer; canvas.dataset.head = head;
      const ctx = canvas.getContext("2d"), img = ctx.createImageData(B, R);
      for (let r = 0; r < R; r++) {
        const start = (j * R + r) * B;
        let top = 1;
        for (let b = 0; b < B; b++) top = Math.max(top, data[start + b]);
        for (let b = 0; b < B; b++) {
          const a = data[start + b] / top, o = 4 * (r * B + b);
          img.data[o] = 255 - a * 247; img.data[o + 1] = 255 - a * 207;
          img.data[o + 2] = 255 - a * 148; img.data[o + 3] = 255;
        }
      }
      ctx.putImageData(img, 0, 0);
      canvas.title = `layer ${layer}, head ${head}`;
      canvas.onclick = () => onPick(layer, head);
      const cap = document.createElement("figcaption");
      cap.textContent = `head ${head}`;
      fig.append(canvas, cap);
      box.append(fig);
    });
  }

  window.ScanTokens = { show: show, thumbs: thumbs, rowsOf: rowsOf, pattern: pattern,
    view: view };
})();

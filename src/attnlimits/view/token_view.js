// The token view: sampled query rows of one head drawn as coloured tokens (CircuitsVis style:
// the query outlined, each key shaded by its weight over the row's largest, the weight on
// hover). Data: {text: [token strings by position], lengths: {L: packed rows}} as
// view/tokens.py (token_data) packs them. attnlimitsTokens.view(box, T, layers, heads, opts)
// returns {show(layer, head, L), render(), rowsOf(L, i, j), use(T), view, opts}; use: other
// rows to draw; view.r: the row shown; opts.steps: the id prefix of its
// ◀ ▶ buttons (none: no buttons, the caller sets view.r); opts.label: a line above the
// tokens; opts.empty(L): the line shown where T has no rows at L. Nothing is fetched.
(function () {
  "use strict";

  function decode(b64, bytes) {
    const text = atob(b64), out = new Uint8Array(text.length);
    for (let c = 0; c < text.length; c++) out[c] = text.charCodeAt(c);
    return bytes === 4 ? new Uint32Array(out.buffer) : new Uint16Array(out.buffer);
  }

  function esc(s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }

  function view(box, T, layers, heads, opts) {
    opts = opts || {};
    T = T || {};
    const cache = {};
    const state = { layer: null, head: null, L: null, r: 0 };

    function packed(what, L, i, bytes) {
      const key = `${what}/${L}/${i}`;
      if (!cache[key]) cache[key] = decode(T.lengths[L][what][i], bytes);
      return cache[key];
    }

    // The sampled rows of head (i, j) at L: [{row, seen, keys, weights, full}], keys ascending.
    function rowsOf(L, i, j) {
      const p = T.lengths && T.lengths[L];
      if (!p || i < 0 || j < 0) return null;
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
      const L = String(state.L), label = opts.label ? `<b>${esc(opts.label)}</b>: ` : "";
      const rows = rowsOf(L, layers.indexOf(state.layer), heads.indexOf(state.head));
      if (!rows) {
        const empty = opts.empty ? opts.empty(L) : `No token rows at L = ${L}.`;
        box.innerHTML = `<p class="note">${label}${esc(empty)}</p>`;
        return;
      }
      state.r = Math.min(Math.max(state.r, 0), rows.length - 1);
      const row = rows[state.r], top = Math.max(...row.weights, 1e-12);
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
      const p = opts.steps;
      const buttons = p ? `<button id="${p}-prev">◀</button> <button id="${p}-next">▶</button> `
        : "";
      box.innerHTML = `<div class="tok-head">${buttons}${label}<b>layer ${state.layer}, ` +
        `head ${state.head}, L = ${L}: query row ${state.r + 1} of ${rows.length}</b> ` +
        `(position ${row.row}, outlined), ${what}; shade: weight / the row's largest; hover a ` +
        `token for its weight.</div><div class="tok-text">${parts.join("")}</div>`;
      if (p) {
        const prev = box.querySelector(`#${p}-prev`), next = box.querySelector(`#${p}-next`);
        prev.disabled = state.r === 0;
        next.disabled = state.r === rows.length - 1;
        prev.onclick = () => { state.r -= 1; render(); };
        next.onclick = () => { state.r += 1; render(); };
      }
    }

    function show(layer, head, L) {
      if (state.layer !== layer || state.head !== head || state.L !== Number(L)) state.r = 0;
      Object.assign(state, { layer: layer, head: head, L: Number(L) });
      render();
    }

    function use(data) {  // other rows over the same text (another normaliser's)
      T = data || {};
      for (const k of Object.keys(cache)) delete cache[k];
    }

    return { show: show, render: render, rowsOf: rowsOf, use: use, view: state, opts: opts };
  }

  window.attnlimitsTokens = { view: view, decode: decode };
})();

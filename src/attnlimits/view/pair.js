// The pair page's glue (attnlimits view A B). When both runs' pages expose layer × head grids
// (window.attnlimitsView.grids: model, layers, heads, lengths, metrics [{col, title, scale}],
// cells[L][col][i][j], none[L][col][i][j] > 0 where "none found"), it draws A and B on one
// colour scale and B − A, heads matched by (layer, head), on the layers, heads, lengths and
// diagnostics both have, and says what only one has. Pages without grids: the section goes.
// The address keeps the choice (#metric=…&L=…, view/address.js): a link opens on it.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const FRAMES = ["page-a", "page-b"];
  const NONE = { color: "#ffffff", glyph: "∅", name: "none found" };
  const NOT_COMPUTED = { color: "#a8a8a8", glyph: "–", name: "not computed" };
  const state = { metric: null, length: null };
  const started = Date.now();
  let A = null, B = null, S = null;

  function views() {
    return FRAMES.map((id) => {
      try { return $(id).contentWindow.attnlimitsView; } catch (e) { return undefined; }
    });
  }

  const has = (list) => { const s = new Set(list.map(String)); return (v) => s.has(String(v)); };
  const common = (a, b) => a.filter(has(b));
  const only = (a, b) => a.filter((v) => !has(b)(v));

  function shared() {
    const cols = common(A.metrics.map((m) => m.col), B.metrics.map((m) => m.col));
    return { layers: common(A.layers, B.layers), heads: common(A.heads, B.heads),
      lengths: common(A.lengths, B.lengths).map(String),
      metrics: A.metrics.filter((m) => cols.includes(m.col)) };
  }

  function unshared() {
    const parts = [];
    const title = (D) => D.metrics.map((m) => m.title);
    for (const [what, a, b] of [["layers", A.layers, B.layers], ["heads", A.heads, B.heads],
      ["lengths L =", A.lengths, B.lengths], ["diagnostics", title(A), title(B)]]) {
      const inA = only(a, b), inB = only(b, a);
      if (inA.length) parts.push(`${what} ${inA.join(", ")} only in A`);
      if (inB.length) parts.push(`${what} ${inB.join(", ")} only in B`);
    }
    return parts;
  }

  // Per shared (layer, head): the value in D, "none" (none found) or "nc" (not computed).
  function grid(D) {
    const L = state.length, col = state.metric;
    const none = D.none && D.none[L] && D.none[L][col], cells = D.cells[L] && D.cells[L][col];
    return S.layers.map((layer) => {
      const i = D.layers.indexOf(layer);
      return S.heads.map((head) => {
        const j = D.heads.indexOf(head);
        if (none && none[i][j] > 0) return "none";
        const v = cells ? cells[i][j] : null;
        return v === null || v === undefined ? "nc" : v;
      });
    });
  }

  const num = (v) => typeof v === "number";
  const fmt = (v) => (num(v) ? Number(v).toPrecision(4) : v === "none" ? NONE.name :
    NOT_COMPUTED.name);

  // The marked cells of g ("none found", "not computed"), as a heatmap over the values.
  function categories(g, text) {
    const z = g.map((r) => r.map((v) => (v === "none" ? 0 : v === "nc" ? 1 : null)));
    return { type: "heatmap", name: "categories", x: S.heads, y: S.layers, z: z, zmin: 0,
      zmax: 1, showscale: false, xgap: 1, ygap: 1, hoverongaps: false,
      colorscale: [[0, NONE.color], [0.5, NONE.color], [0.5, NOT_COMPUTED.color],
        [1, NOT_COMPUTED.color]],
      text: z.map((r) => r.map((c) => (c === 0 ? NONE.glyph : c === 1 ? NOT_COMPUTED.glyph :
        ""))), texttemplate: "%{text}", customdata: text,
      hovertemplate: "%{customdata}<extra></extra>" };
  }

  // The title starts below the toolbar (modebar), as on the runs' pages.
  function layout(title, note) {
    const text = title + (note ? `<br><span style="font-size:11px;color:#555">${note}</span>` :
      "");
    return { title: { text: text, font: { size: 13 }, x: 0, xanchor: "left", xref: "container",
      y: 1, yref: "container", yanchor: "top", pad: { t: 42, l: 10 } },
      margin: { t: note ? 88 : 72, l: 60, r: 20, b: 50 },
      xaxis: { title: { text: "head" }, dtick: S.heads.length > 16 ? 2 : 1, zeroline: false },
      yaxis: { title: { text: "layer" }, autorange: "reversed", zeroline: false },
      plot_bgcolor: "#eeeeee" };
  }

  function draw() {
    const L = state.length, meta = S.metrics.find((m) => m.col === state.metric);
    const ga = grid(A), gb = grid(B);
    let lo = Infinity, hi = -Infinity;  // one scale: every shared head of both runs
    for (const g of [ga, gb]) {
      g.forEach((r) => r.forEach((v) => {
        if (num(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      }));
    }
    if (!(lo <= hi)) { lo = 0; hi = 1; }
    if (hi === lo) hi = lo + 1e-9;
    const hover = (fn) => S.layers.map((layer, i) => S.heads.map((head, j) =>
      `<b>layer ${layer}, head ${head}, L = ${L}</b><br>${meta.title}<br>${fn(i, j)}`));
    const plots = [["A", ga, "pair-a"], ["B", gb, "pair-b"]].map(([tag, g, id]) => {
      const text = hover((i, j) => `${tag}: ${fmt(g[i][j])}`);
      const heat = { type: "heatmap", name: tag, x: S.heads, y: S.layers, xgap: 1, ygap: 1,
        z: g.map((r) => r.map((v) => (num(v) ? v : null))), zmin: lo, zmax: hi, zauto: false,
        colorscale: meta.scale, text: text, hoverinfo: "text", hoverongaps: false,
        colorbar: { title: { text: state.metric } } };
      const D = tag === "A" ? A : B;
      return Plotly.react(id, [heat, categories(g, text)],
        layout(`${tag} (${D.model}): ${meta.title}, L = ${L}`), { responsive: true });
    });
    const diff = ga.map((r, i) => r.map((v, j) => (num(v) && num(gb[i][j]) ? gb[i][j] - v :
      null)));
    let m = 0;
    diff.forEach((r) => r.forEach((v) => { if (v !== null) m = Math.max(m, Math.abs(v)); }));
    const text = hover((i, j) => `<b>B − A: ${diff[i][j] === null ? "–" :
      fmt(diff[i][j])}</b><br>A: ${fmt(ga[i][j])}<br>B: ${fmt(gb[i][j])}`);
    const marks = ga.map((r, i) => r.map((v, j) => (diff[i][j] !== null ? null :
      v === "none" || gb[i][j] === "none" ? "none" : "nc")));
    const heat = { type: "heatmap", name: "B − A", x: S.heads, y: S.layers, z: diff,
      xgap: 1, ygap: 1, zmin: -(m || 1e-9), zmax: m || 1e-9, zmid: 0, zauto: false,
      colorscale: "RdBu", text: text, hoverinfo: "text",  // plotly's RdBu: blue low, red high
      hoverongaps: false, colorbar: { title: { text: "B − A" } } };
    plots.push(Plotly.react("pair-diff", [heat, categories(marks, text)],
      layout(`B − A: ${meta.title}, L = ${L}`, "red: B higher, blue: A higher; ∅ / –: none " +
        "found / not computed in A or B, no difference drawn"), { responsive: true }));
    return Promise.all(plots);
  }

  function fill(id, values, label) {
    $(id).replaceChildren(...values.map((v, k) => new Option(label[k], v)));
  }

  function drop(note) {  // no grids to align: the section and its contents entry go
    const section = $("pair-grids");
    const link = document.querySelector('a[href="#pair-grids-title"]');
    if (link && link.parentElement) link.parentElement.remove();
    if (section) section.remove();
    window.attnlimitsPair = { ready: true, grids: false, note: note };
  }

  function start() {
    const v = views();
    A = v[0] && v[0].grids; B = v[1] && v[1].grids;
    if (!A || !B) { drop("the pages show no layer × head grids"); return; }
    S = shared();
    const missing = unshared();
    const sameShape = missing.length ? `Not compared: ${missing.join("; ")}.` :
      "Both runs have the same layers, heads, lengths and diagnostics.";
    $("pair-shared").textContent = `Heads matched by (layer, head): ${S.layers.length} ` +
      `layers × ${S.heads.length} heads, L = ${S.lengths.join(", ") || "none"} in both. ` +
      sameShape;
    if (!S.layers.length || !S.heads.length || !S.lengths.length || !S.metrics.length) {
      $("pair-shared").textContent += " Nothing to align.";
      window.attnlimitsPair = { ready: true, grids: true, shared: S, unshared: missing };
      return;
    }
    fill("pair-metric", S.metrics.map((m) => m.col), S.metrics.map((m) => m.title));
    fill("pair-length", S.lengths, S.lengths);
    const h = window.attnlimitsAddress.get();  // a link's choice (metric, L), if both have it
    state.metric = S.metrics.some((m) => m.col === h.metric) ? h.metric : S.metrics[0].col;
    state.length = S.lengths.includes(h.L) ? h.L : S.lengths[S.lengths.length - 1];
    $("pair-metric").value = state.metric;
    $("pair-length").value = state.length;
    const keep = () => window.attnlimitsAddress.set({ metric: state.metric, L: state.length });
    for (const [id, key] of [["pair-metric", "metric"], ["pair-length", "length"]]) {
      $(id).addEventListener("change", (e) => { state[key] = e.target.value; keep(); draw(); });
    }
    if (h.metric !== undefined || h.L !== undefined) keep();  // what was kept of the link
    draw().then(() => {
      window.attnlimitsPair = { ready: true, grids: true, state: state, draw: draw, shared: S,
        unshared: missing };
    });
  }

  function poll() {
    const v = views();
    if (v.every((x) => x && x.ready)) { start(); return; }
    if (Date.now() - started > 120000) { drop("a page never became ready"); return; }
    setTimeout(poll, 100);
  }
  poll();
})();

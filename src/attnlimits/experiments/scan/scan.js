// The scan page's glue: draws window.SCAN (scan_data) with Plotly and keeps the selectors,
// filters, the address (#layer=…&head=…&metric=…&L=…) and the clicked head's views in step.
// Nothing is fetched. Encodings: the colour scale spans every head at this L whatever the
// filters (unless "rescale" is ticked); filtered-out heads are blank; "none found" and "not
// computed" are their own marked cells, never a colour of the scale. window.attnlimitsView.grids
// (SCAN itself) is what `attnlimits view A B` aligns (view/pair.js).
(function () {
  "use strict";
  const D = window.SCAN;
  const $ = (id) => document.getElementById(id);
  const SYMBOLS = ["x", "circle", "triangle-up", "diamond", "star", "square"];
  const NONE = { color: "#ffffff", glyph: "∅", name: "none found (no N of the grid passes)" };
  const NOT_COMPUTED = { color: "#a8a8a8", glyph: "–", name: "not computed at this L" };
  const BLANK = "#eeeeee";  // the plot's background: filtered-out heads
  // The short tooltip: (column, readable name, value with its unit).
  const TIPS = [
    ["max_weight", "max weight", (v) => fmt(v)],
    ["sink_mass", "sink mass (first token)", (v) => fmt(v)],
    ["entropy", "entropy H", (v) => `${fmt(v)} nats`],
    ["support_fraction", "active set exp(H)/keys", (v) => `${(100 * v).toPrecision(3)} %`],
    ["jacobian_norm", "‖J‖₂ at T = 1", (v) => fmt(v)],
    ["critical_n", "critical N of the layer", (v, L) => `${v} tokens (${fmt(v / L)} L)`],
  ];
  const hash = fromHash();
  const last = String(D.lengths[D.lengths.length - 1]);
  const metricOk = (m) => m === "kind" || D.metrics.some((x) => x.col === m);
  const state = { metric: metricOk(hash.metric) ? hash.metric : $("metric").value,
    length: D.lengths.includes(Number(hash.L)) ? String(Number(hash.L)) : last,
    kind: "", flag: "", rescale: false, clicked: null };

  function fromHash() {
    return window.attnlimitsAddress.get();
  }

  function toHash() {  // the scan's keys; the tables' keep theirs (view/address.js)
    const c = state.clicked;
    window.attnlimitsAddress.set({ metric: state.metric, L: state.length,
      layer: c ? c.layer : null, head: c ? c.head : null });
  }

  function fmt(v) {
    if (v === null || v === undefined) return "–";
    if (Number.isInteger(v)) return String(v);
    return Number(v).toPrecision(4);
  }

  function kindOf(L, i, j) {
    const g = D.kind[L];
    const k = g ? g[i][j] : null;
    return k === null || k === undefined ? "" : D.kinds[k];
  }

  function flagsOf(L, i, j) {
    return D.flags.filter((f) => D.flagged[L][f.col][i][j] > 0).map((f) => f.name);
  }

  // "none", "not computed" or "value" for column col of head (i, j) at L.
  function status(L, col, i, j) {
    if (D.none && D.none[L] && D.none[L][col] && D.none[L][col][i][j] > 0) return "none";
    const v = D.cells[L][col] ? D.cells[L][col][i][j] : null;
    return v === null || v === undefined ? "not computed" : "value";
  }

  function shown(L, col, i, j, unit) {
    const s = status(L, col, i, j);
    if (s === "none") return "none found";
    if (s === "not computed") return "not computed";
    return unit ? unit(D.cells[L][col][i][j], Number(L)) : fmt(D.cells[L][col][i][j]);
  }

  function keep(L, i, j) {
    if (state.kind !== "" && !(D.kind[L] && String(D.kind[L][i][j]) === state.kind)) return false;
    const flags = flagsOf(L, i, j);
    if (state.flag === "any") return flags.length > 0;
    if (state.flag === "none") return flags.length === 0;
    if (state.flag !== "") return D.flagged[L][state.flag][i][j] > 0;
    return true;
  }

  function tooltip(L) {
    const meta = D.metrics.find((m) => m.col === state.metric);
    return D.layers.map((layer, i) => D.heads.map((head, j) => {
      const lines = [`<b>layer ${layer}, head ${head}, L = ${L}</b>`,
        `kind: ${kindOf(L, i, j) || "–"} · flags: ${flagsOf(L, i, j).join(", ") || "none"}`];
      if (meta && !TIPS.some((t) => t[0] === meta.col)) {
        lines.push(`<b>${meta.title}: ${shown(L, meta.col, i, j)}</b>`);
      }
      for (const [col, name, unit] of TIPS) {
        if (!D.columns.includes(col)) continue;
        const line = `${name}: ${shown(L, col, i, j, unit)}`;
        lines.push(meta && meta.col === col ? `<b>${line}</b>` : line);
      }
      lines.push("<i>click for its tokens and every number</i>");
      return lines.join("<br>");
    }));
  }

  function kindScale() {
    const n = D.kinds.length, out = [];
    D.kindColors.forEach((c, k) => { out.push([k / n, c], [(k + 1) / n, c]); });
    return out;
  }

  // [min, max] of col at L over every head, or over the heads the filters keep.
  function range(L, col, filtered) {
    let lo = Infinity, hi = -Infinity;
    D.layers.forEach((_, i) => D.heads.forEach((_, j) => {
      const v = D.cells[L][col][i][j];
      if (v === null || (filtered && !keep(L, i, j))) return;
      lo = Math.min(lo, v); hi = Math.max(hi, v);
    }));
    return lo <= hi ? [lo, hi === lo ? lo + 1e-9 : hi] : [0, 1];
  }

  function legendSquare(name, color) {
    return { type: "scatter", mode: "markers", x: [null], y: [null], name: name,
      hoverinfo: "skip", marker: { symbol: "square", size: 12, color: color,
        line: { width: 1, color: "#333" } } };
  }

  function draw() {
    const L = state.length, isKind = state.metric === "kind";
    const src = isKind ? D.kind[L] : D.cells[L][state.metric];
    const text = tooltip(L);
    const z = D.layers.map((_, i) => D.heads.map((_, j) =>
      keep(L, i, j) && src ? src[i][j] : null));
    const meta = D.metrics.find((m) => m.col === state.metric);
    const heat = { type: "heatmap", x: D.heads, y: D.layers, z: z, text: text,
      hoverinfo: "text", hoverongaps: false, name: isKind ? "kind" : state.metric,
      xgap: 1, ygap: 1 };
    const traces = [heat];
    let counts = { none: 0, nc: 0 };
    if (isKind) {
      Object.assign(heat, { colorscale: kindScale(), zmin: -0.5, zmax: D.kinds.length - 0.5,
        colorbar: { tickvals: D.kinds.map((_, k) => k), ticktext: D.kinds } });
    } else {
      const [lo, hi] = range(L, state.metric, state.rescale);
      Object.assign(heat, { colorscale: meta ? meta.scale : "Viridis", zmin: lo, zmax: hi,
        zauto: false, colorbar: { title: { text: state.metric } } });
      const cat = D.layers.map((_, i) => D.heads.map((_, j) => {
        if (!keep(L, i, j)) return null;
        const s = status(L, state.metric, i, j);
        if (s === "none") { counts.none += 1; return 0; }
        if (s === "not computed") { counts.nc += 1; return 1; }
        return null;
      }));
      const glyph = cat.map((r) => r.map((c) => (c === 0 ? NONE.glyph : c === 1 ?
        NOT_COMPUTED.glyph : "")));
      traces.push({ type: "heatmap", name: "categories", x: D.heads, y: D.layers, z: cat,
        zmin: 0, zmax: 1, showscale: false, xgap: 1, ygap: 1, hoverongaps: false,
        colorscale: [[0, NONE.color], [0.5, NONE.color], [0.5, NOT_COMPUTED.color],
          [1, NOT_COMPUTED.color]], text: glyph, texttemplate: "%{text}",
        customdata: text, hovertemplate: "%{customdata}<extra></extra>" });
      if (counts.none) traces.push(legendSquare(`${NONE.glyph} ${NONE.name}`, NONE.color));
      if (counts.nc) {
        traces.push(legendSquare(`${NOT_COMPUTED.glyph} ${NOT_COMPUTED.name}`,
          NOT_COMPUTED.color));
      }
    }
    let kept = 0;
    D.layers.forEach((_, i) => D.heads.forEach((_, j) => { kept += keep(L, i, j) ? 1 : 0; }));
    if (kept < D.layers.length * D.heads.length) traces.push(legendSquare("filtered out", BLANK));
    D.flags.forEach((f, k) => {
      const xs = [], ys = [];  // a flag most heads raise starts hidden (legend: click to show)
      D.layers.forEach((layer, i) => D.heads.forEach((head, j) => {
        if (D.flagged[L][f.col][i][j] > 0 && keep(L, i, j)) { xs.push(head); ys.push(layer); }
      }));
      const common = xs.length > 0.5 * D.layers.length * D.heads.length;
      traces.push({ type: "scatter", mode: "markers", x: xs, y: ys, name: f.name,
        visible: common ? "legendonly" : true, hoverinfo: "skip",  // never hides the head
        marker: { symbol: SYMBOLS[k % SYMBOLS.length], size: 8, color: "white",
          line: { width: 1, color: "black" } } });  // seen on dark and light cells
    });
    const what = isKind ? "head kind" : (meta ? meta.title : state.metric);
    const title = `${D.model}: ${what}, L = ${L}`;
    const filters = [state.kind !== "" ? `kind ${D.kinds[Number(state.kind)]}` : "",
      state.flag === "" ? "" : state.flag === "any" ? "flagged" : state.flag === "none" ?
        "not flagged" : `flag ${state.flag.slice(5)}`].filter((s) => s).join(", ");
    $("empty").textContent = kept ? "" : `No head at L = ${L} matches the filters ` +
      `(${filters}): nothing to draw.`;
    const layout = { title: { text: title, y: 0.98 }, margin: { t: 80, l: 60, r: 20, b: 50 },
      xaxis: { title: { text: "head" }, dtick: D.heads.length > 16 ? 2 : 1, zeroline: false },
      yaxis: { title: { text: "layer" }, autorange: "reversed", zeroline: false },
      legend: { orientation: "h", x: 0, y: 1.0, yanchor: "bottom" }, plot_bgcolor: BLANK,
      annotations: kept ? [] : [{ text: `no head matches: ${filters}`, showarrow: false,
        xref: "paper", yref: "paper", x: 0.5, y: 0.5, font: { size: 16, color: "#a33" } }] };
    toHash();
    return Plotly.react("main", traces, layout, { responsive: true });
  }

  function patternOf(L, i, j) {
    const p = D.patterns[L];
    if (!p) return null;
    const all = window.ScanTokens.pattern(L, i), R = p.rows.length, B = p.bins, z = [];
    for (let r = 0; r < R; r++) {
      const start = (j * R + r) * B;
      z.push(Array.from(all.subarray(start, start + B), (v) => v / 65535));
    }
    const keys = Array.from({ length: B }, (_, b) => Math.floor((b * Number(L)) / B));
    return { z: z, x: keys, y: p.rows, keys: p.keys };
  }

  function thumbs(layer) {
    $("thumb-layer").value = String(layer);
    window.ScanTokens.thumbs(layer, state.length, showHead);
    const c = state.clicked;
    document.querySelectorAll("#thumbs canvas").forEach((el) => el.classList.toggle("picked",
      c !== null && Number(el.dataset.layer) === c.layer && Number(el.dataset.head) === c.head));
  }

  function showHead(layer, head) {
    const i = D.layers.indexOf(layer), j = D.heads.indexOf(head), L = state.length;
    if (i < 0 || j < 0) return;
    state.clicked = { layer: layer, head: head };
    toHash();
    window.ScanTokens.show(layer, head, L);
    thumbs(layer);
    const pat = patternOf(L, i, j);
    if (pat) {
      Plotly.react("pattern", [{ type: "heatmap", z: pat.z, x: pat.x, y: pat.y,
        colorscale: [[0, "#ffffff"], [0.25, "#9ecae1"], [1, "#08306b"]], hovertemplate: "query row %{y}<br>keys from %{x}<br>weight %{z:.4f}<extra></extra>" }],
      { title: { text: `layer ${layer}, head ${head}: weights of ${pat.y.length} rows, L = ${L}` },
        xaxis: { title: { text: "key (bin start)" } }, yaxis: { title: { text: "query row" },
          autorange: "reversed" }, margin: { t: 50, l: 60, r: 20, b: 50 } });
      $("head-note").textContent = `Pattern: the first window's sampled query rows; weights summed ` +
        `into ${pat.x.length} equal key bins (each row sums to 1).`;
    } else {
      Plotly.purge("pattern");
      $("pattern").innerHTML = "";
      $("head-note").textContent = `No pattern stored at L = ${L}: rows are materialised only up ` +
        `to the scan's analysis_max_length; the streamed statistics over L are shown instead.`;
    }
    const lines = ["max_weight", "entropy_norm", "sink_mass", "support_fraction", "prev_token",
      "local_mass"].filter((c) => D.columns.includes(c)).map((c) => ({ type: "scatter",
      mode: "lines+markers", name: c, x: D.lengths,
      y: D.lengths.map((n) => D.cells[String(n)][c][i][j]) }));
    Plotly.react("lengths-plot", lines, { title: { text: `layer ${layer}, head ${head} over L` },
      xaxis: { title: { text: "L (tokens)" }, type: "log" }, yaxis: { range: [0, 1] },
      margin: { t: 50, l: 50, r: 20, b: 50 } });
    const head_row = "<tr><th>column</th>" + D.lengths.map((n) => `<th>L = ${n}</th>`).join("") + "</tr>";
    const rows = D.columns.filter((c) => D.lengths.some((n) => status(String(n), c, i, j) !==
      "not computed")).map((c) => `<tr><td>${c}</td>` + D.lengths.map((n) =>
      `<td>${shown(String(n), c, i, j)}</td>`).join("") + "</tr>");
    $("head-table").innerHTML = `<h3>layer ${layer}, head ${head}: every number</h3>` +
      `<div class="scroll"><table>${head_row}${rows.join("")}</table></div>`;
  }

  function openHead(h) {
    const layer = Number(h.layer), head = Number(h.head);
    if (h.layer === undefined || !D.layers.includes(layer) || !D.heads.includes(head)) return false;
    showHead(layer, head);
    return true;
  }

  function bind(id, key, value) {
    $(id).addEventListener("change", (e) => {
      state[key] = value ? value(e.target) : e.target.value;
      draw();
      if (key === "length" && state.clicked) showHead(state.clicked.layer, state.clicked.head);
      else if (key === "length") thumbs(Number($("thumb-layer").value));
    });
  }

  $("metric").value = state.metric;
  $("length").value = state.length;
  bind("metric", "metric");
  bind("length", "length");
  bind("kind-filter", "kind");
  bind("flag-filter", "flag");
  bind("rescale", "rescale", (el) => el.checked);
  $("thumb-layer").addEventListener("change", (e) => thumbs(Number(e.target.value)));
  draw().then(() => {
    $("main").on("plotly_click", (ev) => {
      const pt = ev.points[0];
      showHead(Number(pt.y), Number(pt.x));
    });
    if (!openHead(hash)) thumbs(D.layers[0]);
    window.addEventListener("hashchange", () => {  // a link to a view, followed on the page
      const h = fromHash();
      if (h.metric === undefined && h.L === undefined && h.layer === undefined) return;
      if (metricOk(h.metric)) state.metric = $("metric").value = h.metric;
      if (D.lengths.includes(Number(h.L))) state.length = $("length").value = String(Number(h.L));
      draw();
      openHead(h);
    });
    window.attnlimitsView = { state: state, draw: draw, showHead: showHead, grids: D,
      ready: true };
  });
})();

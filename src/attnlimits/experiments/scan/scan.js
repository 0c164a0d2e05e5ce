// The scan page's glue: draws window.SCAN (attnlimits.view.scan.scan_data) with Plotly and keeps
// the selectors, filters and the clicked head's views in step. Nothing is fetched.
(function () {
  "use strict";
  const D = window.SCAN;
  const $ = (id) => document.getElementById(id);
  const SYMBOLS = ["x", "circle", "triangle-up", "diamond", "star", "square"];
  const state = { metric: $("metric").value, length: String(D.lengths[D.lengths.length - 1]),
    kind: "", flag: "", clicked: null };
  const decoded = {};

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

  function keep(L, i, j) {
    if (state.kind !== "" && !(D.kind[L] && String(D.kind[L][i][j]) === state.kind)) return false;
    const flags = flagsOf(L, i, j);
    if (state.flag === "any") return flags.length > 0;
    if (state.flag === "none") return flags.length === 0;
    if (state.flag !== "") return D.flagged[L][state.flag][i][j] > 0;
    return true;
  }

  function hoverText(L) {
    const cells = D.cells[L];
    return D.layers.map((layer, i) => D.heads.map((head, j) => {
      const lines = [`<b>layer ${layer}, head ${head}, L = ${L}</b>`,
        `kind: ${kindOf(L, i, j) || "–"}`, `flags: ${flagsOf(L, i, j).join(", ") || "none"}`];
      for (const c of D.columns) lines.push(`${c}: ${fmt(cells[c][i][j])}`);
      return lines.join("<br>");
    }));
  }

  function kindScale() {
    const n = D.kinds.length, out = [];
    D.kindColors.forEach((c, k) => { out.push([k / n, c], [(k + 1) / n, c]); });
    return out;
  }

  function draw() {
    const L = state.length, isKind = state.metric === "kind";
    const src = isKind ? D.kind[L] : D.cells[L][state.metric];
    const z = D.layers.map((_, i) => D.heads.map((_, j) =>
      keep(L, i, j) && src ? src[i][j] : null));
    const meta = D.metrics.find((m) => m.col === state.metric);
    const heat = { type: "heatmap", x: D.heads, y: D.layers, z: z, text: hoverText(L),
      hoverinfo: "text", name: isKind ? "kind" : state.metric, xgap: 1, ygap: 1 };
    if (isKind) {
      Object.assign(heat, { colorscale: kindScale(), zmin: -0.5, zmax: D.kinds.length - 0.5,
        colorbar: { tickvals: D.kinds.map((_, k) => k), ticktext: D.kinds } });
    } else {
      Object.assign(heat, { colorscale: meta ? meta.scale : "Viridis",
        colorbar: { title: { text: state.metric } } });
    }
    const traces = [heat];
    D.flags.forEach((f, k) => {
      const xs = [], ys = [];  // a flag most heads raise starts hidden (legend: click to show)
      D.layers.forEach((layer, i) => D.heads.forEach((head, j) => {
        if (D.flagged[L][f.col][i][j] > 0 && keep(L, i, j)) { xs.push(head); ys.push(layer); }
      }));
      const common = xs.length > 0.5 * D.layers.length * D.heads.length;
      traces.push({ type: "scatter", mode: "markers", x: xs, y: ys, name: f.name,
        visible: common ? "legendonly" : true,
        hovertext: xs.map(() => f.text), hoverinfo: "text",
        marker: { symbol: SYMBOLS[k % SYMBOLS.length], size: 8, color: "white",
          line: { width: 1, color: "black" } } });  // seen on dark and light cells
    });
    const title = `${D.model}: ${isKind ? "head kind" : (meta ? meta.title : state.metric)}, L = ${L}`;
    const layout = { title: { text: title, y: 0.98 }, margin: { t: 80, l: 60, r: 20, b: 50 },
      xaxis: { title: { text: "head" }, dtick: D.heads.length > 16 ? 2 : 1 },
      yaxis: { title: { text: "layer" }, autorange: "reversed" },
      legend: { orientation: "h", x: 0, y: 1.0, yanchor: "bottom" }, plot_bgcolor: "#eeeeee" };
    return Plotly.react("main", traces, layout, { responsive: true });
  }

  function patternOf(L, i, j) {
    const p = D.patterns[L];
    if (!p) return null;
    const key = `${L}/${i}`;
    if (!decoded[key]) {  // one layer's heads, decoded on its first click
      const text = atob(p.data[i]), bytes = new Uint8Array(text.length);
      for (let c = 0; c < text.length; c++) bytes[c] = text.charCodeAt(c);
      decoded[key] = new Uint16Array(bytes.buffer);
    }
    const R = p.rows.length, B = p.bins, start = j * R * B, z = [];
    for (let r = 0; r < R; r++) {
      z.push(Array.from(decoded[key].subarray(start + r * B, start + (r + 1) * B), (v) => v / 65535));
    }
    const keys = Array.from({ length: B }, (_, b) => Math.floor((b * Number(L)) / B));
    return { z: z, x: keys, y: p.rows, keys: p.keys };
  }

  function showHead(layer, head) {
    const i = D.layers.indexOf(layer), j = D.heads.indexOf(head), L = state.length;
    if (i < 0 || j < 0) return;
    state.clicked = { layer: layer, head: head };
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
    const rows = D.columns.map((c) => `<tr><td>${c}</td>` + D.lengths.map((n) =>
      `<td>${fmt(D.cells[String(n)][c][i][j])}</td>`).join("") + "</tr>");
    $("head-table").innerHTML = `<h3>layer ${layer}, head ${head}: every number</h3>` +
      `<div class="scroll"><table>${head_row}${rows.join("")}</table></div>`;
  }

  function bind(id, key) {
    $(id).addEventListener("change", (e) => {
      state[key] = e.target.value;
      draw();
      if (key === "length" && state.clicked) showHead(state.clicked.layer, state.clicked.head);
    });
  }

  $("length").value = state.length;
  bind("metric", "metric");
  bind("length", "length");
  bind("kind-filter", "kind");
  bind("flag-filter", "flag");
  draw().then(() => {
    $("main").on("plotly_click", (ev) => {
      const pt = ev.points[0];
      showHead(Number(pt.y), Number(pt.x));
    });
    window.attnlimitsView = { state: state, draw: draw, showHead: showHead, ready: true };
  });
})();

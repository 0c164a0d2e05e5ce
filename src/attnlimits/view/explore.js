// The explorer's glue: draws window.EXPLORE (attnlimits.view.explore.explore_data): each preset
// (layers of lines per value of a grouping column, markers, intervals, a shaded x range; see
// attnlimits.view.presets) and a plot of any table's x, y and grouping. Every plot notes under
// its title the key columns its points average over and those fixed on it; its lines get
// distinct colours, dashes and open markers, so that equal lines stay visible. The explorer's
// choice is kept in the page's query (ex.table, ex.x, ex.y, ex.group, ex.and): a link reopens it.
(function () {
  "use strict";
  const D = window.EXPLORE;
  const $ = (id) => document.getElementById(id);
  const finite = (v) => v !== null && Number.isFinite(v);
  const COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8C564B",
    "#000000"];
  const DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"];
  const SYMBOLS = ["circle-open", "square-open", "diamond-open", "triangle-down-open",
    "hexagon-open", "star-open", "pentagon-open", "hourglass-open"];
  const byCols = (spec) => [].concat(spec.group || []).filter((c) => c);

  // Rows of the layer's table that pass its filters.
  function rows(spec) {
    const t = D.tables[spec.table], where = spec.where || {};
    const keys = Object.keys(where);
    return t.data[spec.x].map((_, i) => i).filter((i) => keys.every((k) => t.data[k][i] == where[k]));
  }

  // What the layer's points are: the key columns that differ between rows averaged into one
  // point (pooled), those with one value over all its rows (fixed), the most rows in a point,
  // and the range of its count column.
  function facts(spec, kept, points) {
    const t = D.tables[spec.table], skip = new Set([spec.x, ...byCols(spec), ...Object.keys(spec.where || {})]);
    const keys = (t.keys || []).filter((k) => !skip.has(k));
    const pooled = keys.filter((k) => points.some((p) => p.some((i) => t.data[k][i] !== t.data[k][p[0]])));
    const fixed = keys.filter((k) => kept.length && kept.every((i) => t.data[k][i] === t.data[k][kept[0]]))
      .map((k) => `${k}\u00a0=\u00a0${t.data[k][kept[0]]}`);
    const most = Math.max(0, ...points.map((p) => p.length));
    let count = null;
    if (spec.count) {
      const c = kept.map((i) => t.data[spec.count][i]).filter(finite);
      if (c.length) count = [Math.min(...c), Math.max(...c), spec.count];
    }
    return { pooled: pooled, fixed: fixed, most: most, count: count };
  }

  // One trace per (y column, group value); rows sharing an x are averaged (their count hovers),
  // or, with spec.raw, each row is a marker. low/high (or err) become error bars. Each trace
  // carries _style (its column's and group's index) for style(); spec.facts gets facts().
  function traces(spec) {
    const t = D.tables[spec.table], xs = t.data[spec.x], kept = rows(spec);
    const cols = Array.isArray(spec.y) ? spec.y : [spec.y];
    const by = byCols(spec);
    const groups = xs.map((_, i) => by.map((c) => String(t.data[c][i])).join(" · "));
    const order = [...new Set(kept.map((i) => groups[i]))];
    const numericX = t.numeric.includes(spec.x);
    const labels = spec.labels || {};
    const out = [], points = [];
    cols.forEach((col, ci) => {
      const ys = t.data[col];
      order.forEach((g, gi) => {
        const sums = new Map();
        for (const i of kept) {
          if (groups[i] !== g || !finite(ys[i])) continue;
          const s = sums.get(xs[i]) || { y: 0, n: 0, lo: 0, hi: 0, e: 0, all: [] };
          s.y += ys[i]; s.n += 1; s.all.push(i);
          if (spec.low) { s.lo += t.data[spec.low][i]; s.hi += t.data[spec.high][i]; }
          if (spec.err) s.e += t.data[spec.err][i];
          sums.set(xs[i], s);
        }
        let keys = [...sums.keys()];
        if (numericX) keys.sort((a, b) => a - b);
        const what = labels[col] || col;
        const name = (spec.name || [cols.length > 1 ? what : "", g].filter((s) => s).join(" · ") || what) +
          (spec.suffix || "");
        const trace = { type: numericX ? "scatter" : "bar", mode: spec.raw ? "markers" : "lines+markers",
          name: name, _style: { col: ci, group: gi, cols: cols.length, groups: order.length,
            ref: !!spec.dash, raw: !!spec.raw, curve: !!spec.lines, symbol: spec.symbol, label: g } };
        if (spec.raw) {  // every row its own marker
          const idx = keys.flatMap((k) => sums.get(k).all);
          Object.assign(trace, { x: idx.map((i) => xs[i]), y: idx.map((i) => ys[i]),
            marker: { size: spec.low ? 8 : 4, opacity: spec.low ? 1 : 0.4 },
            hovertemplate: `${name}<br>${spec.x} = %{x:.4g}<br>${what} = %{y:.4g}<extra></extra>` });
          if (spec.low) {
            const lo = idx.map((i) => t.data[spec.low][i]), hi = idx.map((i) => t.data[spec.high][i]);
            trace.error_y = { type: "data", symmetric: false, array: hi.map((h, j) => h - trace.y[j]),
              arrayminus: lo.map((l, j) => trace.y[j] - l) };
          }
          out.push(trace);
          return;
        }
        keys.forEach((k) => points.push(sums.get(k).all));
        const mean = keys.map((k) => sums.get(k).y / sums.get(k).n);
        const pooled = keys.some((k) => sums.get(k).n > 1);
        Object.assign(trace, { x: keys, y: mean, customdata: keys.map((k) => sums.get(k).n),
          hovertemplate: `${name}<br>${spec.x} = %{x}<br>${pooled ? "mean" : what} = %{y:.4g}` +
            (pooled ? " (%{customdata} rows)" : "") + "<extra></extra>" });
        if (spec.low) {
          const lo = keys.map((k) => sums.get(k).lo / sums.get(k).n);
          const hi = keys.map((k) => sums.get(k).hi / sums.get(k).n);
          trace.error_y = { type: "data", symmetric: false, array: hi.map((h, j) => h - mean[j]),
            arrayminus: lo.map((l, j) => mean[j] - l) };
        } else if (spec.err) {
          trace.error_y = { type: "data", array: keys.map((k) => sums.get(k).e / sums.get(k).n) };
        }
        out.push(trace);
      });
    });
    if (!spec.dash && !spec.raw) spec.facts = facts(spec, kept, points);
    return out;
  }

  // Distinct colour, dash and open marker per line (with several columns and groups: colour
  // per column, dash and marker per group); reference lines grey and dotted.
  function style(list) {
    let k = 0;
    const colors = new Map();  // a line's colour, for the markers of its group (raw, symbol)
    for (const tr of list) {
      const s = tr._style;
      if (s.ref || s.raw) continue;
      const both = s.cols > 1 && s.groups > 1;
      const c = both ? s.col : k, d = both ? s.group : k;
      const color = COLORS[c % COLORS.length];
      if (!colors.has(s.label)) colors.set(s.label, color);
      k += 1;
      if (tr.type === "bar") { tr.marker = { color: color }; continue; }
      tr.line = { color: color, width: 2, dash: DASHES[d % DASHES.length] };
      tr.marker = { color: color, symbol: SYMBOLS[d % SYMBOLS.length], size: 10 - 2 * ((k - 1) % 3),
        line: { width: 1.5, color: color } };
      if (s.curve) tr.marker.maxdisplayed = 14;
      if (tr.error_y) Object.assign(tr.error_y, { color: color, thickness: 1.2, width: 4 });
    }
    for (const tr of list) {
      const s = tr._style;
      delete tr._style;
      if (s.ref) { tr.line = { dash: "dot", color: "#555" }; tr.mode = "lines"; }
      else if (s.raw && s.symbol) {
        Object.assign(tr.marker, { symbol: s.symbol, size: 11, opacity: 1,
          color: colors.get(s.label) || "#555", line: { width: 1.5 } });
      } else if (s.raw) {  // points grey, summaries with intervals black: apart from the lines
        tr.marker.color = tr.error_y ? "#000" : "#888";
        if (tr.error_y) Object.assign(tr.marker, { symbol: "square" });
        if (tr.error_y) tr.error_y.color = "#000";
      }
    }
    return list;
  }

  // The note under a plot's title: what its points average over, what is fixed on it.
  function note(layers) {
    const got = layers.map((l) => l.facts).filter((f) => f);
    if (!got.length) return "";
    const pooled = [...new Set(got.flatMap((f) => f.pooled))];
    const fixed = [...new Set(got.flatMap((f) => f.fixed))];
    const most = Math.max(...got.map((f) => f.most));
    const parts = [];
    if (pooled.length) parts.push(`each point: the mean of up to ${most} rows, pooled over ${pooled.join(", ")}`);
    else if (most > 1) parts.push(`each point: the mean of up to ${most} rows`);
    if (fixed.length) parts.push(`fixed: ${fixed.join(", ")}`);
    for (const f of got) {
      if (f.count) {
        const [lo, hi, what] = f.count;
        parts.push(`rests on ${lo === hi ? lo : `${lo}–${hi}`} ${what} per point`);
      }
    }
    return [...new Set(parts)].join(" · ");
  }

  // The x range of the first layer's rows where spec.shade holds (training sizes or lengths).
  function shade(spec, first, logX) {
    const t = D.tables[first.table];
    const xs = rows(first).filter((i) => t.data[spec.shade][i]).map((i) => t.data[first.x][i]);
    if (!xs.length) return [];
    let x0 = Math.min(...xs), x1 = Math.max(...xs);
    [x0, x1] = logX ? [x0 / 1.15, x1 * 1.15] : [x0 - 0.5, x1 + 0.5];
    return [{ type: "rect", xref: "x", yref: "paper", x0: x0, x1: x1, y0: 0, y1: 1,
      fillcolor: "#888", opacity: 0.15, line: { width: 0 }, layer: "below" }];
  }

  // A long text over lines of at most `width` characters (Plotly does not wrap titles).
  function wrap(text, width) {
    const lines = [""];
    for (const word of String(text).split(" ")) {
      const last = lines[lines.length - 1];
      if (last && last.length + word.length >= (width || 64)) lines.push(word);
      else lines[lines.length - 1] = last ? `${last} ${word}` : word;
    }
    return lines.filter((l) => l);
  }

  // The title (and its note) start below the toolbar (modebar), the legend sits right of the
  // plot, clear of the axis titles.
  function layout(spec, first, about) {
    const t = D.tables[first.table], xs = t.data[first.x];
    const pos = t.numeric.includes(first.x) && xs.every((v) => v > 0);
    const wide = pos && Math.max(...xs) / Math.min(...xs) >= 16;
    const y = spec.ytitle || (Array.isArray(first.y) ? first.y.join(" and ") : first.y);
    const title = wrap(spec.title, 64), small = about ? wrap(about, 84) : [];
    const text = title.join("<br>") + (small.length ?
      `<br><span style="font-size:11px;color:#555">${small.join("<br>")}</span>` : "");
    return { title: { text: text, font: { size: 13 }, x: 0, xanchor: "left", xref: "container",
      y: 1, yref: "container", yanchor: "top", pad: { t: 42, l: 10 } },
      margin: { t: 52 + 17 * title.length + 14 * small.length, l: 64, r: 20, b: 48 },
      xaxis: { title: { text: spec.xtitle || first.x }, type: wide ? "log" : "-", automargin: true },
      yaxis: { title: { text: y }, type: spec.logy ? "log" : "-", automargin: true },
      shapes: spec.shade ? shade(spec, first, wide) : [],
      legend: { orientation: "v", x: 1.02, xanchor: "left", y: 1, yanchor: "top", font: { size: 11 },
        title: { text: byCols(first).join(" · ") } } };
  }

  function plot(id, spec) {
    const layers = spec.layers || [spec];
    const data = style(layers.flatMap(traces));
    return Plotly.react(id, data, layout(spec, layers[0], note(layers)));
  }

  const drawn = D.presets.map((spec) => plot(spec.id, spec));
  const state = D.start ? Object.assign({ and: null }, D.start) : null;
  const KEYS = [["ex-table", "table"], ["ex-x", "x"], ["ex-y", "y"], ["ex-group", "group"], ["ex-and", "and"]];

  function options(id, cols, value, none) {
    $(id).innerHTML = (none ? '<option value="">none</option>' : "") +
      cols.map((c) => `<option value="${c}">${c}</option>`).join("");
    $(id).value = value === null ? "" : value;
  }

  function fill() {
    const t = D.tables[state.table];
    const all = [...t.numeric, ...t.text];
    if (!all.includes(state.x)) state.x = t.numeric[0] || all[0];
    if (!t.numeric.includes(state.y)) state.y = t.numeric.find((c) => c !== state.x) || t.numeric[0];
    const by = [...t.text, ...(t.keys || []).filter((c) => t.numeric.includes(c) && c !== state.x)];
    if (state.group !== null && !by.includes(state.group)) state.group = t.text[0] || null;
    if (state.and !== null && (!by.includes(state.and) || state.and === state.group)) state.and = null;
    options("ex-x", all, state.x, false);
    options("ex-y", t.numeric, state.y, false);
    options("ex-group", by, state.group, true);
    options("ex-and", by, state.and, true);
  }

  // The explorer's choice into the page's query (the hash stays the anchor it was).
  function remember() {
    const q = new URLSearchParams(location.search);
    for (const [, key] of KEYS) {
      if (state[key]) q.set(`ex.${key}`, state[key]); else q.delete(`ex.${key}`);
    }
    history.replaceState(null, "", `${location.pathname}?${q.toString()}${location.hash}`);
  }

  function draw() {
    const spec = { table: state.table, x: state.x, y: state.y, group: [state.group, state.and],
      title: `${state.table}: ${state.y} against ${state.x}` };
    state.title = spec.title;
    return plot("explore", spec);
  }

  if (state) {
    const q = new URLSearchParams(location.search);
    if (D.tables[q.get("ex.table")]) {
      for (const [, key] of KEYS) state[key] = q.has(`ex.${key}`) ? q.get(`ex.${key}`) : null;
    }
    $("ex-table").value = state.table;
    fill();
    drawn.push(draw());
    $("ex-table").addEventListener("change", (e) => { state.table = e.target.value; fill(); remember(); draw(); });
    for (const [id, key] of KEYS.slice(1)) {
      $(id).addEventListener("change", (e) => { state[key] = e.target.value || null; fill(); remember(); draw(); });
    }
  }
  Promise.all(drawn).then(() => {
    window.attnlimitsExplore = { state: state, draw: draw, ready: true };
    if (!window.attnlimitsView) window.attnlimitsView = { ready: true };
  });
})();

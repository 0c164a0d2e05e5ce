// The explorer's glue: draws window.EXPLORE (attnlimits.view.explore.explore_data): each preset
// (layers of lines per value of a grouping column, markers, intervals, a shaded x range; see
// attnlimits.view.presets) and a plot of any table's x, y and grouping.
(function () {
  "use strict";
  const D = window.EXPLORE;
  const $ = (id) => document.getElementById(id);
  const finite = (v) => v !== null && Number.isFinite(v);

  // Rows of the layer's table that pass its filters.
  function rows(spec) {
    const t = D.tables[spec.table], where = spec.where || {};
    const keys = Object.keys(where);
    return t.data[spec.x].map((_, i) => i).filter((i) => keys.every((k) => t.data[k][i] == where[k]));
  }

  // One trace per (y column, group value); rows sharing an x are averaged (their count hovers),
  // or, with spec.raw, each row is a marker. low/high (or err) become error bars.
  function traces(spec) {
    const t = D.tables[spec.table], xs = t.data[spec.x], kept = rows(spec);
    const cols = Array.isArray(spec.y) ? spec.y : [spec.y];
    const groups = spec.group ? t.data[spec.group] : xs.map(() => "");
    const order = [...new Set(kept.map((i) => groups[i]))];
    const numericX = t.numeric.includes(spec.x);
    const out = [];
    for (const col of cols) {
      const ys = t.data[col];
      for (const g of order) {
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
        const name = spec.name || [cols.length > 1 ? col : "", String(g)].filter((s) => s).join(" · ") || col;
        const trace = { type: numericX ? "scatter" : "bar", mode: spec.raw ? "markers" : spec.lines ? "lines" : "lines+markers",
          name: name, line: spec.dash ? { dash: "dot", color: "#555" } : undefined };
        if (spec.raw) {  // every row its own marker
          const idx = keys.flatMap((k) => sums.get(k).all);
          Object.assign(trace, { x: idx.map((i) => xs[i]), y: idx.map((i) => ys[i]),
            marker: { size: spec.low ? 8 : 4, opacity: spec.low ? 1 : 0.4 },
            hovertemplate: `${name}<br>${spec.x} = %{x:.4g}<br>${col} = %{y:.4g}<extra></extra>` });
          if (spec.low) {
            const lo = idx.map((i) => t.data[spec.low][i]), hi = idx.map((i) => t.data[spec.high][i]);
            trace.error_y = { type: "data", symmetric: false, array: hi.map((h, j) => h - trace.y[j]),
              arrayminus: lo.map((l, j) => trace.y[j] - l) };
          }
          out.push(trace);
          continue;
        }
        const mean = keys.map((k) => sums.get(k).y / sums.get(k).n);
        Object.assign(trace, { x: keys, y: mean, customdata: keys.map((k) => sums.get(k).n),
          hovertemplate: `${name}<br>${spec.x} = %{x}<br>mean = %{y:.4g} (%{customdata} rows)<extra></extra>` });
        if (spec.low) {
          const lo = keys.map((k) => sums.get(k).lo / sums.get(k).n);
          const hi = keys.map((k) => sums.get(k).hi / sums.get(k).n);
          trace.error_y = { type: "data", symmetric: false, array: hi.map((h, j) => h - mean[j]),
            arrayminus: lo.map((l, j) => mean[j] - l) };
        } else if (spec.err) {
          trace.error_y = { type: "data", array: keys.map((k) => sums.get(k).e / sums.get(k).n) };
        }
        out.push(trace);
      }
    }
    return out;
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

  // A long title over lines of at most 64 characters (Plotly does not wrap titles).
  function wrap(text) {
    const lines = [""];
    for (const word of String(text).split(" ")) {
      const last = lines[lines.length - 1];
      if (last && last.length + word.length >= 64) lines.push(word);
      else lines[lines.length - 1] = last ? `${last} ${word}` : word;
    }
    return lines;
  }

  function layout(spec, first) {
    const t = D.tables[first.table], xs = t.data[first.x];
    const pos = t.numeric.includes(first.x) && xs.every((v) => v > 0);
    const wide = pos && Math.max(...xs) / Math.min(...xs) >= 16;
    const y = Array.isArray(first.y) ? first.y.join(", ") : first.y;
    const title = wrap(spec.title);
    return { title: { text: title.join("<br>"), font: { size: 13 } },
      margin: { t: 34 + 17 * title.length, l: 60, r: 20, b: 40 },
      xaxis: { title: { text: first.x }, type: wide ? "log" : "-" },
      yaxis: { title: { text: y }, type: spec.logy ? "log" : "-" },
      shapes: spec.shade ? shade(spec, first, wide) : [], legend: { orientation: "h", y: -0.25 } };
  }

  const drawn = D.presets.map((spec) =>
    Plotly.react(spec.id, spec.layers.flatMap(traces), layout(spec, spec.layers[0])));
  const state = D.start ? Object.assign({}, D.start) : null;

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
    if (state.group !== null && !t.text.includes(state.group)) state.group = t.text[0] || null;
    options("ex-x", all, state.x, false);
    options("ex-y", t.numeric, state.y, false);
    options("ex-group", t.text, state.group, true);
  }

  function draw() {
    state.title = `${state.table}: ${state.y} against ${state.x}`;
    return Plotly.react("explore", traces(state), layout(state, state));
  }

  if (state) {
    $("ex-table").value = state.table;
    fill();
    drawn.push(draw());
    $("ex-table").addEventListener("change", (e) => { state.table = e.target.value; fill(); draw(); });
    for (const [id, key] of [["ex-x", "x"], ["ex-y", "y"], ["ex-group", "group"]]) {
      $(id).addEventListener("change", (e) => { state[key] = e.target.value || null; draw(); });
    }
  }
  Promise.all(drawn).then(() => {
    window.attnlimitsExplore = { state: state, draw: draw, ready: true };
    if (!window.attnlimitsView) window.attnlimitsView = { ready: true };
  });
})();

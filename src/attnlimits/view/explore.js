// The explorer's glue: draws window.EXPLORE (attnlimits.view.explore.explore_data): each preset
// (one line per value of a grouping column) and a plot of any table's x, y and grouping.
(function () {
  "use strict";
  const D = window.EXPLORE;
  const $ = (id) => document.getElementById(id);

  // One line per (y column, group value); rows sharing an x are averaged (their count hovers).
  function traces(spec) {
    const t = D.tables[spec.table], xs = t.data[spec.x];
    const cols = Array.isArray(spec.y) ? spec.y : [spec.y];
    const groups = spec.group ? t.data[spec.group] : xs.map(() => "");
    const order = [...new Set(groups)];
    const numericX = t.numeric.includes(spec.x);
    const out = [];
    for (const col of cols) {
      const ys = t.data[col];
      for (const g of order) {
        const sums = new Map();
        xs.forEach((x, i) => {
          if (groups[i] !== g || ys[i] === null || !Number.isFinite(ys[i])) return;
          const s = sums.get(x) || [0, 0];
          sums.set(x, [s[0] + ys[i], s[1] + 1]);
        });
        const keys = [...sums.keys()];
        if (numericX) keys.sort((a, b) => a - b);
        const name = [cols.length > 1 ? col : "", String(g)].filter((s) => s).join(" · ") || col;
        out.push({ type: numericX ? "scatter" : "bar", mode: "lines+markers", name: name,
          x: keys, y: keys.map((k) => sums.get(k)[0] / sums.get(k)[1]),
          customdata: keys.map((k) => sums.get(k)[1]),
          hovertemplate: `${name}<br>${spec.x} = %{x}<br>mean = %{y:.4g} (%{customdata} rows)<extra></extra>` });
      }
    }
    return out;
  }

  function layout(spec) {
    const t = D.tables[spec.table], xs = t.data[spec.x];
    const pos = t.numeric.includes(spec.x) && xs.every((v) => v > 0);
    const wide = pos && Math.max(...xs) / Math.min(...xs) >= 16;
    return { title: { text: spec.title, font: { size: 13 } }, margin: { t: 50, l: 60, r: 20, b: 40 },
      xaxis: { title: { text: spec.x }, type: wide ? "log" : "-" }, yaxis: { title: { text: spec.y } },
      legend: { orientation: "h", y: -0.25 } };
  }

  const drawn = D.presets.map((spec, i) => Plotly.react(`preset-${i}`, traces(spec), layout(spec)));
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
    return Plotly.react("explore", traces(state), layout(state));
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

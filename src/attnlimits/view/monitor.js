// The monitor page's glue: draws window.MONITOR (attnlimits.view.monitor_page.monitor_data):
// a step × head heatmap of the chosen statistic and one line per head of the chosen layer,
// the collapse and dispersion warnings marked on both. Nothing is fetched.
(function () {
  "use strict";
  const D = window.MONITOR;
  const $ = (id) => document.getElementById(id);
  const state = { stat: $("stat").value, layer: Number($("layer").value) };
  const labels = D.heads.map(([l, h]) => `L${l} H${h}`);
  const MARKS = { collapsed: "x", dispersed: "circle-open" };

  function warningTraces(onLines) {
    return Object.entries(D.warnings).map(([kind, hits]) => {
      const shown = onLines ? hits.filter(([, l]) => l === state.layer) : hits;
      const y = onLines
        ? shown.map(([s, l, h]) => D.grids[state.stat][D.heads.findIndex(
          ([a, b]) => a === l && b === h)][D.steps.indexOf(s)])
        : shown.map(([, l, h]) => `L${l} H${h}`);
      return { type: "scatter", mode: "markers", name: kind, x: shown.map(([s]) => s), y: y,
        hovertext: shown.map(([s, l, h]) => `${kind} at step ${s}: layer ${l}, head ${h}`),
        hoverinfo: "text", marker: { symbol: MARKS[kind], size: 9, color: "black",
          line: { width: 1.5, color: kind === "collapsed" ? "#d62728" : "#1f77b4" } } };
    });
  }

  function draw() {
    const z = D.grids[state.stat];
    const heat = { type: "heatmap", x: D.steps, y: labels, z: z, colorscale: "Viridis",
      colorbar: { title: { text: state.stat } },
      hovertemplate: "%{y}, step %{x}<br>" + state.stat + " = %{z:.4g}<extra></extra>" };
    const main = Plotly.react("main", [heat, ...warningTraces(false)], {
      title: { text: `${state.stat} per head over training steps` },
      xaxis: { title: { text: "step" } }, yaxis: { autorange: "reversed", type: "category" },
      margin: { t: 50, l: 80, r: 20, b: 50 }, legend: { orientation: "h", y: 1.02, yanchor: "bottom" } });
    const lines = D.heads.map(([l, h], i) => [l, h, i]).filter(([l]) => l === state.layer)
      .map(([l, h, i]) => ({ type: "scatter", mode: "lines+markers", name: `head ${h}`,
        x: D.steps, y: z[i] }));
    const second = Plotly.react("lines", [...lines, ...warningTraces(true)], {
      title: { text: `${state.stat}, layer ${state.layer}: one line per head` },
      xaxis: { title: { text: "step" } }, yaxis: { title: { text: state.stat } },
      margin: { t: 50, l: 60, r: 20, b: 50 } });
    return Promise.all([main, second]);
  }

  $("stat").addEventListener("change", (e) => { state.stat = e.target.value; draw(); });
  $("layer").addEventListener("change", (e) => { state.layer = Number(e.target.value); draw(); });
  draw().then(() => { window.attnlimitsView = { state: state, draw: draw, ready: true }; });
})();

// The monitor page's token view: window.MONITOR_TOKENS (monitor_page._token_view) drawn by the
// token view (view/token_view.js) for the chosen step, layer and head; ◀ ▶ through the rows.
(function () {
  "use strict";
  const D = window.MONITOR_TOKENS;
  const $ = (id) => document.getElementById(id);
  const state = { step: String(D.steps[D.steps.length - 1]), layer: D.layers[0],
    head: D.heads[0] };
  const view = window.attnlimitsTokens.view($("monitor-tokens"), D.packed[state.step],
    D.layers, D.heads, { steps: "mt", empty: (L) => `No token rows at L = ${L}.` });

  function draw() {
    const T = D.packed[state.step];
    view.use(T);
    view.opts.label = `step ${state.step}`;
    view.show(state.layer, state.head, Object.keys(T.lengths)[0]);
  }

  for (const [id, key, cast] of [["mt-step", "step", String], ["mt-layer", "layer", Number],
    ["mt-head", "head", Number]]) {
    $(id).addEventListener("change", (e) => { state[key] = cast(e.target.value); draw(); });
  }
  $("mt-step").value = state.step;
  draw();
  window.monitorTokens = { state: state, view: view, draw: draw, ready: true };
})();

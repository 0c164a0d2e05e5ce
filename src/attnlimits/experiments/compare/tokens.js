// Compare's token view: window.COMPARE_TOKENS (compare/page.py) drawn as two token views
// (view/token_view.js), the left and right normalisers, for the chosen layer, head, length
// and query row; the right starts on the second normaliser (the first after the baseline).
(function () {
  "use strict";
  const D = window.COMPARE_TOKENS;
  const $ = (id) => document.getElementById(id);
  const make = (id) => window.attnlimitsTokens.view($(id), { text: D.text, lengths: {} },
    D.layers, D.heads, { empty: (L) => `No token rows at L = ${L}.` });
  const views = { a: make("ct-left"), b: make("ct-right") };
  const state = { layer: D.layers[0], head: D.heads[0], length: String(D.lengths[0]), r: 0,
    a: D.normalizers[0], b: D.normalizers[Math.min(1, D.normalizers.length - 1)] };

  function rows() {  // the query rows at this length (the same under every normaliser)
    const p = D.packed[state.a][state.length] || D.packed[state.b][state.length];
    return p ? p.rows : [];
  }

  function draw() {
    const positions = rows();
    $("ct-row").replaceChildren(...positions.map((pos, r) =>
      new Option(`${r + 1} (position ${pos})`, String(r))));
    state.r = Math.min(state.r, Math.max(positions.length - 1, 0));
    $("ct-row").value = String(state.r);
    for (const side of ["a", "b"]) {
      const v = views[side], spec = state[side];
      v.use({ text: D.text, lengths: D.packed[spec] || {} });
      v.opts.label = `${side === "a" ? "left" : "right"}: ${spec}`;
      v.show(state.layer, state.head, state.length);
      v.view.r = state.r;
      v.render();
    }
  }

  for (const [id, key, cast] of [["ct-layer", "layer", Number], ["ct-head", "head", Number],
    ["ct-length", "length", String], ["ct-row", "r", Number], ["ct-a", "a", String],
    ["ct-b", "b", String]]) {
    $(id).addEventListener("change", (e) => { state[key] = cast(e.target.value); draw(); });
  }
  $("ct-a").value = state.a;
  $("ct-b").value = state.b;
  draw();
  window.compareTokens = { state: state, views: views, draw: draw, ready: true };
})();

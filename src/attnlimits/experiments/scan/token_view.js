// The scan page's token view and thumbnails: window.SCAN.tokens drawn by the renderer's token
// view (view/token_view.js: the query outlined, keys shaded by weight, ◀ ▶ through the rows),
// and one layer's heads as small pattern thumbnails (window.SCAN.patterns, the binned rows).
// Nothing is fetched; scan.js calls show and thumbs.
(function () {
  "use strict";
  const D = window.SCAN;
  const $ = (id) => document.getElementById(id);
  const cache = {};
  const box = $("tokens");
  const tokens = window.attnlimitsTokens.view(box, D.tokens, D.layers, D.heads, {
    steps: "tok",
    empty: (L) => `No token rows at L = ${L} (a scan from before they were stored).` });

  // Layer i's binned patterns at L (head, row, bin inside), decoded on first use.
  function pattern(L, i) {
    const key = `pattern/${L}/${i}`;
    if (!cache[key]) cache[key] = window.attnlimitsTokens.decode(D.patterns[L].data[i], 2);
    return cache[key];
  }

  function show(layer, head, L) {
    if (box) tokens.show(layer, head, L);
  }

  // One layer's heads at L as thumbnails of their binned rows (each row over its largest bin).
  function thumbs(layer, L, onPick) {
    const box = $("thumbs"), p = D.patterns[String(L)], i = D.layers.indexOf(layer);
    if (!box) return;
    if (!p || i < 0) {
      box.innerHTML = `<p class="note">No patterns at L = ${L}: rows are materialised only ` +
        "up to the scan's analysis_max_length.</p>";
      return;
    }
    const data = pattern(String(L), i), R = p.rows.length, B = p.bins;
    box.innerHTML = `<p class="note">Layer ${layer} at L = ${L}: each head's ${R} sampled rows ` +
      `(top to bottom) over ${B} key bins (left to right); click one to open it.</p>`;
    D.heads.forEach((head, j) => {
      const fig = document.createElement("figure"), canvas = document.createElement("canvas");
      canvas.width = B; canvas.height = R;
      canvas.className = "thumb"; canvas.dataset.layer = layer; canvas.dataset.head = head;
      const ctx = canvas.getContext("2d"), img = ctx.createImageData(B, R);
      for (let r = 0; r < R; r++) {
        const start = (j * R + r) * B;
        let top = 1;
        for (let b = 0; b < B; b++) top = Math.max(top, data[start + b]);
        for (let b = 0; b < B; b++) {
          const a = data[start + b] / top, o = 4 * (r * B + b);
          img.data[o] = 255 - a * 247; img.data[o + 1] = 255 - a * 207;
          img.data[o + 2] = 255 - a * 148; img.data[o + 3] = 255;
        }
      }
      ctx.putImageData(img, 0, 0);
      canvas.title = `layer ${layer}, head ${head}`;
      canvas.onclick = () => onPick(layer, head);
      const cap = document.createElement("figcaption");
      cap.textContent = `head ${head}`;
      fig.append(canvas, cap);
      box.append(fig);
    });
  }

  window.ScanTokens = { show: show, thumbs: thumbs, rowsOf: tokens.rowsOf, pattern: pattern,
    view: tokens.view };
})();

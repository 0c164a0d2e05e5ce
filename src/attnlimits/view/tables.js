// Every page's tables (attnlimits.view._page.table_html): a click on a header sorts by that
// column (again: the other way, a third time: the table's own order), the filter box keeps
// the rows whose text holds every word typed, "top 10 by" shows the ten largest of a column,
// and "download CSV" saves the rows shown (the cells' full values, not the rounded text).
// The address keeps each table's state (address.js): t.<name>.sort=<column> (-<column>: the
// other way), t.<name>.q=<words>, t.<name>.top=<column>; a link with it opens the table so,
// scrolled into view. <name> is the table's data-name (~2, ~3 … for a name used again).
(function () {
  "use strict";
  const value = (td) => (td.dataset.v !== undefined ? td.dataset.v : td.textContent.trim());
  const number = (s) => (s !== "" && Number.isFinite(Number(s)) ? Number(s) : null);

  // a before b: numbers by value, then text; empty cells last either way.
  function compare(a, b, dir) {
    if (a === "" || b === "") return (a === "") - (b === "");
    const x = number(a), y = number(b);
    if (x !== null && y !== null) return dir * (x - y);
    if (x !== null || y !== null) return x !== null ? -1 : 1;
    return dir * a.localeCompare(b);
  }

  const A = window.attnlimitsAddress;
  const seen = {};

  function setup(box) {
    const table = box.querySelector("table"), body = table.tBodies[0];
    const heads = [...table.tHead.rows[0].cells];
    const base = box.dataset.name || "table";
    seen[base] = (seen[base] || 0) + 1;
    const key = `t.${base}${seen[base] > 1 ? "~" + seen[base] : ""}`;
    const names = heads.map((h) => h.textContent.trim());
    const rows = [...body.rows];
    rows.forEach((r, i) => { r.dataset.i = i; });
    const state = { col: -1, dir: 0, words: [], top: -1 };
    const filter = box.querySelector(".t-filter"), top = box.querySelector(".t-top");
    const count = box.querySelector(".t-count");

    function show() {
      let order = rows.slice();
      if (state.top >= 0) {
        order.sort((a, b) => compare(value(a.cells[state.top]), value(b.cells[state.top]), -1));
      } else if (state.col >= 0 && state.dir) {
        order.sort((a, b) => compare(value(a.cells[state.col]), value(b.cells[state.col]), state.dir));
      }
      let shown = order.filter((r) => {
        const text = r.textContent.toLowerCase();
        return state.words.every((w) => text.includes(w));
      });
      if (state.top >= 0) shown = shown.filter((r) => number(value(r.cells[state.top])) !== null).slice(0, 10);
      const keep = new Set(shown);
      for (const r of order) { r.hidden = !keep.has(r); body.appendChild(r); }
      heads.forEach((h, i) => h.setAttribute("aria-sort", i === state.col && state.dir ?
        (state.dir > 0 ? "ascending" : "descending") : "none"));
      count.textContent = shown.length === rows.length ? `${rows.length} rows` :
        `${shown.length} of ${rows.length} rows shown`;
      if (A) {
        const sort = state.top < 0 && state.col >= 0 && state.dir ?
          (state.dir < 0 ? "-" : "") + names[state.col] : null;
        A.set({ [`${key}.sort`]: sort, [`${key}.q`]: filter.value.trim() || null,
          [`${key}.top`]: state.top >= 0 ? names[state.top] : null });
      }
      return shown;
    }

    // The table's state from the address (unknown columns ignored); true if it holds any.
    function restore() {
      const h = A ? A.get() : {};
      const sort = h[`${key}.sort`] || "", q = h[`${key}.q`] || "", t = h[`${key}.top`] || "";
      const col = names.indexOf(sort.startsWith("-") && !names.includes(sort) ? sort.slice(1) :
        sort);
      const topCol = [...top.options].some((o) => o.value === String(names.indexOf(t))) ?
        names.indexOf(t) : -1;
      filter.value = q;
      state.words = q.toLowerCase().split(/\s+/).filter((w) => w);
      state.top = topCol; top.value = topCol >= 0 ? String(topCol) : "";
      if (topCol >= 0) { state.col = topCol; state.dir = -1; } else {
        state.col = col; state.dir = col < 0 ? 0 : names[col] === sort ? 1 : -1;
      }
      return Boolean(q || topCol >= 0 || col >= 0);
    }

    heads.forEach((h, i) => {
      h.title = "sort by this column (click again: the other way)";
      h.addEventListener("click", () => {
        state.dir = state.col === i ? (state.dir === 1 ? -1 : state.dir === -1 ? 0 : 1) : 1;
        state.col = i; state.top = -1; top.value = "";
        show();
      });
    });
    filter.addEventListener("input", () => {
      state.words = filter.value.toLowerCase().split(/\s+/).filter((w) => w);
      show();
    });
    top.addEventListener("change", () => {
      state.top = top.value === "" ? -1 : Number(top.value);
      state.col = state.top; state.dir = state.top >= 0 ? -1 : 0;
      show();
    });

    // The rows shown as CSV text (RFC 4180 quoting).
    function csv() {
      const quote = (s) => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
      const lines = [heads.map((h) => quote(h.textContent.trim()))];
      for (const r of [...body.rows].filter((r) => !r.hidden)) {
        lines.push([...r.cells].map((td) => quote(value(td))));
      }
      return lines.map((l) => l.join(",")).join("\n") + "\n";
    }
    box.querySelector(".t-csv").addEventListener("click", () => {
      const text = csv();
      const a = document.createElement("a");
      a.href = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
      a.download = `${box.dataset.name || "table"}${rows.some((r) => r.hidden) ? "-shown" : ""}.csv`;
      document.body.appendChild(a); a.click(); a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 1000);
      box.dataset.lastCsv = text;
    });
    const restored = restore();
    show();
    return { box: box, csv: csv, show: show, state: state, key: key, restored: restored,
      restore: () => { restore(); show(); } };
  }

  const tables = [...document.querySelectorAll(".tablebox")].map(setup);
  window.attnlimitsTables = tables;
  const first = tables.find((t) => t.restored);  // a link to a table's state shows the table
  if (first) first.box.scrollIntoView();
  window.addEventListener("hashchange", () => {  // such a link followed on the page
    if (location.hash.includes("=")) tables.forEach((t) => t.restore());
  });
})();

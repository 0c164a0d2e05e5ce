// Every page's tables (attnlimits.view._page.table_html): a click on a header sorts by that
// column (again: the other way, a third time: the table's own order), the filter box keeps
// the rows whose text holds every word typed, "top 10 by" shows the ten largest of a column,
// and "download CSV" saves the rows shown (the cells' full values, not the rounded text).
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

  function setup(box) {
    const table = box.querySelector("table"), body = table.tBodies[0];
    const heads = [...table.tHead.rows[0].cells];
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
      return shown;
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
    show();
    return { box: box, csv: csv, show: show, state: state };
  }

  window.attnlimitsTables = [...document.querySelectorAll(".tablebox")].map(setup);
})();

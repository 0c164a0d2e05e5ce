// The page's address as state: the hash holds key=value pairs (URLSearchParams), each part of a
// page owning its keys (the scan's metric, L, layer, head; a table's t.<name>.sort, .q, .top;
// the pair's metric, L). set() changes only the keys it is given (null: removes one) and keeps
// the others, so the parts compose; a plain anchor (#s-report, no "=") is state-free and is
// replaced by the first state written. history.replaceState: no new history entry, no scroll.
(function () {
  "use strict";
  function params() {
    const h = location.hash.slice(1);
    return new URLSearchParams(h.includes("=") ? h : "");
  }
  function get() { return Object.fromEntries(params()); }
  function set(updates) {
    const p = params();
    for (const [k, v] of Object.entries(updates)) {
      if (v === null || v === undefined || v === "") p.delete(k); else p.set(k, String(v));
    }
    const text = p.toString();
    if (text === location.hash.slice(1)) return;
    const keep = text || (location.hash.includes("=") ? "" : location.hash.slice(1));
    history.replaceState(null, "", location.pathname + location.search + (keep ? "#" + keep :
      ""));
  }
  window.attnlimitsAddress = { get: get, set: set };
})();

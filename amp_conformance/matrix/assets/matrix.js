(function () {
  "use strict";
  // Filters rows and narrows the checks to the selected cell. It never builds markup from page
  // data: it reads data-* attributes, sets textContent and toggles hidden.
  var form = document.getElementById("mfilters");
  if (!form) { return; }
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-item=row]"));
  var groups = Array.prototype.slice.call(document.querySelectorAll("tbody[data-group]"));
  var checks = Array.prototype.slice.call(document.querySelectorAll("details.check[data-impl]"));
  var implGroups = Array.prototype.slice.call(document.querySelectorAll("[data-impl-group]"));
  var shown = document.getElementById("mshown");
  var selection = document.getElementById("selection");
  var tools = document.getElementById("sel-tools");
  var areaSelect = form.querySelector("select[name=area]");
  var state = { rows: "all", area: "", level: ["MUST", "SHOULD", "MAY"], cell: "" };
  // failures first among a selected cell's checks (CSS order: the markup keeps the run's order)
  var RANK = { fail: 1, error: 2, blocked: 3, warn: 4, pass: 5, skip: 6 };
  var evidence = document.getElementById("evidence");
  function boxes(name) { return Array.prototype.slice.call(form.querySelectorAll("input[name=" + name + "]")); }
  function read() {
    var radio = boxes("rows").filter(function (b) { return b.checked; })[0];
    state.rows = radio ? radio.value : "all";
    state.area = areaSelect.value;
    state.level = boxes("level").filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
  }
  function write() {
    boxes("rows").forEach(function (b) { b.checked = b.value === state.rows; });
    boxes("level").forEach(function (b) { b.checked = state.level.indexOf(b.value) >= 0; });
    areaSelect.value = state.area;
    if (areaSelect.value !== state.area) { areaSelect.value = ""; state.area = ""; }
  }
  function applyRows() {
    var count = 0;
    rows.forEach(function (row) {
      var d = row.dataset;
      var on = (state.rows === "all" || d.pattern === state.rows) &&
        (!state.area || d.area === state.area) &&
        (state.level.indexOf(d.level) >= 0 || ["MUST", "SHOULD", "MAY"].indexOf(d.level) < 0);
      row.hidden = !on;
      if (on) { count += 1; }
    });
    groups.forEach(function (g) { g.hidden = !g.querySelector("tr[data-item=row]:not([hidden])"); });
    shown.textContent = "Showing " + count + " of " + rows.length + " requirement rows.";
  }
  function cellName(col, req) {
    var head = document.getElementById("col-" + col);
    var name = head ? head.querySelector(".cname").textContent : "implementation " + col;
    return name + " \u00b7 " + req;
  }
  function applyCell(scroll) {
    Array.prototype.slice.call(document.querySelectorAll("td.cell.sel")).forEach(function (td) {
      td.classList.remove("sel");
    });
    if (evidence) { evidence.classList.remove("by-outcome"); }
    if (!state.cell) {
      checks.forEach(function (c) { c.hidden = true; });
      implGroups.forEach(function (g) { g.hidden = true; });
      selection.textContent = "Select a cell of the grid to see that implementation's checks for that requirement.";
      tools.hidden = false;
      return;
    }
    if (state.cell === "*") {
      checks.forEach(function (c) { c.hidden = false; });
      implGroups.forEach(function (g) { g.hidden = false; });
      selection.textContent = "Every implementation's checks.";
      tools.hidden = true;
      return;
    }
    var parts = state.cell.split(":");
    var col = parts[0], req = parts.slice(1).join(":");
    var first = null, count = 0;
    checks.forEach(function (c) {
      var on = c.dataset.impl === col && (" " + c.dataset.reqs + " ").indexOf(" " + req + " ") >= 0;
      c.hidden = !on;
      if (on) {
        count += 1; c.open = true;
        if (!first || (RANK[c.dataset.outcome] || 9) < (RANK[first.dataset.outcome] || 9)) { first = c; }
      }
    });
    if (evidence) { evidence.classList.add("by-outcome"); }
    implGroups.forEach(function (g) { g.hidden = g.getAttribute("data-impl-group") !== col; });
    var link = document.querySelector("a[data-cell='" + col + "'][data-req='" + req + "']");
    if (link) { link.parentNode.classList.add("sel"); }
    selection.textContent = cellName(col, req) + ": " + count + " check(s) citing it.";
    tools.hidden = false;
    if (scroll && first) { first.scrollIntoView({ block: "start" }); first.querySelector("summary").focus(); }
  }
  function toHash() {
    var p = new URLSearchParams();
    if (state.rows !== "all") { p.set("rows", state.rows); }
    if (state.area) { p.set("area", state.area); }
    if (state.level.length !== 3) { p.set("level", state.level.join(",")); }
    if (state.cell) { p.set("cell", state.cell); }
    var text = p.toString();
    return text ? "#m?" + text : "";
  }
  function commit() {
    var hash = toHash();
    history.replaceState(null, "", hash || location.pathname + location.search);
  }
  function fromLocation() {
    if (location.hash.indexOf("#m?") !== 0) { return false; }
    var p = new URLSearchParams(location.hash.slice(3));
    state.rows = p.get("rows") || "all";
    state.area = p.get("area") || "";
    state.level = p.has("level") ? p.get("level").split(",").filter(Boolean) : ["MUST", "SHOULD", "MAY"];
    state.cell = p.get("cell") || "";
    write(); applyRows(); applyCell(true);
    return true;
  }
  form.hidden = false;
  form.addEventListener("change", function () { read(); applyRows(); commit(); });
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  document.getElementById("mreset").addEventListener("click", function () {
    state.rows = "all"; state.area = ""; state.level = ["MUST", "SHOULD", "MAY"];
    write(); applyRows(); commit();
  });
  document.getElementById("show-all").addEventListener("click", function () {
    state.cell = "*"; applyCell(false); commit();
  });
  window.addEventListener("hashchange", fromLocation);
  document.addEventListener("click", function (e) {
    var cell = e.target.closest ? e.target.closest("a[data-cell]") : null;
    if (cell) {
      e.preventDefault();
      state.cell = cell.getAttribute("data-cell") + ":" + cell.getAttribute("data-req");
      applyCell(true); commit();
      return;
    }
    var link = e.target.closest ? e.target.closest("a[href^='#']") : null;
    if (link) {
      var goal = document.getElementById(link.getAttribute("href").slice(1));
      if (goal && goal.closest("[hidden]")) { state.cell = "*"; applyCell(false); commit(); }
      return;
    }
    var button = e.target.closest ? e.target.closest("button[data-copy]") : null;
    if (button) {
      var target = document.getElementById(button.getAttribute("data-copy"));
      var label = button.textContent;
      var done = function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = label; }, 2000);
      };
      var fallback = function () {
        var range = document.createRange(); range.selectNodeContents(target);
        var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
        try { document.execCommand("copy"); done(); } catch (err) { button.textContent = "Press Ctrl+C"; }
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(target ? target.textContent : "").then(done, fallback);
      } else { fallback(); }
    }
  });
  Array.prototype.slice.call(document.querySelectorAll("button[data-copy]")).forEach(function (b) {
    b.hidden = false;
  });
  if (!fromLocation()) { read(); applyRows(); applyCell(false); }  // the markup's default rows
})();

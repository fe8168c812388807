(function () {
  "use strict";
  var form = document.getElementById("filters");
  if (!form) { return; }
  var items = Array.prototype.slice.call(document.querySelectorAll("[data-item]"));
  var groups = Array.prototype.slice.call(document.querySelectorAll("[data-group]"));
  var shown = document.getElementById("shown");
  var reqBox = document.getElementById("req-filter");
  var reqName = document.getElementById("req-name");
  var hint = document.getElementById("grid-hint");
  var search = form.querySelector("input[type=search]");
  var areaSelect = form.querySelector("select[name=area]");
  var current = { req: "" };
  // failures first among a requirement's checks (CSS order: the markup keeps the run's order)
  var RANK = { fail: 1, error: 2, blocked: 3, warn: 4, pass: 5, skip: 6 };
  function boxes(name) { return Array.prototype.slice.call(form.querySelectorAll("input[name=" + name + "]")); }
  function chosen(name) { return boxes(name).filter(function (b) { return b.checked; }).map(function (b) { return b.value; }); }
  function read() {
    return { outcome: chosen("outcome"), level: chosen("level"), area: areaSelect.value,
             q: search.value.trim().toLowerCase(), req: current.req };
  }
  function write(s) {
    boxes("outcome").forEach(function (b) { b.checked = s.outcome.indexOf(b.value) >= 0; });
    boxes("level").forEach(function (b) { b.checked = s.level.indexOf(b.value) >= 0; });
    areaSelect.value = s.area;
    if (areaSelect.value !== s.area) { areaSelect.value = ""; }
    search.value = s.q;
    current.req = s.req;
  }
  function all(name) { return boxes(name).map(function (b) { return b.value; }); }
  function defaults() { return { outcome: all("outcome"), level: all("level"), area: "", q: "", req: "" }; }
  function visible(el, s) {
    var d = el.dataset;
    if (s.outcome.indexOf(d.outcome) < 0 && all("outcome").indexOf(d.outcome) >= 0) { return false; }
    if (s.level.indexOf(d.level) < 0 && all("level").indexOf(d.level) >= 0) { return false; }
    if (s.area && d.area !== s.area) { return false; }
    if (s.q && d.text.indexOf(s.q) < 0) { return false; }
    if (s.req && d.item === "check" && (" " + d.reqs + " ").indexOf(" " + s.req + " ") < 0) { return false; }
    return true;
  }
  function apply(s) {
    var checks = 0, total = 0;
    items.forEach(function (el) {
      var on = visible(el, s);
      el.hidden = !on;
      if (el.dataset.item === "check") { total += 1; if (on) { checks += 1; } }
    });
    groups.forEach(function (g) { g.hidden = !g.querySelector("[data-item]:not([hidden])"); });
    shown.textContent = "Showing " + checks + " of " + total + " checks.";
    reqBox.hidden = !s.req;
    document.body.classList.toggle("by-outcome", !!s.req);
    reqName.textContent = s.req;
  }
  function same(a, b) { return a.slice().sort().join(",") === b.slice().sort().join(","); }
  function toHash(s) {
    var d = defaults(), p = new URLSearchParams();
    if (!same(s.outcome, d.outcome)) { p.set("outcome", s.outcome.join(",")); }
    if (!same(s.level, d.level)) { p.set("level", s.level.join(",")); }
    if (s.area) { p.set("area", s.area); }
    if (s.q) { p.set("q", s.q); }
    if (s.req) { p.set("req", s.req); }
    var text = p.toString();
    return text ? "#f?" + text : "";
  }
  function fromHash(hash) {
    var s = defaults();
    if (hash.indexOf("#f?") !== 0) { return null; }
    var p = new URLSearchParams(hash.slice(3));
    if (p.has("outcome")) { s.outcome = p.get("outcome").split(",").filter(Boolean); }
    if (p.has("level")) { s.level = p.get("level").split(",").filter(Boolean); }
    s.area = p.get("area") || "";
    s.q = (p.get("q") || "").toLowerCase();
    s.req = p.get("req") || "";
    return s;
  }
  function commit(s) {
    apply(s);
    var hash = toHash(s);
    history.replaceState(null, "", hash || location.pathname + location.search);
  }
  function fromLocation() {
    var s = fromHash(location.hash);
    if (s) { write(s); apply(s); }
  }
  form.hidden = false;
  form.addEventListener("input", function () { commit(read()); });
  form.addEventListener("change", function () { commit(read()); });
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  document.getElementById("reset").addEventListener("click", function () {
    var s = defaults(); write(s); commit(s);
  });
  document.getElementById("req-clear").addEventListener("click", function () {
    current.req = ""; commit(read());
  });
  window.addEventListener("hashchange", fromLocation);
  document.addEventListener("click", function (e) {
    var cell = e.target.closest ? e.target.closest("a[data-req]") : null;
    if (cell) {
      e.preventDefault();
      var s = defaults();
      s.req = cell.getAttribute("data-req");
      write(s); commit(s);
      var first = null;
      items.forEach(function (el) {
        if (el.dataset.item !== "check" || el.hidden) { return; }
        el.open = true;
        if (!first || (RANK[el.dataset.outcome] || 9) < (RANK[first.dataset.outcome] || 9)) { first = el; }
      });
      if (first) { first.scrollIntoView({ block: "start" }); first.querySelector("summary").focus(); }
      return;
    }
    var link = e.target.closest ? e.target.closest("a[href^='#']") : null;
    if (link) {
      // A link to something the filters hide shows everything again, then goes there.
      var goal = document.getElementById(link.getAttribute("href").slice(1));
      if (goal && goal.closest("[hidden]")) { var all = defaults(); write(all); commit(all); }
      return;
    }
    var button = e.target.closest ? e.target.closest("button[data-copy]") : null;
    if (button) {
      var target = document.getElementById(button.getAttribute("data-copy"));
      var text = target ? target.textContent : "";
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
        navigator.clipboard.writeText(text).then(done, fallback);
      } else { fallback(); }
    }
  });
  Array.prototype.slice.call(document.querySelectorAll("button[data-copy]")).forEach(function (b) {
    b.hidden = false;
  });
  function name(e) {
    var cell = e.target.closest ? e.target.closest(".req") : null;
    if (cell) { hint.textContent = cell.getAttribute("aria-label"); }
  }
  document.addEventListener("mouseover", name);
  document.addEventListener("focusin", name);
  var opened = [];
  window.addEventListener("beforeprint", function () {
    opened = Array.prototype.slice.call(document.querySelectorAll("details:not([open])"));
    opened.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () { opened.forEach(function (d) { d.open = false; }); });
  fromLocation();
  if (!location.hash || location.hash.indexOf("#f?") !== 0) { apply(read()); }
})();

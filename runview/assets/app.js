// Filtering only: everything the page shows is in the HTML already (no network, no data load).
(function () {
  "use strict";
  var q = document.getElementById("q");
  var boxes = document.querySelectorAll("input[data-filter]");
  function apply() {
    var text = q ? q.value.toLowerCase() : "";
    var need = {};
    boxes.forEach(function (b) { need[b.getAttribute("data-filter")] = b.checked; });
    document.querySelectorAll("[data-row]").forEach(function (el) {
      var show = text === "" || el.textContent.toLowerCase().indexOf(text) >= 0;
      if (need.denied && el.getAttribute("data-denied") !== "true") { show = false; }
      var cls = el.getAttribute("data-class");
      if (cls && need[cls] === false) { show = false; }
      el.classList.toggle("hidden", !show);
    });
    var shown = document.querySelectorAll("[data-row]:not(.hidden)").length;
    var c = document.getElementById("count");
    if (c) { c.textContent = shown + " shown"; }
  }
  if (q) { q.addEventListener("input", apply); }
  boxes.forEach(function (b) { b.addEventListener("change", apply); });
  apply();
  document.body.setAttribute("data-ready", "true");
})();

// The page follows the channel: on each `change` event of its stream it fetches itself again
// and swaps the parts marked data-live (never the one holding the focus, so a form being
// typed into stays as it is). Without JavaScript every form still works (POST, redirect, GET).
"use strict";
(function () {
  var url = document.body && document.body.getAttribute("data-events");
  if (!url || !window.EventSource || !window.fetch) return;
  var busy = false, again = false;
  function swap() {
    if (busy) { again = true; return; }
    busy = true;
    // `live=1`: this look leaves the line the last change left for the next page load.
    var url = new URL(location.href);
    url.searchParams.set("live", "1");
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (!text) return;
        var fresh = new DOMParser().parseFromString(text, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (old) {
          var next = fresh.getElementById(old.id);
          if (!next || old.contains(document.activeElement)) return;
          old.replaceWith(document.importNode(next, true));
        });
        document.body.setAttribute("data-changes", String(Number(document.body.getAttribute("data-changes") || 0) + 1));
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; swap(); } });
  }
  var events = new EventSource(url);
  events.addEventListener("change", swap);
})();

// Keepmind's pages: the little that plain HTML and htmx do not do. No inline script anywhere
// (the Content-Security-Policy forbids it), so everything lives here.
(function () {
  "use strict";

  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  // Every htmx request carries the page's CSRF token in a header.
  document.addEventListener("htmx:configRequest", function (event) {
    event.detail.headers["X-CSRF-Token"] = csrf();
  });

  // A confirmation swapped into the dialog slot opens as a modal dialog.
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail.target;
    if (!target || !target.querySelector) return;
    var dialog = target.querySelector("dialog[data-modal]");
    if (dialog && !dialog.open) dialog.showModal();
    var flash = document.getElementById("flash");
    if (flash && target.id !== "flash") flash.textContent = "";
  });

  // After a dialog's form was sent successfully, the dialog closes.
  document.addEventListener("htmx:afterRequest", function (event) {
    var dialog = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("dialog[data-modal]");
    if (dialog && event.detail.successful) dialog.close();
  });

  document.addEventListener("click", function (event) {
    var closer = event.target.closest && event.target.closest("[data-close]");
    if (closer) {
      var dialog = closer.closest("dialog");
      if (dialog) dialog.close();
    }
  });

  // A closed dialog leaves the page (the slot is empty again for the next one).
  document.addEventListener("close", function (event) {
    if (event.target.matches && event.target.matches("dialog[data-modal]")) event.target.remove();
  }, true);

  // An error answer to an htmx request: its message (our own escaped HTML) in the status line.
  document.addEventListener("htmx:responseError", function (event) {
    var flash = document.getElementById("flash");
    if (!flash) return;
    var xhr = event.detail.xhr;
    var type = xhr.getResponseHeader("Content-Type") || "";
    if (type.indexOf("text/html") === 0) {
      flash.innerHTML = xhr.responseText;
    } else {
      flash.textContent = "Keepmind answered " + xhr.status + ": reload the page and try again.";
    }
  });
  document.addEventListener("htmx:sendError", function () {
    var flash = document.getElementById("flash");
    if (flash) flash.textContent = "Keepmind is not reachable: is it still running?";
  });

  // "Select all" ticks every checkbox of that name in its form.
  document.addEventListener("change", function (event) {
    var all = event.target.closest && event.target.closest("[data-select-all]");
    if (!all) return;
    var name = all.getAttribute("data-select-all");
    var form = all.form || document;
    form.querySelectorAll('input[type="checkbox"][name="' + name + '"]').forEach(function (box) {
      box.checked = all.checked;
    });
  });
})();

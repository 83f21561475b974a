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

  // A list that refreshes itself (data-polling: the backlog) holds still while the focus is inside
  // it: the swap replaced the focused button, the focus fell back to the page and a person tabbing
  // to Retry lost their place every 2 s. (htmx's trigger filters would need eval, which the CSP
  // forbids.) The poll goes on, so the list catches up once the focus leaves it.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var list = event.detail.elt;
    if (!list || !list.hasAttribute || !list.hasAttribute("data-polling")) return;
    var active = document.activeElement;
    if (active && active !== list && list.contains(active)) event.preventDefault();
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
  // An element swapped in with data-autofocus takes the focus (the review editor's title).
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail.target;
    if (!target || !target.querySelector) return;
    var first = target.querySelector("[data-autofocus]");
    if (first) {
      first.focus();
      // the caret after the text, where a correction is typed (focus() leaves it at the start)
      try {
        if (/^(TEXTAREA|INPUT)$/.test(first.tagName)) first.setSelectionRange(first.value.length, first.value.length);
      } catch (ignored) { /* a field kind without a caret (number, checkbox) */ }
      return;
    }
    // After a review action the next proposal is the one to look at.
    if (target.id === "queue") {
      var card = target.querySelector("[data-proposal]");
      if (card) card.focus();
    }
  });

  // In a narrow window the graph's box scrolls sideways: it opens with its anchor in the middle.
  function centreGraphs(root) {
    root.querySelectorAll(".graph-box").forEach(function (box) {
      var centre = box.querySelector(".node.center circle");
      if (!centre || box.scrollWidth <= box.clientWidth) return;
      var outer = box.getBoundingClientRect(), inner = centre.getBoundingClientRect();
      box.scrollLeft += (inner.left + inner.width / 2) - (outer.left + outer.width / 2);
    });
  }
  document.addEventListener("DOMContentLoaded", function () { centreGraphs(document); });
  document.addEventListener("htmx:afterSettle", function (event) {
    if (event.detail.target && event.detail.target.querySelectorAll) centreGraphs(event.detail.target);
  });

  // A button with data-fill puts its data-value into the field it names (Write a memory's boundaries).
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-fill]");
    if (!button) return;
    var field = document.querySelector(button.getAttribute("data-fill"));
    if (!field) return;
    field.value = button.getAttribute("data-value");
    field.focus();
  });

  // "Copy" buttons copy the text of the element they name (a new token's secret, a snippet).
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.textContent.trim();
    var said = function (ok) {
      var old = button.textContent;
      button.textContent = ok ? "Copied" : "Select and copy it";
      setTimeout(function () { button.textContent = old; }, 1800);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { said(true); }, function () { said(false); });
    } else {
      var range = document.createRange();
      range.selectNodeContents(source);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      said(false);
    }
  });

  // A memory's editor opens in place of its text: what it replaced is kept, so that closing it puts the
  // text back and the focus on the Edit that opened it (its Cancel, a link, reloaded the page and left
  // the focus on the body). Without script the Cancel link still reloads the page.
  var inPlace = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "memory-text") return;
    if (inPlace && inPlace.target === target) return;  // a tab of the open editor: the text stays kept
    var opener = (event.detail.requestConfig && event.detail.requestConfig.elt) || event.target;
    inPlace = {target: target, html: target.innerHTML, opener: opener};
  });
  function closeInPlace(editor) {
    if (!inPlace || !inPlace.target.contains(editor)) return false;
    var kept = inPlace;
    inPlace = null;
    kept.target.innerHTML = kept.html;
    if (window.htmx) window.htmx.process(kept.target);
    if (kept.opener && document.body.contains(kept.opener)) kept.opener.focus();
    return true;
  }
  document.addEventListener("click", function (event) {
    var cancel = event.target.closest && event.target.closest("[data-cancel]");
    var editor = cancel && cancel.closest("[data-escape-cancels]");
    if (editor && closeInPlace(editor)) event.preventDefault();
  });

  // Escape in an editor (a memory's Edit, a proposal's in Review) is its Cancel; with changes typed, it asks first.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape" || event.defaultPrevented) return;
    var editor = event.target.closest && event.target.closest("[data-escape-cancels]");
    if (!editor || document.querySelector("dialog[open]")) return;
    var cancel = editor.querySelector("[data-cancel]");
    if (!cancel) return;
    var changed = Array.prototype.some.call(editor.querySelectorAll("input:not([type=hidden]), textarea"),
      function (field) { return field.value !== field.defaultValue; });
    event.preventDefault();
    if (changed && !window.confirm("Discard what you typed?")) return;
    // a memory's editor gives its text back; a Cancel that htmx swaps in place (the review queue's) is
    // clicked; a plain link is followed
    if (closeInPlace(editor)) return;
    if (cancel.hasAttribute("hx-get")) cancel.click();
    else window.location.assign(cancel.getAttribute("href"));
  });

  // The review queue by keyboard: j / k move between proposals, a keeps, e edits, r rejects.
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  function currentCard(cards) {
    var active = document.activeElement;
    for (var i = 0; i < cards.length; i++) {
      if (cards[i] === active || cards[i].contains(active)) return i;
    }
    return -1;
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var queue = document.querySelector("[data-review-queue]");
    if (!queue) return;
    var cards = Array.prototype.slice.call(queue.querySelectorAll("[data-proposal]"));
    if (!cards.length) return;
    var at = currentCard(cards);
    var key = event.key;
    if (key === "j" || key === "k") {
      var next = key === "j" ? Math.min(at + 1, cards.length - 1) : Math.max(at - 1, 0);
      cards[at < 0 ? 0 : next].focus();
      cards[at < 0 ? 0 : next].scrollIntoView({block: "nearest"});
      event.preventDefault();
      return;
    }
    var action = {a: "keep", e: "edit", r: "reject"}[key];
    if (!action) return;
    var card = cards[at < 0 ? 0 : at];
    var control = card.querySelector('[data-key="' + action + '"]');
    if (control) {
      event.preventDefault();
      control.click();
    }
  });
})();

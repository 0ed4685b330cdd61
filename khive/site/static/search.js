// Static builds only: answer ?q= from the prebuilt discover.search results (assets/search-index.js).
(function () {
  var box = document.getElementById("results-box");
  var index = window.KHIVE_SEARCH || {answers: {}};
  var query = new URLSearchParams(window.location.search).get("q") || "";
  var key = query.toLowerCase().split(/\s+/).filter(Boolean).join(" ");
  var input = document.querySelector("form.search.big input[name=q]");
  if (input) { input.value = query; }
  if (!box || !key) { return; }
  if (Object.prototype.hasOwnProperty.call(index.answers, key)) {
    box.innerHTML = index.answers[key];  // rendered and escaped by the site builder
  } else {
    var note = document.createElement("p");
    note.className = "banner stale";
    note.textContent = "This static copy has no answer for \u201c" + query + "\u201d: search needs `khive site serve` " +
      "for new questions. It answers the questions below.";
    box.appendChild(note);
    var known = document.getElementById("known-questions");
    if (known) { known.open = true; }
  }
})();

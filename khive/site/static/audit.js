// The audit view's filters: show only the ops that match every chosen value (no JavaScript: every op shows).
(function () {
  var form = document.getElementById("audit-filters");
  var rows = document.querySelectorAll("#ops-table tbody tr");
  if (!form) { return; }
  form.hidden = false;
  function apply() {
    var chosen = {};
    form.querySelectorAll("select[data-filter]").forEach(function (s) { chosen[s.dataset.filter] = s.value; });
    var hideSite = form.querySelector("input[data-filter=site]").checked;
    rows.forEach(function (row) {
      var show = !(hideSite && row.dataset.site === "1");
      Object.keys(chosen).forEach(function (name) {
        if (chosen[name] && row.dataset[name] !== chosen[name]) { show = false; }
      });
      row.hidden = !show;
    });
  }
  form.addEventListener("change", apply);
  apply();
})();

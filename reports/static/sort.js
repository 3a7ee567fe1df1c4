/* advisor HTML report: sort a table.sortable by the column whose heading is clicked (or Enter/Space).
   Inlined into report.html: no library, nothing fetched. Cells sort by their data-sort value when
   they have one (numbers as numbers, empty last), else by their text. */
(function () {
  "use strict";
  function key(row, column) {
    var cell = row.cells[column];
    var raw = cell ? (cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent) : "";
    var number = raw === "" ? NaN : Number(raw);
    return { empty: raw === "", number: number, text: raw.toLowerCase() };
  }
  function compare(a, b) {
    if (a.empty || b.empty) { return a.empty === b.empty ? 0 : (a.empty ? 1 : -1); }
    if (!isNaN(a.number) && !isNaN(b.number)) { return a.number - b.number; }
    return a.text < b.text ? -1 : (a.text > b.text ? 1 : 0);
  }
  function sortBy(table, heading, column) {
    var ascending = heading.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var order = compare(key(r1, column), key(r2, column));
      var emptyLast = key(r1, column).empty || key(r2, column).empty;
      return emptyLast || ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) { cell.removeAttribute("aria-sort"); });
    heading.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (heading, column) {
      heading.tabIndex = 0;
      heading.addEventListener("click", function () { sortBy(table, heading, column); });
      heading.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sortBy(table, heading, column); }
      });
    });
  });
}());

/* advisor HTML report: a drawing that is wider than the screen (the model graph on a phone) scrolls
   inside its own box. Scroll that box so the root cause's node is in view, and show the cue that says
   the box scrolls sideways. Inlined into report.html: no library, nothing fetched. */
(function () {
  "use strict";
  function centre(box) {
    var focus = box.querySelector(".gnode.focus");
    var cue = box.parentElement.querySelector(".scroll-cue");
    var scrollable = box.scrollWidth > box.clientWidth + 1;
    if (cue) { cue.hidden = !scrollable; }
    if (!focus || !scrollable) { return; }
    var inner = focus.getBoundingClientRect(), outer = box.getBoundingClientRect();
    box.scrollLeft += (inner.left + inner.width / 2) - (outer.left + outer.width / 2);
  }
  function all() {
    var boxes = document.querySelectorAll(".plot .scroll");
    for (var i = 0; i < boxes.length; i++) { centre(boxes[i]); }
  }
  window.addEventListener("load", all);
  window.addEventListener("resize", all);
}());

// emuprof flame graph interactions (our own script; inferno's is CDDL).
// Click a frame to zoom into it, click "Reset zoom" or the root to zoom out;
// "Search" highlights the frames whose name matches a regular expression and
// shows the share of the total they cover.
(function () {
  var svg = document.documentElement;
  var W = +svg.getAttribute("data-width"), PAD = +svg.getAttribute("data-pad");
  var CHAR = 7, MATCH = "rgb(230,0,230)";
  var frames = Array.prototype.slice.call(document.querySelectorAll("g.frame"));
  var unzoomButton = document.getElementById("unzoom");
  var searchButton = document.getElementById("search");
  var matched = document.getElementById("matched");
  frames.forEach(function (g) {
    var r = g.querySelector("rect");
    g.ox = +r.getAttribute("x");
    g.ow = +r.getAttribute("width");
    g.depth = +g.getAttribute("data-depth");
    g.name = g.getAttribute("data-name");
    g.fill = r.getAttribute("fill");
    g.addEventListener("click", function () { zoom(g); });
  });
  function fit(g, x, w) {
    var r = g.querySelector("rect"), t = g.querySelector("text");
    r.setAttribute("x", x.toFixed(2));
    r.setAttribute("width", w.toFixed(2));
    t.setAttribute("x", (x + 3).toFixed(2));
    var room = Math.floor((w - 6) / CHAR);
    t.textContent = room < 3 ? "" : g.name.length <= room ? g.name : g.name.slice(0, room - 2) + "..";
  }
  function zoom(g) {
    if (g.depth === 0) { unzoom(); return; }
    var x0 = g.ox, x1 = g.ox + g.ow, scale = (W - 2 * PAD) / g.ow, eps = 1e-6;
    frames.forEach(function (f) {
      var inside = f.ox >= x0 - eps && f.ox + f.ow <= x1 + eps && f.depth >= g.depth;
      var ancestor = f.depth < g.depth && f.ox <= x0 + eps && f.ox + f.ow >= x1 - eps;
      if (inside) {
        fit(f, PAD + (f.ox - x0) * scale, f.ow * scale);
        f.style.display = ""; f.style.opacity = "";
      } else if (ancestor) {
        fit(f, PAD, W - 2 * PAD);
        f.style.display = ""; f.style.opacity = "0.5";
      } else {
        f.style.display = "none";
      }
    });
    unzoomButton.style.display = "";
  }
  function unzoom() {
    frames.forEach(function (f) {
      fit(f, f.ox, f.ow);
      f.style.display = ""; f.style.opacity = "";
    });
    unzoomButton.style.display = "none";
  }
  function search(term) {
    var re = term ? new RegExp(term) : null, spans = [];
    frames.forEach(function (f) {
      var hit = re !== null && f.depth > 0 && re.test(f.name);
      f.querySelector("rect").setAttribute("fill", hit ? MATCH : f.fill);
      if (hit) spans.push([f.ox, f.ox + f.ow]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -Infinity;
    spans.forEach(function (s) {
      if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
    });
    matched.textContent = re === null ? "" : "Matched: " + (100 * covered / (W - 2 * PAD)).toFixed(2) + "%";
    searchButton.textContent = re === null ? "Search" : "Reset search";
    return re === null ? 0 : spans.length;
  }
  searchButton.addEventListener("click", function () {
    if (matched.textContent) { search(""); return; }
    var term = window.prompt("Search frames (regular expression):", "");
    if (term) search(term);
  });
  unzoomButton.addEventListener("click", unzoom);
  window.emuprofFlamegraph = { search: search, zoom: zoom, unzoom: unzoom };
})();

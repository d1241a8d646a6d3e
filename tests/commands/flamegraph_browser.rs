//! The flame graph SVG's own script works in a real browser: headless
//! Chromium loads the SVG of `mutual`, a test script appended to it searches
//! for `foo|bar` and clicks a frame, and the DOM Chromium dumps shows the
//! matches highlighted and the clicked frame zoomed to the full width.
//! Needs Debian's `chromium` (fails under CI without it).

use crate::common;
use crate::exports_support;

use std::process::Command;

use common::process::run_with_timeout;
use common::tools::require_tool;
use common::{testprog, Libc};
use exports_support::profile;

/// Runs after the SVG's own script: searches, then clicks the widest `foo`
/// frame, and records what it sees in `data-result` on the root element.
const DRIVER: &str = r#"<script type="text/ecmascript"><![CDATA[
(function () {
  var svg = document.documentElement, out = [];
  var hits = window.emuprofFlamegraph.search("^(foo|bar)$");
  var magenta = document.querySelectorAll('g.frame rect[fill="rgb(230,0,230)"]').length;
  out.push("hits=" + hits, "magenta=" + magenta,
           "matched=" + document.getElementById("matched").textContent);
  var foo = null;
  document.querySelectorAll("g.frame").forEach(function (g) {
    if (g.getAttribute("data-name") === "foo" &&
        (foo === null || +g.querySelector("rect").getAttribute("width") >
                         +foo.querySelector("rect").getAttribute("width"))) foo = g;
  });
  out.push("foo_width_before=" + foo.querySelector("rect").getAttribute("width"));
  foo.dispatchEvent(new MouseEvent("click", { bubbles: true }));
  out.push("foo_width_after=" + foo.querySelector("rect").getAttribute("width"),
           "foo_label=" + foo.querySelector("text").textContent);
  var hidden = 0;
  document.querySelectorAll("g.frame").forEach(function (g) {
    if (g.style.display === "none") hidden++;
  });
  out.push("hidden=" + hidden,
           "unzoom_shown=" + (document.getElementById("unzoom").style.display === ""));
  svg.setAttribute("data-result", out.join(";"));
})();
]]></script>
"#;

#[test]
fn search_highlights_and_click_zooms_in_chromium() {
    let Some(chromium) = require_tool("chromium", "chromium") else {
        return;
    };
    let profile = profile(&testprog("mutual", Libc::Glibc, "O2"));
    let svg = profile.export("flamegraph", &[]);
    let text = std::fs::read_to_string(&svg).expect("read the SVG");
    let driven = profile.out("driven.svg");
    let end = text.rfind("</svg>").expect("an </svg> end tag");
    std::fs::write(&driven, format!("{}{DRIVER}{}", &text[..end], &text[end..]))
        .expect("write the driven SVG");

    let home = tempfile::tempdir().expect("temporary directory");
    let mut command = Command::new(chromium);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--dump-dom",
        ])
        .arg(format!("file://{}", driven.display()))
        .env("HOME", home.path());
    let out = run_with_timeout(command, "chromium --headless --dump-dom");
    let dom = String::from_utf8_lossy(&out.stdout);
    let result = dom
        .split("data-result=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| {
            panic!(
                "the script did not run; chromium said:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let field = |key: &str| -> String {
        result
            .split(';')
            .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} missing in {result}"))
            .to_string()
    };
    let hits: usize = field("hits").parse().expect("hits");
    assert!(hits >= 2, "foo and bar frames match: {result}");
    assert_eq!(
        field("magenta"),
        hits.to_string(),
        "matches are highlighted"
    );
    assert!(field("matched").starts_with("Matched: "), "{result}");
    let before: f64 = field("foo_width_before").parse().expect("width");
    let after: f64 = field("foo_width_after").parse().expect("width");
    assert!(before < 1100.0, "foo is not already full width: {result}");
    assert_eq!(after, 1180.0, "the clicked frame fills the width: {result}");
    assert_eq!(field("foo_label"), "foo", "{result}");
    assert!(
        field("hidden").parse::<usize>().expect("hidden") > 0,
        "{result}"
    );
    assert_eq!(field("unzoom_shown"), "true", "{result}");
}

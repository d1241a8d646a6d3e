//! The speedscope export loads in speedscope itself: headless Chromium opens
//! the viewer (npm's `speedscope` package, installed into target/speedscope
//! by scripts/install-speedscope.sh) with the export of `mutual`, the way
//! `speedscope FILE` does, and the viewer shows the profile (its title is
//! the profile's name, its flame chart is drawn) without an import error.
//! Fails under CI when Chromium or the viewer is missing.

use crate::common;
use crate::exports_support;

use base64::Engine;
use serde_json::json;

use common::browser::start_chromium;
use common::tools::require_tool;
use common::{testprog, Libc};
use exports_support::profile;

/// Loads `bytes` as the file `file_name` in speedscope (in headless
/// Chromium), the way `speedscope FILE` does, waits until the viewer's title
/// names `profile_name` and its flame chart is drawn, switches to the
/// Sandwich view and returns the page's text (the function table). `None`
/// when Chromium or the viewer is missing (which fails in CI).
pub fn load_in_speedscope(
    work: &exports_support::ProfileFile,
    file_name: &str,
    bytes: &[u8],
    profile_name: &str,
) -> Option<String> {
    let chromium = require_tool("chromium", "chromium")?;
    let viewer = common::repo_root()
        .join("target/speedscope/node_modules/speedscope/dist/release/index.html");
    if !viewer.is_file() {
        common::ci::skip_unless_ci(&format!(
            "the speedscope viewer is not installed at {} (run scripts/install-speedscope.sh)",
            viewer.display()
        ));
        return None;
    }
    // What `speedscope FILE` hands the viewer: a script that loads the file.
    let script = work.out("load.js");
    std::fs::write(
        &script,
        format!(
            "speedscope.loadFileFromBase64({}, {})",
            json!(file_name),
            json!(base64::engine::general_purpose::STANDARD.encode(bytes))
        ),
    )
    .expect("write the loader");
    let url = format!(
        "file://{}#localProfilePath={}",
        viewer.display(),
        script.display()
    );

    let home = tempfile::tempdir().expect("temporary directory");
    let (_chromium, mut page) = start_chromium(&chromium, &home.path().join("chromium"));
    page.call("Page.enable", json!({}));
    page.call("Page.navigate", json!({ "url": url }));
    let title = page.wait_for(
        &format!(
            "document.title.includes({}) && document.title",
            json!(profile_name)
        ),
        "speedscope's title naming the loaded profile",
    );
    assert!(
        title.as_str().is_some_and(|t| t.contains("speedscope")),
        "{title}"
    );
    page.wait_for(
        "[...document.querySelectorAll('canvas')].some(c => c.width > 100 && c.height > 100)",
        "the flame chart canvas",
    );
    // The Sandwich view lists every function with its total and self
    // weight as text (the other views draw on canvases).
    page.eval(
        "[...document.querySelectorAll('div, span')].find(e => e.textContent.endsWith('Sandwich') \
         && e.children.length <= 1)?.click()",
    );
    // The table's rows are drawn after its header, once it has been laid out.
    page.wait_for(
        "(document.body.innerText.split('Symbol Name')[1] || '').trim().length > 0",
        "the rows of speedscope's Sandwich view",
    );
    let body = page.eval("document.body.innerText");
    let body = body.as_str().unwrap_or_default().to_string();
    assert!(
        !body.contains("Something went wrong") && !body.contains("Unrecognized format"),
        "speedscope reported an error: {body}"
    );
    Some(body)
}

#[test]
fn the_speedscope_export_loads_in_speedscope() {
    let profile = profile(&testprog("mutual", Libc::Glibc, "O2"));
    let export = profile.export("speedscope", &[]);
    let bytes = std::fs::read(&export).expect("read the export");
    let json: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    let name = json["name"].as_str().expect("a profile name").to_string();
    load_in_speedscope(&profile, "mutual.speedscope.json", &bytes, &name);
}

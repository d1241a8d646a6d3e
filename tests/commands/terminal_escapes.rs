//! Symbol names holding terminal escape sequences never
//! reach the terminal raw. A real profile has its function names replaced by
//! hostile ones (ESC `[2J`, a C1 CSI, a BEL); every text report and the diff
//! print them escaped, and the JSON report stays valid JSON.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::compile::compile_c;
use common::process::run_with_timeout;

fn emuprof(args: &[&str], cwd: &Path) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.args(args).current_dir(cwd).env_clear();
    run_with_timeout(command, "emuprof")
}

fn assert_no_raw_controls(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{what} printed a raw control character:\n{text:?}"
    );
    assert!(
        text.contains("\\x1b[2J"),
        "{what} lost the escaped name:\n{text}"
    );
}

#[test]
fn hostile_names_are_escaped_in_every_text_report_and_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let program = compile_c(
        dir.path(),
        "calls",
        "static int __attribute__((noinline)) f(int x){ return x * 3; }\n\
         int main(void){ int s = 0; for (int i = 0; i < 5; i++) s += f(i); return s == 30 ? 0 : 1; }\n",
        "gcc",
        &["-O1"],
    )
    .expect("gcc builds calls.c");
    let out = emuprof(
        &["-q", "-o", "p.json", program.to_str().unwrap()],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("p.json")).unwrap()).unwrap();
    for (i, function) in profile["functions"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        function["name"] = format!("evil{i}\x1b[2J\u{9b}31m\x07").into();
    }
    std::fs::write(dir.path().join("a.json"), profile.to_string()).unwrap();
    profile["totals"]["instructions"] =
        (profile["totals"]["instructions"].as_u64().unwrap() + 1).into();
    std::fs::write(dir.path().join("b.json"), profile.to_string()).unwrap();

    for args in [
        &["report", "a.json"][..],
        &["report", "--tree", "--no-inline", "a.json"],
        &["report", "--graph", "a.json"],
        &["report", "--summary", "a.json"],
        &["diff", "--all", "a.json", "b.json"],
    ] {
        let out = emuprof(args, dir.path());
        let what = args.join(" ");
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_no_raw_controls(&what, &out.stdout);
        assert_no_raw_controls(
            &format!("{what} (stderr)"),
            format!("{}\\x1b[2J", String::from_utf8_lossy(&out.stderr)).as_bytes(),
        );
    }
    let out = emuprof(&["report", "--json", "a.json"], dir.path());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert!(json.to_string().contains("\\u001b[2J"));
}

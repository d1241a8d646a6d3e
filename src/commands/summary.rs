//! The short summary printed to stderr after a run.

use std::fmt::Write;

use emuprof_analysis::report::format::grouped;
use emuprof_analysis::Profile;

/// Total instructions and calls, then the top functions by self and by
/// inclusive cost.
pub fn render(profile: &Profile, top: usize) -> String {
    let mut out = String::new();
    let t = &profile.totals;
    let _ = writeln!(
        out,
        "emuprof: {} instructions, {} calls, {} syscalls, {} calling contexts",
        grouped(t.instructions),
        grouped(t.calls),
        grouped(t.syscalls),
        grouped(t.contexts)
    );
    let mut table = |title: &str, key: fn(&emuprof_analysis::Function) -> u64| {
        let mut fs: Vec<_> = profile.functions.iter().collect();
        fs.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
        let _ = writeln!(out, "emuprof: top {} by {title}:", top.min(fs.len()));
        for f in fs.into_iter().take(top) {
            let _ = writeln!(out, "emuprof:   {:>6.2}% {:>14}  {}", profile.percent(key(f)), grouped(key(f)), f.name);
        }
    };
    table("self instructions", |f| f.self_instructions);
    table("inclusive instructions", |f| f.inclusive_instructions);
    out
}

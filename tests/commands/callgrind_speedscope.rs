//! `export -f callgrind --positions line` is the Callgrind form speedscope
//! draws. speedscope's importer (`src/import/callgrind.ts`) reads a file
//! its own way: every cost line is one position column then the costs, in
//! decimal; `fl=`/`fi=`/`fe=` all set the file that names the next costs'
//! function (`file:name` is a frame), the callee's file is the last
//! `cfi=`/`cfl=` or else the current file; a name id is defined once; and it
//! turns the call graph into a tree by following calls from each root
//! without checking for cycles. The test reads the export by those rules,
//! checks each holds, rebuilds speedscope's frame weights and compares them
//! with the profile, then loads the file in speedscope itself and reads its
//! Sandwich table: every function's self weight is the profile's.

use crate::common;
use crate::exports_support;
use crate::speedscope_viewer::load_in_speedscope;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::{testprog, Libc};
use exports_support::{emuprof, profile, ProfileFile};

/// A frame as speedscope keys it: `file:name`.
type Frame = String;

/// What speedscope's importer builds from a Callgrind file (first event).
#[derive(Default, Debug)]
struct SpeedscopeGraph {
    /// Self costs plus the costs of the calls a frame makes.
    total: BTreeMap<Frame, u64>,
    /// Caller → callee → cost of the calls.
    children: BTreeMap<Frame, BTreeMap<Frame, u64>>,
}

/// Reads `text` as speedscope does; panics naming the first rule broken.
fn read_as_speedscope(text: &str) -> SpeedscopeGraph {
    let mut graph = SpeedscopeGraph::default();
    let mut events = 0;
    let (mut file, mut function) = (String::new(), String::new());
    let (mut callee_file, mut callee) = (String::new(), String::new());
    let mut names: HashMap<String, String> = HashMap::new();
    let mut files: HashMap<String, String> = HashMap::new();
    let mut lines = text.lines().enumerate();
    let cost = |line: &str, at: usize| -> u64 {
        let parts: Vec<&str> = line.split_whitespace().collect();
        assert!(
            parts.len() >= 2 && parts.iter().all(|p| p.bytes().all(|b| b.is_ascii_digit())),
            "line {at}: speedscope reads one decimal position and decimal costs: {line:?}"
        );
        parts[1].parse().expect("decimal")
    };
    let expand = |table: &mut HashMap<String, String>, value: &str, at: usize| -> String {
        let Some(rest) = value.strip_prefix('(') else {
            return value.to_string();
        };
        let (id, name) = rest.split_once(')').expect("(id)");
        let name = name.trim();
        if name.is_empty() {
            table
                .get(id)
                .unwrap_or_else(|| panic!("line {at}: id {id} used before its definition"))
                .clone()
        } else {
            assert!(
                table.insert(id.to_string(), name.to_string()).is_none(),
                "line {at}: id {id} defined twice"
            );
            name.to_string()
        }
    };
    while let Some((at, line)) = lines.next() {
        let at = at + 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if let Some((key, value)) = line.split_once(": ") {
            if key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                match key {
                    "events" => events += 1,
                    "positions" => assert_eq!(value, "line", "speedscope reads one position"),
                    _ => {}
                }
                continue;
            }
        }
        if let Some((key, value)) = line.split_once('=') {
            match key {
                "fl" | "fi" | "fe" => {
                    file = expand(&mut files, value, at);
                    callee_file = file.clone();
                }
                "fn" => function = expand(&mut names, value, at),
                "cfi" | "cfl" => callee_file = expand(&mut files, value, at),
                "cfn" => callee = expand(&mut names, value, at),
                "calls" => {
                    let (next_at, next) = lines.next().expect("a cost line after calls=");
                    let weight = cost(next, next_at + 1);
                    let (from, to) = (
                        format!("{file}:{function}"),
                        format!("{callee_file}:{callee}"),
                    );
                    *graph.total.entry(from.clone()).or_default() += weight;
                    *graph
                        .children
                        .entry(from)
                        .or_default()
                        .entry(to)
                        .or_default() += weight;
                }
                _ => {}
            }
            continue;
        }
        let weight = cost(line, at);
        *graph.total.entry(format!("{file}:{function}")).or_default() += weight;
    }
    assert_eq!(events, 1, "one events: line");
    graph
}

impl SpeedscopeGraph {
    /// The weight each frame has at the bottom of the stack: its total less
    /// the calls into it (speedscope draws the frames whose weight is > 0).
    fn root_weights(&self) -> BTreeMap<&Frame, i128> {
        let mut roots: BTreeMap<&Frame, i128> = self
            .total
            .iter()
            .map(|(f, &w)| (f, i128::from(w)))
            .collect();
        for callees in self.children.values() {
            for (callee, &w) in callees {
                *roots.entry(callee).or_default() -= i128::from(w);
            }
        }
        roots
    }

    /// A frame that reaches itself through calls, if any.
    fn cycle(&self) -> Option<Frame> {
        fn visit<'a>(
            graph: &'a SpeedscopeGraph,
            frame: &'a Frame,
            path: &mut BTreeSet<&'a Frame>,
            done: &mut BTreeSet<&'a Frame>,
        ) -> Option<Frame> {
            if path.contains(frame) {
                return Some(frame.clone());
            }
            if !done.insert(frame) {
                return None;
            }
            path.insert(frame);
            for callee in graph
                .children
                .get(frame)
                .into_iter()
                .flat_map(BTreeMap::keys)
            {
                if let Some(found) = visit(graph, callee, path, done) {
                    return Some(found);
                }
            }
            path.remove(frame);
            None
        }
        let mut done = BTreeSet::new();
        self.total
            .keys()
            .find_map(|f| visit(self, f, &mut BTreeSet::new(), &mut done))
    }
}

/// `export -f callgrind --positions line` of `profile`, as text.
fn line_export(profile: &ProfileFile) -> String {
    std::fs::read_to_string(profile.export("callgrind", &["--positions", "line"]))
        .expect("read the export")
}

#[test]
fn line_positions_follow_the_rules_of_speedscopes_importer() {
    for program in ["fib", "mutual", "deeprec", "qsortcb", "inlining"] {
        let profile = profile(&testprog(program, Libc::Musl, "O2"));
        let text = line_export(&profile);
        let graph = read_as_speedscope(&text);
        assert_eq!(
            graph.cycle(),
            None,
            "{program}: speedscope would recurse for ever"
        );
        let roots = graph.root_weights();
        assert!(
            roots.values().all(|&w| w >= 0),
            "{program}: calls into a frame cost more than the frame: {roots:?}"
        );
        for callee in graph.children.values().flat_map(BTreeMap::keys) {
            assert!(
                graph.total.get(callee).is_some_and(|&w| w > 0),
                "{program}: speedscope divides by the weight of {callee}, which is 0"
            );
        }
        let drawn: i128 = roots.values().filter(|&&w| w > 0).sum();
        assert_eq!(
            drawn,
            i128::from(profile.total()),
            "{program}: speedscope draws every instruction once"
        );
        let main = graph
            .total
            .iter()
            .find(|(frame, _)| frame.ends_with(":main"))
            .map(|(_, &w)| w);
        let json_main = profile.json["functions"]
            .as_array()
            .expect("functions")
            .iter()
            .find(|f| f["name"] == "main")
            .and_then(|f| f["inclusive_instructions"].as_u64());
        assert_eq!(
            main, json_main,
            "{program}: main's frame is main's inclusive cost"
        );
    }
}

#[test]
fn the_default_positions_are_instruction_and_line() {
    let profile = profile(&testprog("fib", Libc::Musl, "O2"));
    let text = std::fs::read_to_string(profile.export("callgrind", &[])).expect("export");
    assert!(text.contains("\npositions: instr line\n"));
    let refused = emuprof(&[
        "export",
        profile.path_str(),
        "-f",
        "folded",
        "--positions",
        "line",
        "-o",
        "-",
    ]);
    assert!(!refused.status.success());
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        "emuprof: --positions is an option of --format callgrind; leave it out for other formats\n"
    );
}

/// speedscope's Sandwich table as (name → (total, self)), from the page text
/// (`TOTAL (P%)`, `SELF (P%)`, `NAME` on three lines per function).
fn sandwich_rows(body: &str) -> BTreeMap<String, (u64, u64)> {
    let table = body.split_once("Symbol Name\n").map_or("", |(_, t)| t);
    let lines: Vec<&str> = table.lines().map(str::trim).collect();
    let number = |cell: &str| -> u64 {
        let digits: String = cell.split(' ').next().unwrap_or("").replace(',', "");
        digits
            .parse()
            .unwrap_or_else(|_| panic!("not a weight: {cell:?}"))
    };
    lines
        .chunks_exact(3)
        .map(|row| (row[2].to_string(), (number(row[0]), number(row[1]))))
        .collect()
}

#[test]
fn speedscope_draws_the_line_positions_export() {
    let profile = profile(&testprog("mutual", Libc::Musl, "O2"));
    let text = line_export(&profile);
    let Some(body) = load_in_speedscope(
        &profile,
        "callgrind.out.mutual",
        text.as_bytes(),
        "callgrind.out.mutual",
    ) else {
        return;
    };
    let rows = sandwich_rows(&body);
    let top = rows.values().map(|&(total, _)| total).max();
    assert_eq!(top, Some(profile.total()), "the root holds the run: {body}");
    for (name, self_cost) in profile.self_by_name() {
        if self_cost > 0 {
            assert_eq!(
                rows.get(&name).map(|&(_, s)| s),
                Some(self_cost),
                "{name}'s self weight in speedscope: {body}"
            );
        }
    }
}

use super::*;
use crate::sample::{function, worker_threads, RawTreeBuilder};

/// main(10) → setup(1000) → fill(500); main → fib(20) → fib(30) → add(5);
/// main → report(7) → fib(40).
fn setup_then_fib() -> Profile {
    let mut tree = RawTreeBuilder::new("main", 10);
    let setup = tree.call(0, "setup", 1, 1000);
    tree.call(setup, "fill", 4, 500);
    let fib = tree.call(0, "fib", 1, 20);
    let inner = tree.call(fib, "fib", 2, 30);
    tree.call(inner, "add", 3, 5);
    let report = tree.call(0, "report", 1, 7);
    tree.call(report, "fib", 1, 40);
    let (raw, resolver) = tree.finish();
    Profile::from_raw(&raw, &resolver, "test").expect("consistent")
}

fn collect(patterns: &[&str]) -> Collection {
    Collection {
        collect: patterns.iter().map(|p| p.to_string()).collect(),
        exclude: Vec::new(),
    }
}

#[test]
fn collecting_a_function_totals_its_inclusive_cost_recursion_once() {
    let full = setup_then_fib();
    let mut part = full.clone();
    let missing = part.restrict(&collect(&["fib"])).expect("restricts");
    assert!(missing.is_empty());
    let fib = function(&full, "fib");
    assert_eq!(fib.inclusive_instructions, 20 + 30 + 5 + 40);
    assert_eq!(part.totals.instructions, fib.inclusive_instructions);
    assert_eq!(
        function(&part, "fib").inclusive_instructions,
        fib.inclusive_instructions
    );
    assert_eq!(function(&part, "fib").calls, fib.calls);
    assert_eq!(function(&part, "add").self_instructions, 5);
    assert!(
        part.functions
            .iter()
            .all(|f| f.name != "setup" && f.name != "fill"),
        "nothing under setup counts, so it is dropped"
    );
    assert_eq!(function(&part, "report").calls, 1, "the path to fib stays");
    assert_eq!(function(&part, "report").inclusive_instructions, 40);
    assert_eq!(part.threads[0].instructions, part.totals.instructions);
    assert_eq!(part.collection, [collect(&["fib"])]);
    assert_eq!(part.schema_version, SCHEMA_VERSION);
}

#[test]
fn excluding_a_function_drops_its_subtree_only() {
    let full = setup_then_fib();
    let mut part = full.clone();
    let exclude = Collection {
        collect: Vec::new(),
        exclude: vec!["setup".into()],
    };
    part.restrict(&exclude).expect("restricts");
    assert_eq!(
        part.totals.instructions,
        full.totals.instructions - function(&full, "setup").inclusive_instructions
    );
    assert_eq!(function(&part, "main").self_instructions, 10);
    assert!(part.functions.iter().all(|f| f.name != "fill"));
    part.validate().expect("a consistent profile");
}

#[test]
fn collect_and_exclude_combine_and_regexes_match_whole_names() {
    let mut part = setup_then_fib();
    let both = Collection {
        collect: vec!["fi(b|ll)".into()],
        exclude: vec!["add".into()],
    };
    part.restrict(&both).expect("restricts");
    // fib and fill match `fi(b|ll)` as whole names; add's subtree is left out.
    assert_eq!(part.totals.instructions, (20 + 30 + 40) + 500);
}

#[test]
fn patterns_that_match_nothing_that_ran_are_reported() {
    let mut part = setup_then_fib();
    let missing = part
        .restrict(&Collection {
            collect: vec!["fib".into(), "nosuch".into()],
            exclude: vec!["fi".into()],
        })
        .expect("restricts");
    assert_eq!(missing, ["nosuch", "fi"], "`fi` is not a whole name");
}

#[test]
fn a_spawned_thread_is_not_collected_through_its_spawning_context() {
    let full = Profile::from_raw_sample(worker_threads());
    let mut part = full.clone();
    part.restrict(&collect(&["main"])).expect("restricts");
    let main_thread = full.threads[0].instructions - function(&full, "_start").self_instructions;
    assert_eq!(part.totals.instructions, main_thread);
    assert!(part.threads[1..].iter().all(|t| t.instructions == 0));
    assert_eq!(part.threads.len(), full.threads.len(), "threads stay");
    part.validate().expect("a consistent profile");
}

#[test]
fn restricted_profiles_round_trip_and_whole_ones_stay_version_3() {
    let full = setup_then_fib();
    let mut whole = full.clone();
    whole
        .restrict(&Collection::default())
        .expect("nothing to do");
    assert_eq!(whole, full);
    let mut part = full;
    part.restrict(&collect(&["fib"])).expect("restricts");
    let mut json = Vec::new();
    part.write_json(&mut json).expect("writes");
    assert_eq!(Profile::read_json(&json[..]).expect("reads"), part);
    let text = String::from_utf8(json).expect("UTF-8");
    let stripped = text.replace("\"schema_version\": 4", "\"schema_version\": 3");
    let err = Profile::read_json(stripped.as_bytes()).expect_err("v3 cannot restrict");
    assert!(err.to_string().contains("collection"), "{err}");
}

#[test]
fn blocks_keep_the_executions_of_counted_functions() {
    let mut profile = setup_then_fib();
    let fib = function(&profile, "fib").address;
    let setup = function(&profile, "setup").address;
    profile.blocks = vec![
        crate::Block {
            address: fib,
            size: 4,
            instructions: 2,
            executions: 9,
            cycles: Vec::new(),
            events: Vec::new(),
        },
        crate::Block {
            address: setup,
            size: 4,
            instructions: 2,
            executions: 7,
            cycles: Vec::new(),
            events: Vec::new(),
        },
    ];
    profile.restrict(&collect(&["fib"])).expect("restricts");
    assert_eq!(profile.blocks.len(), 1);
    assert_eq!(
        (profile.blocks[0].address, profile.blocks[0].executions),
        (fib, 9)
    );
}

impl Profile {
    fn from_raw_sample(tree: RawTreeBuilder) -> Profile {
        let (raw, resolver) = tree.finish();
        Profile::from_raw(&raw, &resolver, "test").expect("consistent")
    }
}

#[test]
fn inlined_functions_name_the_functions_they_went_into() {
    use crate::code_table::CodeTable;
    use crate::instructions::SourceFrame;
    let frame = |name: &str| SourceFrame {
        function: Some(name.into()),
        file: None,
        line: None,
    };
    let mut profile = setup_then_fib();
    profile.code = Some(CodeTable {
        sources: vec![
            vec![frame("square"), frame("helper"), frame("main")],
            vec![frame("square"), frame("setup")],
            vec![frame("square")],
        ],
        ..CodeTable::default()
    });
    assert_eq!(
        profile.inlined_into(&NamePattern::new("square")),
        ["main", "setup"]
    );
    assert_eq!(profile.inlined_into(&NamePattern::new("helper")), ["main"]);
    assert!(profile.inlined_into(&NamePattern::new("main")).is_empty());
}

//! `export -f firefox` writes the Firefox Profiler's processed profile format
//! (through samply's `fxprof-processed-profile` crate). No copy of the
//! profiler's page can be installed here, so the file is checked against the
//! rules of the format the profiler's loader relies on: the meta data, one
//! thread per guest thread and one process per process image, every table
//! column as long as the table, every index inside the table it points into,
//! stacks whose prefixes come first; and against the profile: sample weights
//! add up to each thread's instructions, each thread's track on the virtual
//! clock is as long as its instructions, a spawned thread starts inside its
//! parent's track. Two exports are the same bytes.

use crate::common;
use crate::exports_support;

use serde_json::Value;

use common::{testprog, Libc};
use exports_support::{profile, ProfileFile};

/// The export of `profile`, parsed, and its bytes.
fn firefox(profile: &ProfileFile) -> (Value, Vec<u8>) {
    let bytes = std::fs::read(profile.export("firefox", &[])).expect("read the export");
    let json = serde_json::from_slice(&bytes).expect("the export is JSON");
    (json, bytes)
}

/// `column` of `table` as numbers (`null`s as `None`), checked to be as long
/// as the table.
fn column(table: &Value, name: &str, what: &str) -> Vec<Option<u64>> {
    let length = table["length"]
        .as_u64()
        .unwrap_or_else(|| panic!("{what}.length"));
    let values = table[name]
        .as_array()
        .unwrap_or_else(|| panic!("{what}.{name} is an array"));
    assert_eq!(
        values.len() as u64,
        length,
        "{what}.{name} has length entries"
    );
    values.iter().map(Value::as_u64).collect()
}

/// Checks one thread's tables; returns its sample weights' sum.
fn check_thread(thread: &Value, categories: usize) -> u64 {
    let name = thread["name"].as_str().expect("a thread name").to_string();
    let samples = &thread["samples"];
    let stacks = column(samples, "stack", &format!("{name} samples"));
    let weights = column(samples, "weight", &format!("{name} samples"));
    assert_eq!(samples["weightType"], "samples", "{name}");
    let deltas = samples["timeDeltas"]
        .as_array()
        .expect("sample time deltas");
    assert_eq!(deltas.len(), stacks.len(), "{name}: a time per sample");
    assert!(
        deltas.iter().all(|d| d.as_f64().is_some_and(|d| d >= 0.0)),
        "{name}: samples in time order"
    );
    let stack_table = &thread["stackTable"];
    let prefixes = column(stack_table, "prefix", &format!("{name} stackTable"));
    let frames = column(stack_table, "frame", &format!("{name} stackTable"));
    let frame_table = &thread["frameTable"];
    let funcs = column(frame_table, "func", &format!("{name} frameTable"));
    let frame_categories = column(frame_table, "category", &format!("{name} frameTable"));
    let func_names = column(&thread["funcTable"], "name", &format!("{name} funcTable"));
    let strings = thread["stringArray"].as_array().expect("stringArray").len() as u64;
    for (i, prefix) in prefixes.iter().enumerate() {
        if let Some(p) = prefix {
            assert!(
                (*p as usize) < i,
                "{name}: stack {i}'s prefix {p} comes first"
            );
        }
    }
    assert!(stacks
        .iter()
        .all(|s| s.is_some_and(|s| s < prefixes.len() as u64)));
    assert!(frames
        .iter()
        .all(|f| f.is_some_and(|f| f < funcs.len() as u64)));
    assert!(funcs
        .iter()
        .all(|f| f.is_some_and(|f| f < func_names.len() as u64)));
    assert!(func_names.iter().all(|n| n.is_some_and(|n| n < strings)));
    assert!(frame_categories
        .iter()
        .all(|c| c.is_some_and(|c| (c as usize) < categories)));
    weights.iter().map(|w| w.expect("integer weights")).sum()
}

/// The guest threads of a profile JSON image: (tid, instructions).
fn guest_threads(image: &Value) -> Vec<(u64, u64)> {
    image["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .map(|t| {
            (
                t["id"].as_u64().expect("id"),
                t["instructions"].as_u64().expect("instructions"),
            )
        })
        .collect()
}

#[test]
fn a_threaded_program_has_one_track_per_thread_on_the_virtual_clock() {
    let profile = profile(&testprog("threads", Libc::Glibc, "O2"));
    let (json, bytes) = firefox(&profile);
    let meta = &json["meta"];
    assert!(meta["preprocessedProfileVersion"]
        .as_u64()
        .is_some_and(|v| v >= 48));
    assert_eq!(meta["startTime"].as_f64(), Some(0.0));
    let categories = meta["categories"].as_array().expect("categories").len();
    assert!(categories >= 1);

    let guest = guest_threads(&profile.json);
    assert!(guest.len() > 1, "the threads program starts threads");
    let threads = json["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), guest.len(), "one track per guest thread");
    let pid = profile.json["process"]["pid"]
        .as_u64()
        .expect("pid")
        .to_string();
    let main_track = threads
        .iter()
        .find(|t| t["isMainThread"] == true)
        .expect("a main thread");
    let (main_start, main_end) = (
        main_track["registerTime"].as_f64().expect("registerTime"),
        main_track["unregisterTime"]
            .as_f64()
            .expect("unregisterTime"),
    );
    let track_of = |tid: u64| {
        threads
            .iter()
            .find(|t| t["tid"].as_str() == Some(tid.to_string().as_str()))
            .unwrap_or_else(|| panic!("no track for thread {tid}"))
    };
    for &(tid, instructions) in &guest {
        let thread = track_of(tid);
        let instructions = &instructions;
        assert_eq!(thread["pid"].as_str(), Some(pid.as_str()));
        assert_eq!(
            check_thread(thread, categories),
            *instructions,
            "thread {tid}"
        );
        let start = thread["registerTime"].as_f64().expect("registerTime");
        let end = thread["unregisterTime"].as_f64().expect("unregisterTime");
        // 1 ns per instruction; times in milliseconds.
        let length = (end - start) * 1e6;
        assert!(
            (length - *instructions as f64).abs() < 1.0,
            "thread {tid}: {length} ns for {instructions} instructions"
        );
        assert!(
            start >= main_start && start <= main_end,
            "thread {tid} starts in main's track"
        );
    }
    assert_eq!(track_of(guest[0].0)["isMainThread"], true);
    assert_eq!(
        track_of(guest[0].0)["name"],
        "threads.glibc.O2",
        "named after the program"
    );
    assert_eq!(
        track_of(guest[1].0)["name"],
        format!("thread {}", guest[1].0)
    );
    assert_eq!(firefox(&profile).1, bytes, "the same bytes every time");
}

#[test]
fn each_process_image_is_a_process_of_its_own() {
    let profile = profile(&testprog("processes", Libc::Glibc, "O2"));
    let (json, _) = firefox(&profile);
    let categories = json["meta"]["categories"]
        .as_array()
        .expect("categories")
        .len();
    let mut images = vec![&profile.json];
    images.extend(profile.json["processes"].as_array().into_iter().flatten());
    assert!(images.len() > 1, "the processes program forks");
    let threads = json["threads"].as_array().expect("threads");
    let expected: usize = images.iter().map(|i| guest_threads(i).len()).sum();
    assert_eq!(
        threads.len(),
        expected,
        "one track per thread of every image"
    );
    let mut pids: Vec<&str> = threads
        .iter()
        .filter(|t| t["isMainThread"] == true)
        .map(|t| t["pid"].as_str().expect("pid"))
        .collect();
    pids.dedup();
    assert_eq!(pids.len(), images.len(), "one process per image: {pids:?}");
    let total: u64 = threads.iter().map(|t| check_thread(t, categories)).sum();
    let run: u64 = images
        .iter()
        .map(|i| i["totals"]["instructions"].as_u64().expect("totals"))
        .sum();
    assert_eq!(
        total, run,
        "every instruction of the run is a sample weight"
    );
}

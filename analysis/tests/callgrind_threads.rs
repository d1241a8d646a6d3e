//! The Callgrind export of a multi-thread profile, read by `callgrind_annotate`:
//! the whole process as one part (Callgrind's default), and one thread's view
//! with a `thread:` header (as each of Callgrind's `--separate-threads` files).

mod common;

use std::process::Command;

use emuprof_analysis::export::callgrind::{write_callgrind, CallgrindOptions};
use emuprof_analysis::instructions::{
    CodeFunction, CodeMap, DecodedInstruction, InstructionCosts, SourceFrame,
};
use emuprof_analysis::sample::{worker_threads, FIRST_ADDRESS};
use emuprof_analysis::{Block, Profile};

/// The made-up code of [`worker_threads`]: function `i` spans 0x100 bytes from
/// `FIRST_ADDRESS + 0x100 × i`, every instruction is one byte at line 1 of
/// `sample.c`.
struct Code {
    names: Vec<String>,
}

impl CodeMap for Code {
    fn function_at(&self, address: u64) -> Option<CodeFunction> {
        let index = (address.checked_sub(FIRST_ADDRESS)? / 0x100) as usize;
        Some(CodeFunction {
            address: FIRST_ADDRESS + 0x100 * index as u64,
            name: self.names.get(index)?.clone(),
        })
    }

    fn frames(&self, address: u64) -> Vec<SourceFrame> {
        vec![SourceFrame {
            function: self.function_at(address).map(|f| f.name),
            file: Some("sample.c".into()),
            line: Some(1),
        }]
    }

    fn decode(&self, address: u64, size: u32) -> Vec<DecodedInstruction> {
        (0..u64::from(size))
            .map(|i| DecodedInstruction {
                address: address + i,
                text: "nop".into(),
            })
            .collect()
    }
}

/// `worker_threads` with one one-instruction block per function, run as often
/// as the function's self cost.
fn profile_with_blocks() -> (Profile, Code) {
    let (mut raw, resolver) = worker_threads().finish();
    let plain = Profile::from_raw(&raw, &resolver, "0.1.0").expect("consistent");
    raw.blocks = plain
        .functions
        .iter()
        .map(|f| Block {
            address: f.address,
            size: 1,
            instructions: 1,
            executions: f.self_instructions,
            cycles: Vec::new(),
            events: Vec::new(),
        })
        .collect();
    let profile = Profile::from_raw(&raw, &resolver, "0.1.0").expect("consistent");
    let names = plain.functions.iter().map(|f| f.name.clone()).collect();
    (profile, Code { names })
}

/// `callgrind_annotate`'s output for `profile` written with `thread`, or
/// `None` when the tool is missing (outside CI).
fn annotate(profile: &Profile, code: &Code, thread: Option<u64>) -> Option<(String, String)> {
    let costs = InstructionCosts::build(profile, code);
    let mut options = CallgrindOptions::default();
    options.thread = thread;
    let mut bytes = Vec::new();
    write_callgrind(profile, &costs, &options, &mut bytes).expect("writes");
    let file = std::env::temp_dir().join(format!(
        "emuprof-callgrind-threads-{}-{}.out",
        std::process::id(),
        thread.unwrap_or(0)
    ));
    std::fs::write(&file, &bytes).expect("write the export");
    let run = Command::new("callgrind_annotate")
        .args(["--threshold=100", "--auto=no"])
        .arg(&file)
        .output();
    let _ = std::fs::remove_file(&file);
    let output = match run {
        Ok(output) => output,
        Err(_) => {
            common::ci::skip_unless_ci("callgrind_annotate (valgrind) is not installed");
            return None;
        }
    };
    assert!(
        output.status.success(),
        "callgrind_annotate failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some((
        String::from_utf8(bytes).expect("UTF-8 export"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    ))
}

/// The `PROGRAM TOTALS` count of callgrind_annotate's output.
fn program_total(text: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.contains("PROGRAM TOTALS"))
        .unwrap_or_else(|| panic!("no PROGRAM TOTALS in:\n{text}"));
    let count = line.split_whitespace().next().expect("a count");
    count.replace(',', "").parse().expect("a number")
}

#[test]
fn callgrind_annotate_reads_the_whole_process_and_each_thread() {
    let (profile, code) = profile_with_blocks();
    let Some((file, text)) = annotate(&profile, &code, None) else {
        return;
    };
    assert_eq!(program_total(&text), 1035, "{text}");
    assert!(!file.contains("thread:"), "the whole process is one part");

    for thread in &profile.threads {
        let view = profile.thread_view(thread.id).expect("the thread exists");
        let (file, text) = annotate(&view, &code, Some(thread.id)).expect("tool found above");
        assert!(
            file.contains(&format!("\nthread: {}\n", thread.id)),
            "{file}"
        );
        assert_eq!(
            program_total(&text),
            thread.instructions,
            "thread {}",
            thread.id
        );
    }
}

//! Feeds arbitrary bytes to the profile reader: it must refuse or accept,
//! never panic, and every report `emuprof report` writes from an accepted
//! profile must not panic either.
#![no_main]

use emuprof_analysis::report::{flat, graph, summary, tree};
use emuprof_analysis::{CallGraph, DisplayTree, Profile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(profile) = Profile::read_json(data) else {
        return;
    };
    let graph = CallGraph::new(&profile);
    let _ = DisplayTree::new(&graph).rows(&graph, 0.0);
    let _ = flat::write_text(&graph, &Default::default(), std::io::sink());
    let _ = graph::write_text(&graph, &Default::default(), std::io::sink());
    let _ = summary::write_text(&graph, &Default::default(), std::io::sink());
    let _ = tree::write_text(&graph, &Default::default(), std::io::sink());
});

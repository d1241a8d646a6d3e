//! pprof export: a gzip-compressed `profile.proto` message, read by
//! `go tool pprof` (top, list, peek, web UI with flame graph), Grafana Pyroscope,
//! speedscope and Perfetto.
//!
//! One sample type, `instructions/count`. Every stack of [`super::stacks`] with
//! a self cost becomes samples: the leaf location is an instruction address whose
//! source lines carry the inline chain (innermost first, as pprof wants), so
//! `pprof -list` shows per-line counts and inlined functions appear as frames.
//! The stack's self cost is divided among its function's addresses in the
//! proportions measured over all the function's contexts (exact when the function
//! has one context; see [`super::stacks::SelfCostSplit`]). Caller frames are
//! located at the call instruction that made the call (the profile records
//! each context's call site), with that instruction's inline chain and line,
//! so `pprof -list` shows a callee's cost on the line of its call. Without
//! recorded call sites (profiles before schema version 3) a caller frame is
//! at its function's start address, and without instruction costs every
//! frame is.
//!
//! A profile with more than one thread gives each thread's own stacks
//! ([`Profile::thread_views`]) with a numeric `thread` label holding the guest
//! thread id (`pprof -tagfocus thread=4243`, `-tags`).
//!
//! The file is deterministic: no timestamps, tables in a fixed order.

use std::io::{self, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;
use rustc_hash::FxHashMap;

use crate::instructions::InstructionCosts;
use crate::profile::{FunctionId, Profile};

use super::pprof_proto as proto;
use super::stacks::{SelfCostSplit, StackOptions, Stacks};

/// Writes `profile` as a gzipped pprof protobuf.
pub fn write_pprof<W: Write>(
    profile: &Profile,
    costs: Option<&InstructionCosts>,
    options: &StackOptions,
    out: W,
) -> io::Result<()> {
    let message = build(profile, costs, options);
    let mut encoder = GzEncoder::new(out, Compression::default());
    encoder.write_all(&message.encode_to_vec())?;
    encoder.finish()?.flush()
}

/// Builds the pprof message (exposed to the tests through [`write_pprof`]).
fn build(
    profile: &Profile,
    costs: Option<&InstructionCosts>,
    options: &StackOptions,
) -> proto::Profile {
    let mut builder = Builder {
        profile,
        costs,
        inline: options.inline,
        strings: vec![String::new()],
        string_ids: FxHashMap::default(),
        functions: Vec::new(),
        function_ids: FxHashMap::default(),
        locations: Vec::new(),
        location_ids: FxHashMap::default(),
        instruction_index: costs
            .map(|c| {
                c.instructions
                    .iter()
                    .enumerate()
                    .map(|(i, ins)| (ins.address, i))
                    .collect()
            })
            .unwrap_or_default(),
    };
    let split = costs.map(|c| SelfCostSplit::new(profile, c, |i| i.address));
    let mut samples = Vec::new();
    if profile.threads.len() <= 1 {
        let stacks = Stacks::new(profile, options);
        let ids: Vec<FunctionId> = (0..profile.functions.len() as FunctionId).collect();
        add_samples(
            &mut builder,
            &stacks,
            &ids,
            split.as_ref(),
            None,
            &mut samples,
        );
    } else {
        for view in profile.thread_views() {
            let stacks = Stacks::new(&view, options);
            let ids = view.function_ids_in(profile);
            let key = builder.string("thread");
            let label = proto::Label {
                key,
                num: i64::try_from(view.threads[0].id).unwrap_or(i64::MAX),
                ..proto::Label::default()
            };
            let label = Some(label);
            add_samples(
                &mut builder,
                &stacks,
                &ids,
                split.as_ref(),
                label,
                &mut samples,
            );
        }
    }

    // The sample type names the metric the profile is measured in
    // (`instructions`, `cycles`, `D1mr`...).
    let instructions = builder.string(profile.metric.name());
    let count = builder.string("count");
    let binary = builder.string(profile.command.first().map_or("", String::as_str));
    let comment = builder.string(&format!(
        "emuprof {}: {}",
        profile.emuprof_version,
        profile.command.join(" ")
    ));
    let memory_limit = profile
        .blocks
        .iter()
        .map(|b| b.address + u64::from(b.size))
        .max()
        .unwrap_or(0);
    let has_lines = costs.is_some();
    let mapping_of =
        |id: u64, start: u64, limit: u64, filename: i64, build_id: i64| proto::Mapping {
            id,
            memory_start: start,
            memory_limit: limit,
            filename,
            build_id,
            has_functions: true,
            has_filenames: has_lines,
            has_line_numbers: has_lines,
            has_inline_frames: has_lines && options.inline,
            ..proto::Mapping::default()
        };
    // One mapping per loaded object (program, dynamic linker, libraries), as
    // pprof gives each its own; a profile that records none gets one
    // mapping for the program covering every address.
    let mapping = if profile.objects.is_empty() {
        vec![mapping_of(1, 0, memory_limit, binary, 0)]
    } else {
        let objects = profile.objects.clone();
        objects
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let filename = builder.string(&o.path);
                let build_id = builder.string(o.build_id.as_deref().unwrap_or(""));
                mapping_of(i as u64 + 1, o.start, o.end, filename, build_id)
            })
            .collect()
    };
    proto::Profile {
        sample_type: vec![proto::ValueType {
            r#type: instructions,
            unit: count,
        }],
        sample: samples,
        mapping,
        location: builder.locations,
        function: builder.functions,
        string_table: builder.strings,
        period_type: Some(proto::ValueType {
            r#type: instructions,
            unit: count,
        }),
        period: 1,
        comment: vec![comment],
        ..proto::Profile::default()
    }
}

/// Adds a sample per stack with a self cost (per address of its top function
/// when `split` knows them); `ids` maps the stacks' function ids to the
/// profile's; `label` is put on every sample.
fn add_samples(
    builder: &mut Builder,
    stacks: &Stacks,
    ids: &[FunctionId],
    split: Option<&SelfCostSplit<u64>>,
    label: Option<proto::Label>,
    samples: &mut Vec<proto::Sample>,
) {
    for (id, &self_instructions) in stacks.self_instructions.iter().enumerate() {
        if self_instructions == 0 {
            continue;
        }
        let mut path: Vec<FunctionId> = stacks
            .functions(id as u32)
            .iter()
            .map(|&f| ids[f as usize])
            .collect();
        path.reverse(); // leaf first
                        // Each caller is located at the call it made to the frame above it.
        let sites = stacks.call_sites_leaf_first(id as u32);
        let callers: Vec<u64> = path[1..]
            .iter()
            .zip(&sites)
            .map(|(&f, site)| match site {
                Some(address) => builder.address_location(*address, f),
                None => builder.function_location(f),
            })
            .collect();
        let top = path[0];
        let parts = split
            .and_then(|s| s.split(top, self_instructions))
            .unwrap_or_else(|| {
                let start = builder.profile.functions[top as usize].address;
                vec![(start, self_instructions)]
            });
        for (address, part) in parts {
            let mut location_id = vec![builder.address_location(address, top)];
            location_id.extend_from_slice(&callers);
            samples.push(proto::Sample {
                location_id,
                value: vec![i64::try_from(part).unwrap_or(i64::MAX)],
                label: label.iter().cloned().collect(),
            });
        }
    }
}

/// Interning tables of the message being built.
struct Builder<'a> {
    profile: &'a Profile,
    costs: Option<&'a InstructionCosts>,
    inline: bool,
    strings: Vec<String>,
    string_ids: FxHashMap<String, i64>,
    functions: Vec<proto::Function>,
    function_ids: FxHashMap<(String, String), u64>,
    locations: Vec<proto::Location>,
    location_ids: FxHashMap<(u64, bool), u64>,
    instruction_index: FxHashMap<u64, usize>,
}

impl Builder<'_> {
    fn string(&mut self, text: &str) -> i64 {
        if let Some(&id) = self.string_ids.get(text) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.push(text.to_string());
        self.string_ids.insert(text.to_string(), id);
        id
    }

    fn function(&mut self, name: &str, file: &str, start_line: u32) -> u64 {
        let key = (name.to_string(), file.to_string());
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        let name_id = self.string(name);
        let file_id = self.string(file);
        self.functions.push(proto::Function {
            id,
            name: name_id,
            system_name: name_id,
            filename: file_id,
            start_line: i64::from(start_line),
        });
        self.function_ids.insert(key, id);
        id
    }

    /// A location of profile function `function` at its start address.
    fn function_location(&mut self, function: FunctionId) -> u64 {
        let start = self.profile.functions[function as usize].address;
        self.location(start, function, false)
    }

    /// A location at `address` inside `function`, with its inline chain.
    fn address_location(&mut self, address: u64, function: FunctionId) -> u64 {
        self.location(address, function, true)
    }

    fn location(&mut self, address: u64, function: FunctionId, with_inline: bool) -> u64 {
        let key = (address, with_inline);
        if let Some(&id) = self.location_ids.get(&key) {
            return id;
        }
        let own = &self.profile.functions[function as usize];
        let (own_name, own_file, own_line) = (
            own.name.clone(),
            own.file.clone().unwrap_or_default(),
            own.line.unwrap_or(0),
        );
        let frames = self
            .instruction_index
            .get(&address)
            .and_then(|&i| Some(self.costs?.instructions[i].frames.clone()))
            .unwrap_or_default();
        let mut lines = Vec::new();
        let inner = frames.len().saturating_sub(1);
        if with_inline && self.inline {
            for frame in &frames[..inner] {
                let name = frame.function.as_deref().unwrap_or("??");
                let file = frame.file.as_deref().unwrap_or("");
                let function_id = self.function(name, file, 0);
                lines.push(proto::Line {
                    function_id,
                    line: i64::from(frame.line.unwrap_or(0)),
                });
            }
        }
        let line = frames.last().and_then(|f| f.line).unwrap_or(own_line);
        let function_id = self.function(&own_name, &own_file, own_line);
        lines.push(proto::Line {
            function_id,
            line: i64::from(line),
        });
        let id = self.locations.len() as u64 + 1;
        // The object holding the address; the program's (as in the
        // Callgrind export) for code outside every recorded object.
        let mapping_id = self
            .profile
            .objects
            .iter()
            .position(|o| o.start <= address && address < o.end)
            .map_or(1, |i| i as u64 + 1);
        self.locations.push(proto::Location {
            id,
            mapping_id,
            address,
            line: lines,
            is_folded: false,
        });
        self.location_ids.insert(key, id);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instructions::tests::{profile_with_blocks, FakeCode};
    use std::io::Read;

    fn decode(bytes: &[u8]) -> proto::Profile {
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut raw)
            .expect("gzip");
        proto::Profile::decode(&raw[..]).expect("protobuf")
    }

    #[test]
    fn samples_add_up_and_inline_frames_are_lines() {
        let mut profile = profile_with_blocks(&[(0x1000, 8, 4, 1), (0x1010, 4, 2, 1)]);
        profile.functions[0].address = 0x1000;
        profile.functions[0].name = "f".into();
        profile.call_tree[0].self_instructions = 6;
        let costs = InstructionCosts::build(&profile, &FakeCode);
        let mut bytes = Vec::new();
        let inline = StackOptions {
            inline: true,
            ..StackOptions::default()
        };
        write_pprof(&profile, Some(&costs), &inline, &mut bytes).expect("writes");
        let message = decode(&bytes);
        let total: i64 = message.sample.iter().map(|s| s.value[0]).sum();
        assert_eq!(total, 6);
        assert_eq!(message.string_table[0], "");
        let inlined = message
            .location
            .iter()
            .find(|l| l.address == 0x1010)
            .expect("a location for the inlined instruction");
        let names: Vec<&str> = inlined
            .line
            .iter()
            .map(|line| {
                let function = &message.function[line.function_id as usize - 1];
                message.string_table[function.name as usize].as_str()
            })
            .collect();
        assert_eq!(names, ["helper", "f"]);
    }

    #[test]
    fn each_thread_has_its_own_stacks_labelled_with_its_id() {
        let (raw, resolver) = crate::sample::worker_threads().finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let message = build(&profile, None, &StackOptions::default());
        let strings = &message.string_table;
        let mut per_thread: std::collections::BTreeMap<i64, i64> = Default::default();
        for sample in &message.sample {
            assert_eq!(sample.label.len(), 1, "one thread label per sample");
            let label = &sample.label[0];
            assert_eq!(strings[label.key as usize], "thread");
            *per_thread.entry(label.num).or_default() += sample.value[0];
            // A thread's stacks start at its own root, not under its spawner.
            let root = *sample.location_id.last().expect("a stack");
            let location = &message.location[root as usize - 1];
            let function = &message.function[location.line[0].function_id as usize - 1];
            let expected = if label.num == 4242 { "_start" } else { "clone" };
            assert_eq!(strings[function.name as usize], expected);
        }
        let expected: std::collections::BTreeMap<i64, i64> = profile
            .threads
            .iter()
            .map(|t| (t.id as i64, t.instructions as i64))
            .collect();
        assert_eq!(per_thread, expected);
    }
}

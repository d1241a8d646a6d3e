//! The lines of the stream (version [`VERSION`], described in `docs/stream.md`):
//! newline-delimited JSON, one object per line, each with a `type`.
//!
//! The viewer sends one [`Hello`] line; the server answers with a
//! [`ServerLine::Header`] (or [`ServerLine::Refused`] and closes), then a
//! [`ServerLine::Snapshot`] whenever it has a newer one. Every snapshot is the
//! whole profile so far, so a viewer that joins late or misses snapshots
//! still has a consistent tree; the last one carries `end`.

use std::collections::HashMap;

use anyhow::{bail, Result};
use emuprof_analysis::raw::{NodeId, RawNode, RawProfile};
use emuprof_analysis::{FunctionInfo, Profile};
use serde::{Deserialize, Serialize};

use crate::commands::live::Moment;
use emuprof_emu::live::{ProcessName, Processes, ThreadStack};

/// The stream format's name, in the header.
pub const FORMAT: &str = "emuprof-stream";
/// The stream format's version; a change that old viewers cannot read
/// increments it.
pub const VERSION: u32 = 1;

/// The longest line either side sends or reads (a snapshot of a huge
/// tree): the server skips a snapshot that would be longer, a viewer stops
/// reading a stream that sends one.
pub const MAX_LINE: u64 = 64 << 20;

/// The viewer's first line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Hello {
    /// The stream version the viewer reads.
    pub version: u32,
    /// The server's token, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// A line from the server.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerLine {
    /// The first line: what is streamed.
    Header {
        /// Always [`FORMAT`].
        format: String,
        /// [`VERSION`].
        version: u32,
        /// The emuprof that serves.
        emuprof_version: String,
        /// The guest's argv.
        command: Vec<String>,
    },
    /// The viewer is not served (wrong token, version, too many viewers).
    Refused {
        /// Why, for the user.
        reason: String,
    },
    /// The profile so far.
    Snapshot(Snapshot),
}

/// The profile at one moment, self-contained.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    /// Counts up from 1; a viewer may see gaps (dropped snapshots).
    pub seq: u64,
    /// Instructions executed so far.
    pub instructions: u64,
    /// Functions seen so far.
    pub functions: Vec<StreamFunction>,
    /// Calling contexts, parents before children: `[parent, function, calls,
    /// self, inclusive]`, `parent` null for the root, `function` an index
    /// into `functions`; inclusive includes calls still running.
    pub nodes: Vec<(Option<NodeId>, u32, u64, u64, u64)>,
    /// Node ids of the running thread's active calls, outermost first.
    pub stack: Vec<NodeId>,
    /// Every live guest thread's active calls, the main thread first (none
    /// on the last snapshot, nor from servers older than this field).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<StreamThread>,
    /// Which process the tree is of and which one runs (none on the last
    /// snapshot, nor from servers older than this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<StreamProcesses>,
    /// Set on the last snapshot: how the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<End>,
}

/// One guest thread of a [`Snapshot`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StreamThread {
    /// Thread id as the guest sees it.
    pub tid: u64,
    /// Whether it is the thread that ran last (its stack is `stack`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub running: bool,
    /// Node ids of its active calls, outermost first.
    pub stack: Vec<NodeId>,
}

/// A guest process of a [`Snapshot`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StreamProcess {
    /// Process id.
    pub pid: u64,
    /// The program its image runs.
    pub program: String,
}

/// The guest processes of a [`Snapshot`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StreamProcesses {
    /// The process whose call tree the snapshot is (the first program's).
    pub shown: StreamProcess,
    /// The process running now.
    pub running: StreamProcess,
    /// Process images running now.
    pub live: usize,
    /// The running process's calls, innermost first, when it is a fork
    /// child of the shown one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running_calls: Vec<String>,
}

impl StreamProcesses {
    fn new(p: &Processes, running_calls: &[String]) -> StreamProcesses {
        let process = |n: &ProcessName| StreamProcess {
            pid: n.pid,
            program: n.program.clone(),
        };
        StreamProcesses {
            shown: process(&p.shown),
            running: process(&p.running),
            live: p.live,
            running_calls: running_calls.to_vec(),
        }
    }

    fn to_processes(&self) -> Processes {
        let name = |p: &StreamProcess| ProcessName {
            pid: p.pid,
            program: p.program.clone(),
        };
        Processes {
            shown: name(&self.shown),
            running: name(&self.running),
            running_calls: Vec::new(),
            live: self.live,
        }
    }
}

/// A function of a [`Snapshot`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StreamFunction {
    /// Demangled name.
    pub name: String,
    /// Start address.
    pub address: u64,
    /// Source file, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Source line, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// How the run ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct End {
    /// Why the run stopped, as emuprof says it.
    pub stop: String,
    /// The program's exit status, when it finished.
    pub exit_status: Option<i32>,
}

impl ServerLine {
    /// The header of a stream of the run of `command`.
    pub fn header(command: &[String]) -> ServerLine {
        ServerLine::Header {
            format: FORMAT.to_string(),
            version: VERSION,
            emuprof_version: env!("CARGO_PKG_VERSION").to_string(),
            command: command.to_vec(),
        }
    }

    /// The line as sent: JSON and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

impl Snapshot {
    /// The snapshot of `moment`, numbered `seq`.
    pub fn new(seq: u64, moment: &Moment, end: Option<End>) -> Snapshot {
        let profile = &moment.profile;
        Snapshot {
            seq,
            instructions: profile.totals.instructions,
            functions: profile
                .functions
                .iter()
                .map(|f| StreamFunction {
                    name: f.name.clone(),
                    address: f.address,
                    file: f.file.clone(),
                    line: f.line,
                })
                .collect(),
            nodes: profile
                .call_tree
                .iter()
                .map(|n| {
                    (
                        n.parent,
                        n.function,
                        n.calls,
                        n.self_instructions,
                        n.inclusive_instructions,
                    )
                })
                .collect(),
            stack: moment.running_stack().to_vec(),
            threads: moment
                .threads
                .iter()
                .map(|t| StreamThread {
                    tid: t.tid,
                    running: t.running,
                    stack: t.stack.clone(),
                })
                .collect(),
            processes: moment
                .processes
                .as_ref()
                .map(|p| StreamProcesses::new(p, &moment.running_process_calls)),
            end,
        }
    }

    /// The moment this snapshot describes, with the function costs computed
    /// again by the analysis layer. Fails on an inconsistent snapshot.
    pub fn to_moment(&self, command: &[String]) -> Result<Moment> {
        let by_address: HashMap<u64, &StreamFunction> =
            self.functions.iter().map(|f| (f.address, f)).collect();
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for &(parent, function, calls, self_instructions, inclusive) in &self.nodes {
            let Some(f) = self.functions.get(function as usize) else {
                bail!("a node refers to function {function}, which the snapshot does not list");
            };
            nodes.push(RawNode {
                parent,
                entry: f.address,
                calls,
                self_instructions,
                inclusive_instructions: inclusive,
                ..RawNode::default()
            });
        }
        let raw = RawProfile {
            folded_recursion: None,
            command: command.to_vec(),
            total_instructions: self.instructions,
            exit_status: self.end.as_ref().and_then(|e| e.exit_status),
            nodes,
            ..RawProfile::default()
        };
        let resolve = |entry: u64| {
            let f = by_address.get(&entry);
            FunctionInfo {
                address: entry,
                name: f.map_or_else(|| format!("{entry:#x}"), |f| f.name.clone()),
                file: f.and_then(|f| f.file.clone()),
                line: f.and_then(|f| f.line),
                object: None,
            }
        };
        let profile = Profile::from_raw(&raw, &resolve, env!("CARGO_PKG_VERSION"))?;
        let threads: Vec<ThreadStack> = if self.threads.is_empty() {
            // A server older than `threads`: the running thread's only.
            vec![ThreadStack {
                tid: 0,
                running: true,
                stack: self.stack.clone(),
            }]
        } else {
            self.threads
                .iter()
                .map(|t| ThreadStack {
                    tid: t.tid,
                    running: t.running,
                    stack: t.stack.clone(),
                })
                .collect()
        };
        if threads
            .iter()
            .flat_map(|t| &t.stack)
            .chain(&self.stack)
            .any(|&id| id as usize >= profile.call_tree.len())
        {
            bail!("a call stack refers to a node the snapshot does not have");
        }
        Ok(Moment {
            profile: std::sync::Arc::new(profile),
            threads,
            processes: self.processes.as_ref().map(StreamProcesses::to_processes),
            running_process_calls: self
                .processes
                .as_ref()
                .map_or_else(Vec::new, |p| p.running_calls.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::live::moment::node;
    use emuprof_emu::live::TreeSnapshot;

    /// Two threads: the main one in 0x10 → 0x20, a worker (running) in
    /// 0x30 → 0x20; of process 7, while its fork child 9 runs in 0x20
    /// called from 0x10.
    #[test]
    fn a_snapshot_survives_the_wire() {
        let name = |pid: u64, program: &str| ProcessName {
            pid,
            program: program.into(),
        };
        let snapshot = TreeSnapshot {
            nodes: vec![
                node(None, 0x10, 3),
                node(Some(0), 0x20, 7),
                node(Some(1), 0x30, 1),
                node(Some(2), 0x20, 5),
            ],
            threads: vec![
                ThreadStack {
                    tid: 7,
                    running: false,
                    stack: vec![0, 1],
                },
                ThreadStack {
                    tid: 8,
                    running: true,
                    stack: vec![2, 3],
                },
            ],
            instructions: 16,
            libraries: Vec::new(),
            processes: Processes {
                shown: name(7, "./prog"),
                running: name(9, "./prog"),
                running_calls: vec![0x20, 0x10],
                live: 2,
            },
        };
        let resolve = |entry: u64| FunctionInfo {
            address: entry,
            name: format!("f{entry:x}"),
            file: Some("a.c".into()),
            line: Some(3),
            object: None,
        };
        let command = vec!["prog".to_string()];
        let moment = Moment::from_snapshot(&snapshot, &command, &resolve).unwrap();
        let line = ServerLine::Snapshot(Snapshot::new(1, &moment, None)).to_bytes();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let ServerLine::Snapshot(back) = serde_json::from_slice(&line).unwrap() else {
            panic!("not a snapshot");
        };
        assert_eq!(back.stack, [2, 3], "`stack` is the running thread's");
        let again = back.to_moment(&command).unwrap();
        assert_eq!(again.profile.functions, moment.profile.functions);
        assert_eq!(again.profile.call_tree, moment.profile.call_tree);
        assert_eq!(again.threads, snapshot.threads);
        let processes = again.processes.expect("processes");
        assert_eq!(
            (processes.shown, processes.running, processes.live),
            (
                snapshot.processes.shown,
                snapshot.processes.running,
                snapshot.processes.live
            )
        );
        assert_eq!(again.running_process_calls, ["f20", "f10"]);
    }

    /// A line from a server older than `threads` and `processes` (same
    /// version: they are optional) shows its one stack as the running
    /// thread's.
    #[test]
    fn a_snapshot_without_threads_has_the_running_stack() {
        let line = r#"{"type":"snapshot","seq":3,"instructions":10,
            "functions":[{"name":"main","address":16},{"name":"f","address":32}],
            "nodes":[[null,0,1,3,10],[0,1,2,7,7]],"stack":[0,1]}"#;
        let ServerLine::Snapshot(old) = serde_json::from_str(line).unwrap() else {
            panic!("not a snapshot");
        };
        let moment = old.to_moment(&[]).unwrap();
        assert_eq!(moment.running_stack(), [0, 1]);
        assert_eq!(moment.threads.len(), 1);
        assert_eq!(moment.processes, None);
    }

    #[test]
    fn an_inconsistent_snapshot_is_refused() {
        let bad = Snapshot {
            seq: 1,
            instructions: 1,
            functions: vec![],
            nodes: vec![(None, 3, 1, 1, 1)],
            stack: vec![],
            threads: vec![],
            processes: None,
            end: None,
        };
        assert!(bad.to_moment(&[]).is_err());
        let functions = vec![StreamFunction {
            name: "main".into(),
            address: 1,
            file: None,
            line: None,
        }];
        let stray_thread = Snapshot {
            functions,
            nodes: vec![(None, 0, 1, 1, 1)],
            threads: vec![StreamThread {
                tid: 2,
                running: false,
                stack: vec![0, 5],
            }],
            ..bad
        };
        assert!(stray_thread.to_moment(&[]).is_err());
    }
}

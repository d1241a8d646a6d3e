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

/// The stream format's name, in the header.
pub const FORMAT: &str = "emuprof-stream";
/// The stream format's version; a change that old viewers cannot read
/// increments it.
pub const VERSION: u32 = 1;

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
    /// Node ids of the active calls, outermost first.
    pub stack: Vec<NodeId>,
    /// Set on the last snapshot: how the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<End>,
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
            stack: moment.stack.clone(),
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
        if self
            .stack
            .iter()
            .any(|&id| id as usize >= profile.call_tree.len())
        {
            bail!("the call stack refers to a node the snapshot does not have");
        }
        Ok(Moment {
            profile: std::sync::Arc::new(profile),
            stack: self.stack.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emuprof_emu::live::TreeSnapshot;

    #[test]
    fn a_snapshot_survives_the_wire() {
        let snapshot = TreeSnapshot {
            nodes: vec![
                RawNode {
                    entry: 0x10,
                    calls: 1,
                    self_instructions: 3,
                    ..RawNode::default()
                },
                RawNode {
                    parent: Some(0),
                    entry: 0x20,
                    calls: 2,
                    self_instructions: 7,
                    ..RawNode::default()
                },
            ],
            stack: vec![0, 1],
            instructions: 10,
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
        let again = back.to_moment(&command).unwrap();
        assert_eq!(again.profile.functions, moment.profile.functions);
        assert_eq!(again.profile.call_tree, moment.profile.call_tree);
        assert_eq!(again.stack, [0, 1]);
    }

    #[test]
    fn an_inconsistent_snapshot_is_refused() {
        let bad = Snapshot {
            seq: 1,
            instructions: 1,
            functions: vec![],
            nodes: vec![(None, 3, 1, 1, 1)],
            stack: vec![],
            end: None,
        };
        assert!(bad.to_moment(&[]).is_err());
    }
}

//! A timeline of a run on the virtual clock (1 ns per instruction, as the
//! guest's clock runs), built from what the profile records.
//!
//! The profile records costs per calling context, not when each call ran,
//! so the timeline cannot show the order of events. It shows what can be
//! built exactly, by these rules:
//!
//! - A thread's track lays out its own calling contexts depth-first in
//!   call-tree order: a context's own instructions first, then its callees
//!   in the order they were first called (the order of the speedscope
//!   export). Each context is one [`Slice`] as long as its self
//!   instructions; the calls of one context are merged into it.
//! - The first program's main thread starts at 0. A spawned thread starts
//!   where its parent's track reaches the context that spawned it; a forked
//!   process image where its parent's track reaches the forking context; an
//!   image an `execve` started where the image it replaced ends.
//! - A thread ends its own instruction count after it starts; an image ends
//!   with its last thread.
//!
//! So the length of every track, the share of each context and which
//! thread or process came from which are exact; where in a track a call
//! sits, and how threads interleaved, are not recorded.

use crate::profile::{ProcessOrigin, Profile};
use crate::threads::{spawned_roots, thread_of_contexts};
use crate::tree::Children;

/// One calling context's own instructions on a track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// The context (index into the image's `call_tree`).
    pub node: u32,
    /// Where it starts on the virtual clock, in nanoseconds.
    pub start: u64,
    /// Its self instructions (and nanoseconds).
    pub instructions: u64,
}

/// One guest thread's track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadTrack {
    /// Index into the image's `threads`.
    pub thread: usize,
    /// Start on the virtual clock, in nanoseconds.
    pub start: u64,
    /// End: `start` plus the thread's instructions.
    pub end: u64,
    /// The thread's contexts with their own instructions, in track order.
    pub slices: Vec<Slice>,
}

/// One process image's tracks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageTrack {
    /// Index of the image (0: the first program, `i + 1`: `processes[i]`).
    pub image: usize,
    /// Its main thread's start.
    pub start: u64,
    /// Its last thread's end.
    pub end: u64,
    /// Its threads, in the image's thread order.
    pub threads: Vec<ThreadTrack>,
}

/// The tracks of every image of `profile` (a whole run, valid), by the
/// rules of the module documentation.
pub fn lay_out(profile: &Profile) -> Vec<ImageTrack> {
    let images: Vec<&Profile> = profile.images().collect();
    let mut tracks: Vec<ImageTrack> = Vec::with_capacity(images.len());
    // Per image: the start of each context's slice on the clock.
    let mut node_starts: Vec<Vec<u64>> = Vec::with_capacity(images.len());
    for (index, image) in images.iter().enumerate() {
        let start = match image.process.origin {
            ProcessOrigin::First => 0,
            ProcessOrigin::Forked { image: from, at } => node_starts
                .get(from)
                .and_then(|starts| starts.get(at as usize))
                .copied()
                .unwrap_or(0),
            ProcessOrigin::Execed { image: from } => tracks.get(from).map_or(0, |t| t.end),
        };
        let (track, starts) = lay_out_image(image, index, start);
        tracks.push(track);
        node_starts.push(starts);
    }
    tracks
}

/// The tracks of one image starting at `start`, and each context's start.
fn lay_out_image(image: &Profile, index: usize, start: u64) -> (ImageTrack, Vec<u64>) {
    let nodes = &image.call_tree;
    let children = Children::new(nodes);
    let owner = thread_of_contexts(image);
    let spawned = spawned_roots(image);
    let mut starts = vec![start; nodes.len()];
    let mut threads = Vec::with_capacity(image.threads.len());
    for (thread_index, thread) in image.threads.iter().enumerate() {
        let thread_start = match thread.spawned_at {
            Some(at) => starts.get(at as usize).copied().unwrap_or(start),
            None => start,
        };
        let mut cursor = thread_start;
        let mut slices = Vec::new();
        let mut stack = vec![thread.root];
        while let Some(id) = stack.pop() {
            let node = &nodes[id as usize];
            starts[id as usize] = cursor;
            if node.self_instructions > 0 {
                slices.push(Slice {
                    node: id,
                    start: cursor,
                    instructions: node.self_instructions,
                });
                cursor += node.self_instructions;
            }
            // Callees in id order: pushed in reverse so the first pops first.
            let own = children.of(id).iter().rev().filter(|&&child| {
                !spawned[child as usize] && owner[child as usize] == thread_index as u32
            });
            stack.extend(own);
        }
        threads.push(ThreadTrack {
            thread: thread_index,
            start: thread_start,
            end: cursor,
            slices,
        });
    }
    let end = threads.iter().map(|t| t.end).max().unwrap_or(start);
    let track = ImageTrack {
        image: index,
        start,
        end,
        threads,
    };
    (track, starts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RawTreeBuilder;

    #[test]
    fn a_thread_lays_out_its_contexts_depth_first_on_its_instruction_count() {
        let mut tree = RawTreeBuilder::new("main", 5);
        let work = tree.call(0, "work", 2, 100);
        tree.call(work, "leaf", 4, 40);
        tree.call(0, "tail", 1, 7);
        let (raw, resolver) = tree.finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let tracks = lay_out(&profile);
        assert_eq!(tracks.len(), 1);
        let main = &tracks[0].threads[0];
        let slices: Vec<(&str, u64, u64)> = main
            .slices
            .iter()
            .map(|s| {
                let name = &profile
                    .function_of(&profile.call_tree[s.node as usize])
                    .name;
                (name.as_str(), s.start, s.instructions)
            })
            .collect();
        assert_eq!(
            slices,
            [
                ("main", 0, 5),
                ("work", 5, 100),
                ("leaf", 105, 40),
                ("tail", 145, 7)
            ]
        );
        assert_eq!((main.start, main.end), (0, 152));
        assert_eq!((tracks[0].start, tracks[0].end), (0, 152));
    }

    #[test]
    fn a_spawned_thread_starts_where_its_parent_reaches_the_spawn() {
        let (raw, resolver) = crate::sample::worker_threads().finish();
        let profile = Profile::from_raw(&raw, &resolver, "test").expect("consistent");
        let tracks = lay_out(&profile);
        let image = &tracks[0];
        assert_eq!(image.threads.len(), profile.threads.len());
        for (track, thread) in image.threads.iter().zip(&profile.threads) {
            assert_eq!(
                track.end - track.start,
                thread.instructions,
                "{}",
                thread.id
            );
            let own: u64 = track.slices.iter().map(|s| s.instructions).sum();
            assert_eq!(own, thread.instructions);
            if let Some(at) = thread.spawned_at {
                let parent_index = profile
                    .threads
                    .iter()
                    .position(|t| Some(t.id) == thread.parent)
                    .expect("the parent thread");
                let parent = &image.threads[parent_index];
                let spawn = parent.slices.iter().find(|s| s.node == at);
                let spawn_start = spawn.map(|s| s.start);
                assert!(
                    spawn_start.is_none_or(|s| s == track.start),
                    "thread {} starts at {} where the spawn is at {spawn_start:?}",
                    thread.id,
                    track.start
                );
                assert!(track.start >= parent.start && track.start <= parent.end);
            }
        }
        assert_eq!(
            image.end,
            image.threads.iter().map(|t| t.end).max().unwrap_or(0)
        );
    }
}

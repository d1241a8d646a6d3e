//! The Firefox Profiler's processed profile format (JSON, as samply writes
//! it, through samply's `fxprof-processed-profile` crate): open the file at
//! <https://profiler.firefox.com> ("Load a profile from file").
//!
//! - Tracks: one process per process image (an `execve`d program is a
//!   process of its own, with the same pid), one thread per guest thread,
//!   named `PROGRAM` for the main thread and `thread ID` for the others,
//!   with its guest pid and tid.
//! - Time: the virtual clock, 1 ns per instruction, laid out as
//!   [`crate::timeline`] describes: the profile records no order of calls,
//!   so each thread's contexts follow each other depth-first in call-tree
//!   order, a spawned thread starts where its parent reaches the spawning
//!   context, a forked process where its parent reaches the fork.
//! - Samples: one per calling context with its own instructions as the
//!   sample's weight (split into several samples when more than `i32::MAX`),
//!   so the Call Tree, Flame Graph and Stack Chart show exact instruction
//!   counts. Frames are function names, told apart by object when two
//!   objects have one ([`Profile::function_labels`]).
//! - Deterministic: the reference time is the Unix epoch, no host data.

use std::io::{self, Write};

use fxprof_processed_profile::{
    CategoryColor, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameInfo,
    Profile as FirefoxProfile, ReferenceTimestamp, SamplingInterval, StackHandle, Timestamp,
};

use crate::profile::Profile;
use crate::timeline::{lay_out, ImageTrack};

/// Writes `profile` (a whole run) in the Firefox Profiler's processed format.
pub fn write_firefox<W: Write>(profile: &Profile, out: W) -> io::Result<()> {
    let product = profile.command.first().map_or("emuprof", String::as_str);
    let mut firefox = FirefoxProfile::new(
        &format!("emuprof: {}", profile.command.join(" ")),
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        SamplingInterval::from_nanos(1),
    );
    firefox.set_product(&format!("emuprof: {product}"));
    firefox.set_os_name("Linux x86-64 (emulated)");
    // Frames are names already: nothing for the profiler to look up.
    firefox.set_symbolicated(true);
    let category: CategoryPairHandle = firefox
        .add_category("Instructions", CategoryColor::Yellow)
        .into();
    let images: Vec<&Profile> = profile.images().collect();
    for track in lay_out(profile) {
        add_image(&mut firefox, images[track.image], &track, category);
    }
    let mut out = io::BufWriter::new(out);
    serde_json::to_writer(&mut out, &firefox)?;
    out.flush()
}

fn at(nanos: u64) -> Timestamp {
    Timestamp::from_nanos_since_reference(nanos)
}

/// One process image's process and threads.
fn add_image(
    firefox: &mut FirefoxProfile,
    image: &Profile,
    track: &ImageTrack,
    category: CategoryPairHandle,
) {
    let program = image.process.program.rsplit('/').next().unwrap_or("");
    let pid = u32::try_from(image.process.pid).unwrap_or(u32::MAX);
    let process = firefox.add_process(program, pid, at(track.start));
    firefox.set_process_end_time(process, at(track.end));
    let labels = image.function_labels(&image.names_in_several_objects());
    for thread_track in &track.threads {
        let guest = &image.threads[thread_track.thread];
        let main = thread_track.thread == 0;
        let tid = u32::try_from(guest.id).unwrap_or(u32::MAX);
        let thread = firefox.add_thread(process, tid, at(thread_track.start), main);
        let name = match main {
            true => program.to_string(),
            false => format!("thread {}", guest.id),
        };
        firefox.set_thread_name(thread, &name);
        firefox.set_thread_end_time(thread, at(thread_track.end));
        // The stack of each context, interned from the innermost context
        // already interned (or the thread's root) down.
        let mut stacks: Vec<Option<StackHandle>> = vec![None; image.call_tree.len()];
        let mut stack_of = |firefox: &mut FirefoxProfile, node: u32| -> Option<StackHandle> {
            let mut path = Vec::new();
            let mut handle = None;
            let mut current = Some(node);
            while let Some(id) = current {
                if let Some(known) = stacks[id as usize] {
                    handle = Some(known);
                    break;
                }
                path.push(id);
                current = image.call_tree[id as usize]
                    .parent
                    .filter(|_| id != guest.root);
            }
            for &id in path.iter().rev() {
                let function = image.call_tree[id as usize].function as usize;
                let label = firefox.intern_string(&labels[function]);
                let frame = firefox.intern_frame(
                    thread,
                    FrameInfo {
                        frame: Frame::Label(label),
                        category_pair: category,
                        flags: FrameFlags::empty(),
                    },
                );
                let interned = firefox.intern_stack(thread, handle, frame);
                stacks[id as usize] = Some(interned);
                handle = Some(interned);
            }
            handle
        };
        let mut last_sample = thread_track.start;
        for slice in &thread_track.slices {
            let stack = stack_of(firefox, slice.node);
            let mut left = slice.instructions;
            let mut time = slice.start;
            while left > 0 {
                let weight = left.min(i32::MAX as u64);
                // The CPU time since the previous sample: its slice.
                let busy = CpuDelta::from_nanos(time - last_sample);
                firefox.add_sample(thread, at(time), stack, busy, weight as i32);
                last_sample = time;
                left -= weight;
                time += weight;
            }
        }
    }
}

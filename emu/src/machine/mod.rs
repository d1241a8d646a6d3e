//! The machine: loads an image into guest memory, builds the initial stack,
//! installs the hooks and runs the guest to the end.

mod block_hook;
mod guest_symbols;
mod hooks;
mod host_limits;
mod options;
mod own_syscalls;
mod signal_delivery;
mod stack_pointer;
mod state;
mod stop;
mod syscall_dispatch;
mod threads;
mod user_mode;

pub use guest_symbols::LoadedLibrary;
pub use options::{RunOptions, UnsupportedSyscalls};
pub use stop::{BlockedThread, StopReason};
pub use threads::DEFAULT_QUANTUM;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::c_void;
use std::rc::Rc;
use std::sync::Arc;

use emuprof_loader::{Binary, Image};
use emuprof_model::{Block, RawProfile};
use unicorn_engine::{Arch, HookType, Mode, Unicorn, X86Insn};

use crate::memory::{page_align_down, page_align_up, AddressSpace, Protection, PAGE_SIZE};
use crate::syscalls::files::Files;
use crate::syscalls::process::{Process, GUEST_PID, STACK_LIMIT};
use crate::syscalls::signals::Signals;
use crate::syscalls::time::Time;
use crate::tree::blocks::{BlockCache, BlockInfo};
use crate::tree::call_tree::CallTreeBuilder;
use crate::tree::code_snapshot::{CodeRange, CodeSnapshot};
use crate::tree::tree_feed::{self, BuilderSetup};
use crate::{cpu, initial_stack, EmuError};
use guest_symbols::GuestSymbols;
use stack_pointer::StackPointerReader;
use state::{MachineState, SyscallState};

/// Top of the guest stack (exclusive), as Linux places it without ASLR.
pub const STACK_TOP: u64 = 0x7fff_ffff_f000;

/// Most CPUs a guest can be shown (`RunOptions::cpus` is clamped to it).
pub const MAX_CPUS: u32 = 1024;

/// What a finished (or stopped) run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The recorded profile; `partial` is set when the run did not exit
    /// normally.
    pub profile: RawProfile,
    /// Why the run ended.
    pub stop: StopReason,
    /// Things the user should know (unsupported syscalls answered with
    /// ENOSYS, refused network access…), one line each.
    pub notes: Vec<String>,
    /// The shared libraries the guest mapped, with their symbols (empty for
    /// a static program).
    pub libraries: Vec<LoadedLibrary>,
    /// Every process image after the first (`profile` is image 0), in the
    /// order they started: forked processes and programs started by
    /// `execve`. Empty for a program that starts no process.
    pub more_processes: Vec<ProcessImage>,
}

/// One process image after the first: its profile and what symbolicates it.
#[derive(Debug)]
pub struct ProcessImage {
    /// Its recorded profile (`profile.process` says which process it is).
    pub profile: RawProfile,
    /// The program it runs (for a forked image, its parent's).
    pub binary: Arc<Binary>,
    /// The shared libraries it mapped (a forked image's include those its
    /// parent had mapped before the fork).
    pub libraries: Vec<LoadedLibrary>,
}

/// Runs `binary` to completion under the emulator and returns its profile.
///
/// Errors are emuprof's own failures to set up the machine; everything the
/// guest does (including crashing) ends in a [`RunOutcome`].
pub fn run(binary: &Binary, options: RunOptions) -> Result<RunOutcome, EmuError> {
    let image = &binary.image;
    host_limits::check_address_space_limit()?;
    let mut uc = Unicorn::new(Arch::X86, Mode::MODE_64)
        .map_err(|e| EmuError::unicorn("starting the emulator", e))?;
    cpu::select_model(&mut uc)?;
    let mut space = AddressSpace::new(&mut uc)?;
    let mut code = load_segments(&mut uc, &mut space, image)?;
    let interpreter = binary.interpreter.as_deref();
    if let Some(interpreter) = interpreter {
        code.extend(load_segments(&mut uc, &mut space, &interpreter.image)?);
    }
    let code = CodeSnapshot::new(code);
    // A dynamically linked program starts in its dynamic linker.
    let start = interpreter.map_or(image.entry, |i| i.image.entry);
    let function_starts = match interpreter {
        Some(i) => binary
            .symbols
            .function_starts()
            .union(i.symbols.function_starts()),
        None => binary.symbols.function_starts().union(&Default::default()),
    };
    space.set_brk_start(image.brk_start);

    let cpus = options.cpus.clamp(1, MAX_CPUS);
    let mut process = Process::new(options.seed, cpus);
    let mut random = [0u8; 16];
    process.random_bytes(&mut random);
    let stack_prot = Protection {
        exec: image.stack_executable,
        ..Protection::READ_WRITE
    };
    space.map(&mut uc, STACK_TOP - STACK_LIMIT, STACK_LIMIT, stack_prot)?;
    let aux = initial_stack::AuxInfo {
        phdr: image.phdr_address,
        phent: u64::from(image.phent),
        phnum: u64::from(image.phnum),
        base: interpreter
            .and_then(|i| i.image.segments.first())
            .map_or(0, |s| page_align_down(s.address)),
        entry: image.entry,
        random,
        execfn: options.args.first().cloned().unwrap_or_default(),
    };
    let stack = initial_stack::build(STACK_TOP, &options.args, &options.env, &aux);
    if stack.bytes.len() as u64 > STACK_LIMIT / 2 {
        return Err(EmuError::Layout(
            "the arguments and environment are larger than 4 MiB".into(),
        ));
    }
    space
        .write_initial(&mut uc, stack.sp, &stack.bytes)
        .map_err(|f| EmuError::Layout(format!("initial stack at {:#x}", f.address)))?;
    cpu::enable_paging(&mut uc, space.page_table_root())?;
    user_mode::enter(&mut uc, &mut space, start, stack.sp)?;

    let mut files = Files::new(options.files.clone())?;
    files.describe_cpus(cpus);
    files.interrupt_reads_on(Arc::clone(&options.interrupt));
    let instruction_limit = options.max_instructions.unwrap_or(u64::MAX);
    let blocks = BlockCache::new()?;
    std::thread::scope(|scope| {
        let setup = BuilderSetup {
            code: &code,
            function_starts: &function_starts,
            tree: CallTreeBuilder::new(start, stack.sp),
            instruction_limit,
            progress: Arc::clone(&options.progress),
            snapshots: options.snapshots.clone(),
        };
        let (feed, builder) = tree_feed::spawn(scope, setup).map_err(EmuError::BuilderStart)?;
        let state: hooks::Shared<'_> = Rc::new(RefCell::new(MachineState {
            symbols: GuestSymbols::new(binary),
            blocks,
            text: CodeRange::new(code.main_range()),
            fast_text: CodeRange::default(),
            feed,
            stack_pointer: StackPointerReader::new(),
            space,
            sys: SyscallState {
                files,
                process,
                time: Time::default(),
                signals: Signals::default(),
                futexes: Default::default(),
                enosys_noted: BTreeSet::new(),
            },
            threads: threads::Scheduler::new(GUEST_PID, options.quantum),
            options,
            stop: None,
            notes: Vec::new(),
            instruction_limit,
            signal_contexts: Vec::new(),
            reschedule: false,
            quantum_start: 0,
        }));
        let installed = install_hooks(&mut uc, &state);
        let result = installed.map(|()| run_threads(&mut uc, &state, start));
        let mut st = state.borrow_mut();
        let tree_state = st.feed.close();
        let result = result?;
        let pc = uc.pc_read().unwrap_or(0);
        let stop = match (stop::take_hook_failure().or(st.stop.take()), result) {
            // The guest ran on past the limit until emuprof noticed; what it
            // did there does not count.
            _ if tree_state.limit_reached => StopReason::InstructionLimit(instruction_limit),
            (Some(stop), _) => stop,
            (None, Err(unicorn_engine::uc_error::INSN_INVALID)) => StopReason::InvalidInstruction {
                pc,
                function: st.function_name(pc),
                bytes: hooks::instruction_bytes(&uc, &st, pc),
            },
            (None, Err(e)) => {
                StopReason::Internal(format!("Unicorn stopped with {e:?} at {pc:#x}"))
            }
            (None, Ok(())) => StopReason::Halted {
                pc,
                function: st.function_name(pc),
            },
        };
        let notes = std::mem::take(&mut st.notes);
        let symbols = std::mem::replace(&mut st.symbols, GuestSymbols::new(binary));
        let command = st.options.args.clone();
        let tids: Vec<u64> = st.threads.threads.iter().map(|t| t.tid).collect();
        drop(st);
        drop(uc); // releases the hooks' references to the state
        drop(state);
        let built = builder.join().map_err(|_| EmuError::BuilderPanicked)?;
        let stop = with_call_stack(stop, &built.tree, &symbols);
        let blocks = collect_blocks(&built.blocks, &built.executions);
        let finished = built.tree.finish();
        let total_instructions = finished.total;
        let nodes = finished.nodes;
        let threads = finished
            .threads
            .iter()
            .enumerate()
            .map(|(index, t)| emuprof_model::RawThread {
                id: tids.get(index).copied().unwrap_or_default(),
                parent: t.parent.and_then(|p| tids.get(p).copied()),
                spawned_at: t.spawned_at,
                root: t.root,
                instructions: t.instructions,
            })
            .collect();
        let profile = RawProfile {
            command,
            exit_status: stop.exit_status(),
            partial: stop.partial_reason(),
            total_instructions,
            nodes,
            threads,
            blocks,
            process: emuprof_model::RawProcess {
                pid: GUEST_PID,
                ..Default::default()
            },
        };
        Ok(RunOutcome {
            profile,
            stop,
            notes,
            libraries: symbols.into_libraries(),
            more_processes: Vec::new(),
        })
    })
}

/// Runs the guest, switching threads whenever a hook asks for it, until
/// the run ends (the hooks record why in the state).
fn run_threads(
    uc: &mut Unicorn<'_, ()>,
    state: &hooks::Shared<'_>,
    entry: u64,
) -> Result<(), unicorn_engine::uc_error> {
    let mut pc = entry;
    loop {
        let result = uc.emu_start(pc, u64::MAX, 0, 0);
        let mut st = state.borrow_mut();
        if result.is_err() || st.stop.is_some() || !st.reschedule {
            return result;
        }
        if let Err(stop) = threads::switch(uc, &mut st) {
            st.stop = Some(stop);
        }
        if st.stop.is_some() {
            return Ok(());
        }
        pc = uc.pc_read().unwrap_or(0);
    }
}

/// Fills in the guest call stack of a fatal signal (innermost first, at most
/// 12 functions), and of each thread of a deadlock, once the call tree has
/// seen every block.
fn with_call_stack(
    stop: StopReason,
    tree: &CallTreeBuilder,
    symbols: &GuestSymbols<'_>,
) -> StopReason {
    match stop {
        StopReason::Deadlock { mut threads } => {
            for t in &mut threads {
                t.stack = tree
                    .call_stack_of(t.index)
                    .into_iter()
                    .take(10)
                    .map(|addr| symbols.name_for(addr))
                    .collect();
            }
            StopReason::Deadlock { threads }
        }
        StopReason::Signaled {
            signal, what, pc, ..
        } => {
            let callers = tree.call_stack().into_iter().skip(1).take(11);
            let stack = std::iter::once(pc)
                .chain(callers)
                .map(|addr| symbols.name_for(addr))
                .collect();
            StopReason::Signaled {
                signal,
                what,
                pc,
                stack,
            }
        }
        other => other,
    }
}

/// Maps every `PT_LOAD` segment, page by page with the union of the
/// permissions of the segments that touch it, and copies the file bytes in.
/// Returns the executable pages as loaded (runs for a [`CodeSnapshot`]).
fn load_segments(
    uc: &mut Unicorn<'_, ()>,
    space: &mut AddressSpace,
    image: &Image,
) -> Result<Vec<(u64, Vec<u8>)>, EmuError> {
    let mut pages: BTreeMap<u64, Protection> = BTreeMap::new();
    for seg in &image.segments {
        let start = page_align_down(seg.address);
        let end = page_align_up(seg.address.saturating_add(seg.mem_size));
        for page in (start..end).step_by(PAGE_SIZE as usize) {
            let p = pages.entry(page).or_default();
            p.read |= seg.readable;
            p.write |= seg.writable;
            p.exec |= seg.executable;
        }
    }
    // Map writable first so the bytes can be copied, then set the real
    // permissions in runs of equal protection.
    let runs = runs_of(&pages);
    for &(start, len, _) in &runs {
        space.map(uc, start, len, Protection::READ_WRITE)?;
    }
    for seg in &image.segments {
        space
            .write_initial(uc, seg.address, &seg.data)
            .map_err(|f| EmuError::Layout(format!("segment byte at {:#x}", f.address)))?;
    }
    let mut code = Vec::new();
    for &(start, len, prot) in &runs {
        if prot.exec {
            let mut bytes = vec![0u8; len as usize];
            space
                .read_raw(uc, start, &mut bytes)
                .map_err(|f| EmuError::Layout(format!("code byte at {:#x}", f.address)))?;
            code.push((start, bytes));
        }
        if let Err(page) = space.protect(uc, start, len, prot)? {
            return Err(EmuError::Layout(format!(
                "protecting the segment page at {page:#x}"
            )));
        }
    }
    Ok(code)
}

/// Groups consecutive pages with the same protection: `(start, len, prot)`.
fn runs_of(pages: &BTreeMap<u64, Protection>) -> Vec<(u64, u64, Protection)> {
    let mut runs: Vec<(u64, u64, Protection)> = Vec::new();
    for (&page, &prot) in pages {
        match runs.last_mut() {
            Some((start, len, p)) if *start + *len == page && *p == prot => *len += PAGE_SIZE,
            _ => runs.push((page, PAGE_SIZE, prot)),
        }
    }
    runs
}

fn install_hooks<'a>(uc: &mut Unicorn<'a, ()>, state: &hooks::Shared<'a>) -> Result<(), EmuError> {
    let err = |e| EmuError::unicorn("installing hooks", e);
    let s = Rc::clone(state);
    uc.add_insn_sys_hook(X86Insn::SYSCALL, 1, 0, move |uc| hooks::on_syscall(uc, &s))
        .map_err(err)?;
    let s = Rc::clone(state);
    uc.add_intr_hook(move |uc, intno| hooks::on_interrupt(uc, &s, intno))
        .map_err(err)?;
    let s = Rc::clone(state);
    uc.add_insn_invalid_hook(move |uc| hooks::on_invalid_instruction(uc, &s))
        .map_err(err)?;
    // The block hook runs for every block and rdtsc/rdtscp need to return
    // "skip", so these three use the raw API. The state outlives `uc` (it is
    // dropped after `uc`).
    let user_data = Rc::as_ptr(state) as *mut c_void;
    let mut hook = std::ptr::null_mut::<c_void>() as unicorn_engine::uc_hook;
    // SAFETY: a valid engine handle, a callback with the block-hook signature,
    // and user data that outlives the engine. begin > end means "everywhere".
    let rc = unsafe {
        unicorn_engine::uc_hook_add(
            uc.get_handle(),
            &raw mut hook,
            HookType::BLOCK.0 as i32,
            block_hook::on_block_entry as *mut c_void,
            user_data,
            1u64,
            0u64,
        )
    };
    if rc != unicorn_engine::uc_error::OK {
        return Err(err(rc));
    }
    for (insn, callback) in [
        (
            X86Insn::RDTSC,
            hooks::on_rdtsc as unsafe extern "C" fn(_, _) -> i32,
        ),
        (
            X86Insn::RDTSCP,
            hooks::on_rdtscp as unsafe extern "C" fn(_, _) -> i32,
        ),
        (
            X86Insn::CPUID,
            hooks::on_cpuid as unsafe extern "C" fn(_, _) -> i32,
        ),
    ] {
        let mut hook = std::ptr::null_mut::<c_void>() as unicorn_engine::uc_hook;
        // SAFETY: a valid engine handle, a callback with the signature Unicorn
        // expects for rdtsc/cpuid hooks, and user data that outlives the engine.
        let rc = unsafe {
            unicorn_engine::uc_hook_add(
                uc.get_handle(),
                &raw mut hook,
                HookType::INSN.0 as i32,
                callback as *mut c_void,
                user_data,
                1,
                0,
                insn,
            )
        };
        if rc != unicorn_engine::uc_error::OK {
            return Err(err(rc));
        }
    }
    Ok(())
}

fn collect_blocks(blocks: &[BlockInfo], executions: &[u64]) -> Vec<Block> {
    let mut blocks: Vec<Block> = blocks
        .iter()
        .zip(executions)
        .filter(|(_, &runs)| runs > 0)
        .map(|(b, &executions)| Block {
            address: b.address,
            size: b.size,
            instructions: b.instructions,
            executions,
        })
        .collect();
    blocks.sort_by_key(|b| (b.address, b.size));
    blocks
}

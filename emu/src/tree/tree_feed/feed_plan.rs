//! How a process image's blocks reach its call tree, decided once from the
//! facts of the run ([`RunFacts`] → [`FeedPlan`]).
//!
//! The decision, in order:
//!
//! 1. **Stack pointer**: the block hook's fifth argument with emuprof's
//!    Unicorn build, else `uc_reg_read` (stock Unicorn, or
//!    [`FeedSwitches::register_api`]).
//! 2. **Whether events only where the call tree can change are possible**:
//!    not when the builder needs every block (a cache or branch simulation,
//!    parts cut at instruction counts or returns, Valgrind client requests
//!    in the code), nor when [`TraceSwitch::Record`] asks for a record per
//!    block.
//! 3. **Placement** of the builder ([`Placement`]): the switch if given
//!    (a live view always gets a thread); else a thread for a live view
//!    (only a thread answers snapshots while the guest waits); inline on
//!    one CPU; adaptive on several when events only are possible; else a
//!    thread. Adaptive needs events only: without them it is a thread.
//! 4. **Data accesses** of the cache simulation ([`MemoryAccesses`]):
//!    recorded by the translated code with emuprof's build (not forced to
//!    the register API), except during a late start, whose skipping edits
//!    the batches; else memory hooks.
//! 5. **Block path** ([`BlockPath`]): every block calls the hook unless the
//!    engine takes the inline trace (emuprof's build, not forced off by the
//!    register-API or trace switches, no memory hook writing between the
//!    blocks' records). With the trace: a late start counts inline until
//!    its start point; else events only where possible; else a record per
//!    block when the builder stays on the emulation thread; else the hook.
//!
//! `tests` below hold the whole truth table.

use super::Placement;

/// The facts of a run that decide its [`FeedPlan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunFacts {
    /// Whether emuprof may use more than one CPU (affinity mask, cgroup
    /// quota).
    pub several_cpus: bool,
    /// Whether a live view or stream asks the builder for snapshots while
    /// the guest waits.
    pub live_view: bool,
    /// Whether the builder needs every block: a simulation, parts cut
    /// anywhere, client requests.
    pub every_block_needed: bool,
    /// Whether the cache simulation runs (it needs every data access).
    pub simulates_caches: bool,
    /// Whether the run fast-forwards to a start point (`--start-at`,
    /// `--start-after`).
    pub late_start: bool,
    /// Whether the linked engine is emuprof's Unicorn build (the hook's
    /// stack-pointer argument and the inline trace).
    pub patched_engine: bool,
    /// The measurement switches of the run.
    pub switches: FeedSwitches,
}

/// Switches that force one of the equivalent ways of feeding the tree, to
/// measure and test them against each other. Every setting gives the same
/// profile. The command line sets them from `EMUPROF_BLOCK_TRACE`,
/// `EMUPROF_TREE_BUILDER` and `EMUPROF_BLOCK_HOOK_REGISTER_API`
/// (`docs/architecture.md`); library users leave the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FeedSwitches {
    /// Which inline trace the engine may use.
    pub trace: TraceSwitch,
    /// Where the builder runs, whatever the CPUs.
    pub placement: Option<PlacementSwitch>,
    /// Run as with stock Unicorn: the hook reads the stack pointer through
    /// the register API and sees every block.
    pub register_api: bool,
}

/// `EMUPROF_BLOCK_TRACE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceSwitch {
    /// `on`: as the plan decides.
    #[default]
    On,
    /// `off`: no inline trace; the hook sees every block.
    Off,
    /// `record`: a record per block instead of events only.
    Record,
}

/// `EMUPROF_TREE_BUILDER`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementSwitch {
    /// `thread`.
    Thread,
    /// `inline`.
    Inline,
    /// `adaptive`.
    Adaptive,
    /// `moving`: adaptive, moving after every batch.
    Moving,
}

/// The environment variable, its values and what each means, for the
/// command line.
pub type SwitchValues<T> = (&'static str, &'static [(&'static str, T)]);

impl TraceSwitch {
    /// `EMUPROF_BLOCK_TRACE` and its values.
    pub const VARIABLE: SwitchValues<TraceSwitch> = (
        "EMUPROF_BLOCK_TRACE",
        &[
            ("on", TraceSwitch::On),
            ("off", TraceSwitch::Off),
            ("record", TraceSwitch::Record),
        ],
    );
}

impl PlacementSwitch {
    /// `EMUPROF_TREE_BUILDER` and its values.
    pub const VARIABLE: SwitchValues<PlacementSwitch> = (
        "EMUPROF_TREE_BUILDER",
        &[
            ("thread", PlacementSwitch::Thread),
            ("inline", PlacementSwitch::Inline),
            ("adaptive", PlacementSwitch::Adaptive),
            ("moving", PlacementSwitch::Moving),
        ],
    );
}

impl FeedSwitches {
    /// `EMUPROF_BLOCK_HOOK_REGISTER_API`: set to anything.
    pub const REGISTER_API_VARIABLE: &'static str = "EMUPROF_BLOCK_HOOK_REGISTER_API";
}

/// How blocks report their runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockPath {
    /// Every block calls the block hook (the reference path).
    HookEveryBlock,
    /// Blocks of the program's text store their record inline; the rest
    /// call the hook.
    RecordInline,
    /// Until the start point of a late start blocks count themselves
    /// inline; after it, blocks record inline when the builder is inline,
    /// else call the hook.
    CountUntilStart,
    /// Blocks count themselves and send events only where the call tree
    /// can change.
    EventsOnly,
}

/// Where a block's stack pointer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackPointerPath {
    /// The block hook's fifth argument (emuprof's Unicorn build).
    HookArgument,
    /// `uc_reg_read` in the hook.
    RegisterApi,
}

/// How the cache simulation learns of data accesses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryAccesses {
    /// No cache simulation.
    NotSimulated,
    /// Unicorn's memory hooks (every access takes the slow path).
    Hooked,
    /// The translated code appends each access to the batch.
    RecordedInline,
}

/// How one process image's blocks reach its call tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedPlan {
    /// Where the hook gets the stack pointer.
    pub stack_pointer: StackPointerPath,
    /// Where the builder runs.
    pub placement: Placement,
    /// How blocks report their runs.
    pub blocks: BlockPath,
    /// How the cache simulation learns of data accesses.
    pub memory_accesses: MemoryAccesses,
}

impl FeedPlan {
    /// The plan for a run with these facts (see the module doc).
    pub fn decide(facts: &RunFacts) -> FeedPlan {
        let switches = facts.switches;
        let hook_argument = facts.patched_engine && !switches.register_api;
        let events_possible = !facts.every_block_needed && switches.trace != TraceSwitch::Record;
        let memory_accesses = match (facts.simulates_caches, hook_argument && !facts.late_start) {
            (false, _) => MemoryAccesses::NotSimulated,
            (true, false) => MemoryAccesses::Hooked,
            (true, true) => MemoryAccesses::RecordedInline,
        };
        let trace = hook_argument
            && switches.trace != TraceSwitch::Off
            && memory_accesses != MemoryAccesses::Hooked;
        let events_only = trace && events_possible && !facts.late_start;
        let placement = match (switches.placement, facts.live_view) {
            (_, true) => Placement::Thread,
            (Some(PlacementSwitch::Thread), false) => Placement::Thread,
            (Some(PlacementSwitch::Inline), false) => Placement::Inline,
            (Some(PlacementSwitch::Adaptive), false) => Placement::Adaptive { eager: false },
            (Some(PlacementSwitch::Moving), false) => Placement::Adaptive { eager: true },
            (None, false) if !facts.several_cpus => Placement::Inline,
            (None, false) => Placement::Adaptive { eager: false },
        };
        // An adaptive builder follows the run's events only; without them
        // it works on its own thread.
        let placement = match placement {
            Placement::Adaptive { .. } if !events_only => Placement::Thread,
            other => other,
        };
        let blocks = if !trace {
            BlockPath::HookEveryBlock
        } else if facts.late_start {
            BlockPath::CountUntilStart
        } else if events_only {
            BlockPath::EventsOnly
        } else if placement == Placement::Inline {
            BlockPath::RecordInline
        } else {
            BlockPath::HookEveryBlock
        };
        FeedPlan {
            stack_pointer: if hook_argument {
                StackPointerPath::HookArgument
            } else {
                StackPointerPath::RegisterApi
            },
            placement,
            blocks,
            memory_accesses,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADAPTIVE: Placement = Placement::Adaptive { eager: false };
    const MOVING: Placement = Placement::Adaptive { eager: true };

    fn facts() -> RunFacts {
        RunFacts {
            several_cpus: true,
            live_view: false,
            every_block_needed: false,
            simulates_caches: false,
            late_start: false,
            patched_engine: true,
            switches: FeedSwitches::default(),
        }
    }

    fn switches(
        trace: TraceSwitch,
        placement: Option<PlacementSwitch>,
        register_api: bool,
    ) -> FeedSwitches {
        FeedSwitches {
            trace,
            placement,
            register_api,
        }
    }

    /// A kind of run, its facts, and the plan it gets.
    type Row = (
        &'static str,
        RunFacts,
        (StackPointerPath, Placement, BlockPath, MemoryAccesses),
    );

    #[test]
    fn the_plan_of_every_kind_of_run() {
        use BlockPath::*;
        use MemoryAccesses::*;
        use Placement::{Inline, Thread};
        use StackPointerPath::*;
        let one_cpu = RunFacts {
            several_cpus: false,
            ..facts()
        };
        let stock = RunFacts {
            patched_engine: false,
            ..facts()
        };
        let simulation = RunFacts {
            every_block_needed: true,
            ..facts()
        };
        let caches = RunFacts {
            every_block_needed: true,
            simulates_caches: true,
            ..facts()
        };
        let late = RunFacts {
            late_start: true,
            ..facts()
        };
        let live = RunFacts {
            live_view: true,
            ..facts()
        };
        let on = |placement| switches(TraceSwitch::On, placement, false);
        #[rustfmt::skip]
        let table: &[Row] = &[
            ("two CPUs", facts(), (HookArgument, ADAPTIVE, EventsOnly, NotSimulated)),
            ("one CPU", one_cpu, (HookArgument, Inline, EventsOnly, NotSimulated)),
            ("stock Unicorn, two CPUs", stock, (RegisterApi, Thread, HookEveryBlock, NotSimulated)),
            ("stock Unicorn, one CPU", RunFacts { several_cpus: false, ..stock }, (RegisterApi, Inline, HookEveryBlock, NotSimulated)),
            ("client requests or branch simulation, two CPUs", simulation, (HookArgument, Thread, HookEveryBlock, NotSimulated)),
            ("client requests or branch simulation, one CPU", RunFacts { several_cpus: false, ..simulation }, (HookArgument, Inline, RecordInline, NotSimulated)),
            ("cache simulation, one CPU", RunFacts { several_cpus: false, ..caches }, (HookArgument, Inline, RecordInline, RecordedInline)),
            ("cache simulation, two CPUs", caches, (HookArgument, Thread, HookEveryBlock, RecordedInline)),
            ("cache simulation, late start", RunFacts { late_start: true, ..caches }, (HookArgument, Thread, HookEveryBlock, Hooked)),
            ("cache simulation, stock Unicorn", RunFacts { patched_engine: false, several_cpus: false, ..caches }, (RegisterApi, Inline, HookEveryBlock, Hooked)),
            ("late start, two CPUs", late, (HookArgument, Thread, CountUntilStart, NotSimulated)),
            ("late start, one CPU", RunFacts { several_cpus: false, ..late }, (HookArgument, Inline, CountUntilStart, NotSimulated)),
            ("late start, stock Unicorn", RunFacts { patched_engine: false, ..late }, (RegisterApi, Thread, HookEveryBlock, NotSimulated)),
            ("live view, two CPUs", live, (HookArgument, Thread, EventsOnly, NotSimulated)),
            ("live view, one CPU", RunFacts { several_cpus: false, ..live }, (HookArgument, Thread, EventsOnly, NotSimulated)),
            ("live view asking for an inline builder", RunFacts { switches: on(Some(PlacementSwitch::Inline)), ..live }, (HookArgument, Thread, EventsOnly, NotSimulated)),
            ("builder forced inline", RunFacts { switches: on(Some(PlacementSwitch::Inline)), ..facts() }, (HookArgument, Inline, EventsOnly, NotSimulated)),
            ("builder forced on a thread, one CPU", RunFacts { switches: on(Some(PlacementSwitch::Thread)), ..one_cpu }, (HookArgument, Thread, EventsOnly, NotSimulated)),
            ("builder forced adaptive, one CPU", RunFacts { switches: on(Some(PlacementSwitch::Adaptive)), ..one_cpu }, (HookArgument, ADAPTIVE, EventsOnly, NotSimulated)),
            ("builder forced moving", RunFacts { switches: on(Some(PlacementSwitch::Moving)), ..facts() }, (HookArgument, MOVING, EventsOnly, NotSimulated)),
            ("builder forced adaptive without events", RunFacts { switches: on(Some(PlacementSwitch::Adaptive)), ..simulation }, (HookArgument, Thread, HookEveryBlock, NotSimulated)),
            ("trace off", RunFacts { switches: switches(TraceSwitch::Off, None, false), ..facts() }, (HookArgument, Thread, HookEveryBlock, NotSimulated)),
            ("trace off, one CPU", RunFacts { switches: switches(TraceSwitch::Off, None, false), ..one_cpu }, (HookArgument, Inline, HookEveryBlock, NotSimulated)),
            ("record per block, two CPUs", RunFacts { switches: switches(TraceSwitch::Record, None, false), ..facts() }, (HookArgument, Thread, HookEveryBlock, NotSimulated)),
            ("record per block, one CPU", RunFacts { switches: switches(TraceSwitch::Record, None, false), ..one_cpu }, (HookArgument, Inline, RecordInline, NotSimulated)),
            ("register API forced", RunFacts { switches: switches(TraceSwitch::On, None, true), ..one_cpu }, (RegisterApi, Inline, HookEveryBlock, NotSimulated)),
        ];
        for (name, facts, (stack_pointer, placement, blocks, memory_accesses)) in table {
            let expected = FeedPlan {
                stack_pointer: *stack_pointer,
                placement: *placement,
                blocks: *blocks,
                memory_accesses: *memory_accesses,
            };
            assert_eq!(FeedPlan::decide(facts), expected, "{name}");
        }
    }
}

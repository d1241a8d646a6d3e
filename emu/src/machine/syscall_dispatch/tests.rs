//! The syscall table against the families: every family answers exactly the
//! numbers the table gives it, no more and no fewer. Each family's `handle`
//! is probed with every number, with arguments that make any call fail
//! harmlessly (fd -1, unmapped addresses, huge lengths); the machine's own
//! families are checked through the decoding of their numbers.

use unicorn_engine::{Arch, Mode, Unicorn};

use super::own_syscalls::{MachineCall, ThreadCall};
use crate::memory::AddressSpace;
use crate::syscalls::process::Process;
use crate::syscalls::signals::Signals;
use crate::syscalls::table::{family_of, syscall_table, Family, FileGroup};
use crate::syscalls::test_harness::Harness;
use crate::syscalls::test_memory::VecMemory;
use crate::syscalls::time::Time;
use crate::syscalls::{credentials, memory_map, SyscallCall};

/// Arguments every call fails on without touching anything: fd -1, an
/// unaligned, unmapped address, a length no call accepts.
const PROBE_ARGS: [u64; 6] = [u64::MAX; 6];

/// Every number up to past the table's last, and some far beyond (x32's,
/// the 32-bit range, all ones).
fn probe_numbers() -> impl Iterator<Item = u64> {
    let last = syscall_table().last().map_or(0, |s| s.number);
    (0..=last + 64).chain([0x4000_0000, 0x4000_0001, 1 << 32, u64::MAX])
}

/// One instance of every family that `handle`s calls itself.
struct Families {
    files: Harness,
    time: Time,
    process: Process,
    signals: Signals,
    uc: Unicorn<'static, ()>,
    space: AddressSpace,
}

impl Families {
    fn new() -> Families {
        let mut uc = Unicorn::new(Arch::X86, Mode::MODE_64).expect("an emulator");
        let space = AddressSpace::new(&mut uc).expect("an address space");
        Families {
            files: Harness::sandboxed(|_, _| {}),
            time: Time::default(),
            process: Process::new(0, 4),
            signals: Signals::default(),
            uc,
            space,
        }
    }

    /// Whether `family` answers syscall `number` (made with [`PROBE_ARGS`]).
    fn answers(&mut self, family: Family, number: u64) -> bool {
        let mut mem = VecMemory::new(0x1000, 0x1000);
        let mut call = SyscallCall {
            number,
            args: PROBE_ARGS,
            mem: &mut mem,
        };
        match family {
            Family::Machine => MachineCall::of(number).is_some(),
            Family::Threads => ThreadCall::of(number).is_some(),
            Family::MemoryMap => {
                let mut no_file = |_: i32, _: u64, _: &mut [u8]| -> Result<usize, _> {
                    panic!("no probe maps a file")
                };
                let no_writable_file = |_: i32| None;
                let files = memory_map::MappingFiles {
                    read: &mut no_file,
                    writable: &no_writable_file,
                    shared: &mut Default::default(),
                };
                memory_map::handle(number, PROBE_ARGS, &mut self.space, &mut self.uc, files)
                    .is_some()
            }
            Family::Time => self.time.handle(&mut call, || 0).is_some(),
            Family::Process => self.process.handle(&mut call).is_some(),
            Family::Signals => self.signals.handle(&mut call).is_some(),
            Family::Credentials => credentials::handle(&mut call).is_some(),
            Family::Processes => super::super::processes::answers(number),
            Family::Files(group) => self.files.call_group(group, number, &PROBE_ARGS).is_some(),
        }
    }
}

/// Every family, each group of the file family on its own.
const FAMILIES: [Family; 15] = [
    Family::Machine,
    Family::Threads,
    Family::MemoryMap,
    Family::Time,
    Family::Process,
    Family::Signals,
    Family::Credentials,
    Family::Processes,
    Family::Files(FileGroup::Io),
    Family::Files(FileGroup::FdOps),
    Family::Files(FileGroup::Stat),
    Family::Files(FileGroup::Dirs),
    Family::Files(FileGroup::Attributes),
    Family::Files(FileGroup::Storage),
    Family::Files(FileGroup::Network),
];

#[test]
fn every_family_answers_exactly_the_numbers_the_table_gives_it() {
    let mut families = Families::new();
    let mut wrong = Vec::new();
    for number in probe_numbers() {
        let owner = family_of(number);
        for family in FAMILIES {
            let answers = families.answers(family, number);
            if answers != (owner == Some(family)) {
                wrong.push(format!(
                    "{number} ({}): the table says {:?}, {} answers it: {answers}",
                    crate::syscalls::table::syscall_name(number).unwrap_or("?"),
                    owner.map(Family::name),
                    family.name(),
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_family_owns_some_syscall() {
    for family in FAMILIES {
        assert!(
            syscall_table().iter().any(|s| s.family == Some(family)),
            "{} owns nothing",
            family.name()
        );
    }
}

//! Deciding whether a file is something emuprof can run at all.
//!
//! Two stages: [`check_identity`] looks at the first bytes only, before any real
//! parsing, so that an ARM or 32-bit binary is named as such even when the rest of
//! it would not parse as x86-64; [`classify`] looks at the parsed ELF and tells a
//! static executable from a static-pie, a dynamic program, an object file, a shared
//! library or a core dump.

use goblin::elf::header::{self, ELFCLASS32, ELFCLASS64, ELFDATA2LSB, ELFMAG, SELFMAG};
use goblin::elf::Elf;

use crate::error::ElfProblem;
use crate::image::ImageKind;

/// Size of an `Elf64_Ehdr`: anything shorter with the ELF magic is truncated.
const ELF64_HEADER_SIZE: usize = 64;
/// Offset of `e_machine` in the ELF header.
const E_MACHINE_OFFSET: usize = 18;

/// Checks magic, class, byte order and machine from the raw header bytes.
pub(crate) fn check_identity(bytes: &[u8]) -> Result<(), ElfProblem> {
    if bytes.is_empty() {
        return Err(ElfProblem::Empty);
    }
    if bytes.starts_with(b"#!") {
        return Err(ElfProblem::Script {
            interpreter_line: first_line(bytes),
        });
    }
    if bytes.len() < SELFMAG || &bytes[..SELFMAG] != ELFMAG {
        return Err(ElfProblem::NotElf {
            first_bytes: hex_prefix(bytes),
        });
    }
    match bytes.get(header::EI_CLASS) {
        Some(&ELFCLASS64) => {}
        Some(&ELFCLASS32) => return Err(ElfProblem::WrongClass),
        Some(&other) => {
            return Err(ElfProblem::Corrupt {
                detail: format!("unknown ELF class {other}"),
            })
        }
        None => return Err(truncated_header(bytes.len())),
    }
    match bytes.get(header::EI_DATA) {
        Some(&ELFDATA2LSB) => {}
        Some(_) => return Err(ElfProblem::WrongByteOrder),
        None => return Err(truncated_header(bytes.len())),
    }
    if bytes.len() < ELF64_HEADER_SIZE {
        return Err(truncated_header(bytes.len()));
    }
    let machine = u16::from_le_bytes([bytes[E_MACHINE_OFFSET], bytes[E_MACHINE_OFFSET + 1]]);
    if machine != header::EM_X86_64 {
        return Err(ElfProblem::WrongArchitecture {
            machine: machine_name(machine),
        });
    }
    Ok(())
}

/// Tells what kind of ELF file this is; executables pass, static or with a
/// dynamic linker (`PT_INTERP`).
pub(crate) fn classify(elf: &Elf<'_>) -> Result<ImageKind, ElfProblem> {
    if elf.interpreter.is_some() {
        return match elf.header.e_type {
            header::ET_EXEC => Ok(ImageKind::DynamicExec),
            header::ET_DYN => Ok(ImageKind::DynamicPie),
            _ => Err(ElfProblem::NotExecutable {
                what: format!("of ELF type {} with a dynamic linker", elf.header.e_type),
            }),
        };
    }
    if !elf.libraries.is_empty() {
        return Err(ElfProblem::DynamicallyLinked {
            needs: format!(
                "needs {} but names no dynamic linker",
                elf.libraries.join(", ")
            ),
        });
    }
    match elf.header.e_type {
        header::ET_EXEC => Ok(ImageKind::Exec),
        // A shared library has no entry point; a static-pie always has one.
        header::ET_DYN if elf.header.e_entry == 0 => Err(ElfProblem::NotExecutable {
            what: "a shared library (ET_DYN without entry point)".into(),
        }),
        header::ET_DYN => Ok(ImageKind::StaticPie),
        header::ET_REL => Err(ElfProblem::NotExecutable {
            what: "an object file (ET_REL)".into(),
        }),
        header::ET_CORE => Err(ElfProblem::NotExecutable {
            what: "a core dump (ET_CORE)".into(),
        }),
        other => Err(ElfProblem::NotExecutable {
            what: format!("of unknown ELF type {other}"),
        }),
    }
}

/// A readable name for an `e_machine` value.
pub(crate) fn machine_name(machine: u16) -> String {
    let name = match machine {
        header::EM_386 => "32-bit x86 (i386)",
        header::EM_AARCH64 => "AArch64",
        header::EM_ARM => "32-bit ARM",
        header::EM_RISCV => "RISC-V",
        header::EM_PPC => "PowerPC",
        header::EM_PPC64 => "64-bit PowerPC",
        header::EM_S390 => "IBM S/390",
        header::EM_MIPS => "MIPS",
        header::EM_SPARC | header::EM_SPARCV9 => "SPARC",
        header::EM_IA_64 => "Itanium (IA-64)",
        header::EM_NONE => "no machine (EM_NONE)",
        other => return format!("machine {other} ({})", header::machine_to_str(other)),
    };
    name.to_string()
}

fn truncated_header(len: usize) -> ElfProblem {
    ElfProblem::Corrupt {
        detail: format!("{len} bytes is shorter than the {ELF64_HEADER_SIZE}-byte ELF header"),
    }
}

/// The first line of a script, at most 60 characters.
fn first_line(bytes: &[u8]) -> String {
    let line = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(line).chars().take(60).collect()
}

/// The first 8 bytes as hex, e.g. `50 4b 03 04 …`.
fn hex_prefix(bytes: &[u8]) -> String {
    let shown: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let more = if bytes.len() > 8 { " …" } else { "" };
    format!("{}{more}", shown.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_common_machines() {
        assert_eq!(machine_name(183), "AArch64");
        assert_eq!(machine_name(3), "32-bit x86 (i386)");
        assert!(machine_name(0x1234).starts_with("machine 4660"));
    }

    #[test]
    fn recognises_scripts_and_foreign_files() {
        assert_eq!(
            check_identity(b"#!/bin/sh\necho hi\n"),
            Err(ElfProblem::Script {
                interpreter_line: "#!/bin/sh".into()
            })
        );
        assert_eq!(
            check_identity(b"PK\x03\x04"),
            Err(ElfProblem::NotElf {
                first_bytes: "50 4b 03 04".into()
            })
        );
        assert!(matches!(
            check_identity(b"\x7fELF\x02\x01"),
            Err(ElfProblem::Corrupt { .. })
        ));
    }
}

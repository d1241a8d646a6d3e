//! The nesting check: no unit nests its entries deeper than
//! [`MAX_DIE_DEPTH`], so that `addr2line`, which parses nested inline entries
//! recursively, cannot overflow the stack on a hostile file.
//!
//! The check walks every entry of every unit. It reads each unit's entries
//! straight from the inflated bytes with a skip plan per abbreviation (the
//! bytes of its fixed-size attributes added up, the variable-size ones read);
//! a unit that plan cannot read (an unknown or indirect form, an abbreviation
//! code that is not in its table, truncated bytes) is walked again with
//! gimli's own reader, so the answer is gimli's.

use gimli::{constants, Abbreviations, UnitHeader, UnitOffset};

use crate::dwarf::Reader;

/// Deepest DIE nesting accepted. `addr2line` parses nested inline entries
/// recursively, so a hostile file with 20,000 of them would overflow the
/// stack; real programs stay far below this (a C++ program's deepest
/// inline chains are a few hundred at most).
pub(crate) const MAX_DIE_DEPTH: isize = 1024;

/// Whether no unit nests its entries deeper than [`MAX_DIE_DEPTH`]; a binary
/// that does is used without its DWARF (function names from the symbol
/// table, no source lines), as if it had none. The walk is iterative;
/// a unit that does not parse is left to `addr2line`, which skips it.
pub(crate) fn nesting_within_limit(dwarf: &gimli::Dwarf<Reader>) -> bool {
    let mut plans = SkipPlans::default();
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let Ok(abbreviations) = dwarf.abbreviations(&header) else {
            continue;
        };
        let within = match plans.walk(&header, &abbreviations) {
            Some(within) => within,
            None => walk_with_gimli(&header, &abbreviations),
        };
        if !within {
            return false;
        }
    }
    true
}

/// Whether the unit's entries stay within [`MAX_DIE_DEPTH`], read by gimli;
/// `true` when they stop parsing before they go deeper.
fn walk_with_gimli(header: &UnitHeader<Reader>, abbreviations: &Abbreviations) -> bool {
    let Ok(mut entries) = header.entries_raw(abbreviations, None) else {
        return true;
    };
    while !entries.is_empty() {
        if entries.next_depth() > MAX_DIE_DEPTH {
            return false;
        }
        match entries.read_abbreviation() {
            Ok(Some(abbreviation)) => {
                if entries.skip_attributes(abbreviation.attributes()).is_err() {
                    break;
                }
            }
            Ok(None) => {}
            Err(_) => break,
        }
    }
    true
}

/// How to step over one abbreviation's attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// This many bytes (fixed-size attributes, added up).
    Bytes(usize),
    /// A one-, two- or four-byte length, then that many bytes.
    Block(usize),
    /// An unsigned LEB128 length, then that many bytes.
    LebBlock,
    /// One LEB128 number.
    Leb,
    /// A NUL-terminated string.
    String,
}

/// The steps of one abbreviation: `has_children` and a range of
/// [`SkipPlans::steps`].
#[derive(Debug, Clone, Copy, Default)]
struct Plan {
    known: bool,
    has_children: bool,
    first: u32,
    end: u32,
}

/// The skip plans of the unit being walked, by abbreviation code; the
/// buffers are reused from unit to unit.
#[derive(Default)]
struct SkipPlans {
    by_code: Vec<Plan>,
    steps: Vec<Step>,
}

/// Codes above this are not planned (the unit is walked by gimli): real
/// tables number their abbreviations from 1 up.
const MAX_PLANNED_CODE: u64 = 1 << 16;

impl SkipPlans {
    /// Whether the unit's entries stay within [`MAX_DIE_DEPTH`]; `None` when
    /// a plan cannot read them.
    fn walk(&mut self, header: &UnitHeader<Reader>, abbreviations: &Abbreviations) -> Option<bool> {
        self.by_code.clear();
        self.steps.clear();
        let entries = header.range_from(UnitOffset(header.header_size())..).ok()?;
        let bytes: &[u8] = &entries;
        let mut at = 0;
        let mut depth: isize = 0;
        while at < bytes.len() {
            if depth > MAX_DIE_DEPTH {
                return Some(false);
            }
            let code = read_uleb(bytes, &mut at)?;
            if code == 0 {
                depth -= 1;
                continue;
            }
            let plan = self.plan(code, header, abbreviations)?;
            for step in &self.steps[plan.first as usize..plan.end as usize] {
                let skip = match *step {
                    Step::Bytes(n) => n,
                    Step::Block(width) => {
                        let field = bytes.get(at..at.checked_add(width)?)?;
                        at += width;
                        field
                            .iter()
                            .rev()
                            .fold(0usize, |n, &b| (n << 8) | usize::from(b))
                    }
                    Step::LebBlock => usize::try_from(read_uleb(bytes, &mut at)?).ok()?,
                    Step::Leb => {
                        read_uleb(bytes, &mut at)?;
                        0
                    }
                    Step::String => bytes.get(at..)?.iter().position(|&b| b == 0)? + 1,
                };
                at = at.checked_add(skip)?;
            }
            if at > bytes.len() {
                return None;
            }
            if plan.has_children {
                depth += 1;
            }
        }
        Some(true)
    }

    /// The plan for `code`, made on its first use; `None` when the code is
    /// not in the table or an attribute's form has no plan.
    fn plan(
        &mut self,
        code: u64,
        header: &UnitHeader<Reader>,
        abbreviations: &Abbreviations,
    ) -> Option<Plan> {
        if code > MAX_PLANNED_CODE {
            return None;
        }
        let index = code as usize;
        if let Some(plan) = self.by_code.get(index).filter(|p| p.known) {
            return Some(*plan);
        }
        let abbreviation = abbreviations.get(code)?;
        let first = self.steps.len();
        let mut fixed = 0;
        for spec in abbreviation.attributes() {
            if let Some(size) = spec.size(header) {
                fixed += size;
                continue;
            }
            if fixed > 0 {
                self.steps.push(Step::Bytes(fixed));
                fixed = 0;
            }
            self.steps.push(variable_step(spec.form())?);
        }
        if fixed > 0 {
            self.steps.push(Step::Bytes(fixed));
        }
        let plan = Plan {
            known: true,
            has_children: abbreviation.has_children(),
            first: u32::try_from(first).ok()?,
            end: u32::try_from(self.steps.len()).ok()?,
        };
        if self.by_code.len() <= index {
            self.by_code.resize(index + 1, Plan::default());
        }
        self.by_code[index] = plan;
        Some(plan)
    }
}

/// The step over a variable-size form, as gimli reads it; `None` for
/// `DW_FORM_indirect` and forms gimli does not know.
fn variable_step(form: constants::DwForm) -> Option<Step> {
    Some(match form {
        constants::DW_FORM_block1 => Step::Block(1),
        constants::DW_FORM_block2 => Step::Block(2),
        constants::DW_FORM_block4 => Step::Block(4),
        constants::DW_FORM_block | constants::DW_FORM_exprloc => Step::LebBlock,
        constants::DW_FORM_string => Step::String,
        constants::DW_FORM_udata
        | constants::DW_FORM_sdata
        | constants::DW_FORM_ref_udata
        | constants::DW_FORM_strx
        | constants::DW_FORM_GNU_str_index
        | constants::DW_FORM_addrx
        | constants::DW_FORM_GNU_addr_index
        | constants::DW_FORM_loclistx
        | constants::DW_FORM_rnglistx => Step::Leb,
        _ => return None,
    })
}

/// An unsigned LEB128 number at `*at`, moving past it; `None` when it runs
/// past the end or over 64 bits.
#[inline]
fn read_uleb(bytes: &[u8], at: &mut usize) -> Option<u64> {
    // Most numbers here (abbreviation codes, lengths) fit in one byte.
    let first = *bytes.get(*at)?;
    if first < 0x80 {
        *at += 1;
        return Some(u64::from(first));
    }
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = *bytes.get(*at)?;
        *at += 1;
        if shift == 63 && byte > 1 {
            return None;
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gimli::{EndianArcSlice, RunTimeEndian, SectionId};
    use std::sync::Arc;

    /// A DWARF 4 unit whose entries nest `depth` deep: a compile unit, then
    /// inlined subroutines inside each other, each with a name (`form`:
    /// `DW_FORM_string`, or `DW_FORM_indirect` naming it), a low pc, an
    /// exprloc, a udata and a data8.
    fn nested_unit(depth: usize, indirect: bool) -> gimli::Dwarf<Reader> {
        let name_form: &[u8] = if indirect { &[0x16] } else { &[0x08] };
        let mut abbrev = Vec::new();
        for (code, tag) in [(1u8, 0x11u8), (2, 0x1d)] {
            abbrev.extend([code, tag, 1, 0x03]);
            abbrev.extend(name_form);
            abbrev.extend([0x11, 0x01, 0x02, 0x18, 0x3b, 0x0f, 0x12, 0x07, 0, 0]);
        }
        abbrev.push(0);
        let mut entries = Vec::new();
        for level in 0..depth {
            entries.push(if level == 0 { 1 } else { 2 });
            if indirect {
                entries.push(0x08);
            }
            entries.extend(b"f\0");
            entries.extend(0x1000u64.to_le_bytes());
            entries.extend([2, 0x30, 0x9f]);
            entries.extend([0x80, 0x01]);
            entries.extend(16u64.to_le_bytes());
        }
        entries.extend(std::iter::repeat_n(0u8, depth));
        let mut info = Vec::new();
        info.extend(((entries.len() + 7) as u32).to_le_bytes());
        info.extend(4u16.to_le_bytes());
        info.extend(0u32.to_le_bytes());
        info.push(8);
        info.extend(entries);
        gimli::Dwarf::load(|id| -> Result<Reader, gimli::Error> {
            let bytes = match id {
                SectionId::DebugAbbrev => abbrev.clone(),
                SectionId::DebugInfo => info.clone(),
                _ => Vec::new(),
            };
            Ok(EndianArcSlice::new(Arc::from(bytes), RunTimeEndian::Little))
        })
        .expect("sections load")
    }

    /// The answers of the plans (`None`: left to gimli), of gimli's walk and
    /// of the whole check, for the one unit.
    fn answers(dwarf: &gimli::Dwarf<Reader>) -> (Option<bool>, bool, bool) {
        let header = dwarf.units().next().expect("parses").expect("one unit");
        let abbreviations = dwarf.abbreviations(&header).expect("abbreviations");
        (
            SkipPlans::default().walk(&header, &abbreviations),
            walk_with_gimli(&header, &abbreviations),
            nesting_within_limit(dwarf),
        )
    }

    #[test]
    fn the_plans_answer_as_gimli_does() {
        let limit = MAX_DIE_DEPTH as usize;
        // depth, indirect name form: (plans, gimli, check)
        let table = [
            (1, false, (Some(true), true, true)),
            (limit, false, (Some(true), true, true)),
            (limit + 1, false, (Some(false), false, false)),
            (limit + 1, true, (None, false, false)),
            (3, true, (None, true, true)),
        ];
        for (depth, indirect, expected) in table {
            assert_eq!(
                answers(&nested_unit(depth, indirect)),
                expected,
                "depth {depth}, indirect {indirect}"
            );
        }
    }

    #[test]
    fn leb128_numbers_read_as_gimli_reads_them() {
        let cases: [(&[u8], Option<u64>); 5] = [
            (&[0x02], Some(2)),
            (&[0xe5, 0x8e, 0x26], Some(624_485)),
            (&[0x80, 0x80], None),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                Some(u64::MAX),
            ),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                None,
            ),
        ];
        for (bytes, expected) in cases {
            let mut at = 0;
            assert_eq!(read_uleb(bytes, &mut at), expected, "{bytes:x?}");
            if expected.is_some() {
                assert_eq!(at, bytes.len());
            }
        }
    }

    #[test]
    fn each_variable_form_has_the_step_gimli_takes() {
        let table = [
            (constants::DW_FORM_block1, Some(Step::Block(1))),
            (constants::DW_FORM_block2, Some(Step::Block(2))),
            (constants::DW_FORM_block4, Some(Step::Block(4))),
            (constants::DW_FORM_exprloc, Some(Step::LebBlock)),
            (constants::DW_FORM_block, Some(Step::LebBlock)),
            (constants::DW_FORM_string, Some(Step::String)),
            (constants::DW_FORM_sdata, Some(Step::Leb)),
            (constants::DW_FORM_rnglistx, Some(Step::Leb)),
            (constants::DW_FORM_indirect, None),
            (constants::DwForm(0x7777), None),
        ];
        for (form, step) in table {
            assert_eq!(variable_step(form), step, "{form}");
        }
    }
}

//! The table checked against the kernel's numbers and the families' code.

use super::numbers::*;
use super::*;

#[test]
fn names_match_the_kernel_table() {
    assert_eq!(syscall_name(SYS_READ), Some("read"));
    assert_eq!(syscall_name(60), Some("exit"));
    assert_eq!(syscall_name(231), Some("exit_group"));
    assert_eq!(syscall_name(257), Some("openat"));
    assert_eq!(syscall_name(334), Some("rseq"));
    assert_eq!(syscall_name(435), Some("clone3"));
    assert_eq!(syscall_name(439), Some("faccessat2"));
    assert_eq!(syscall_name(461), Some("lsm_list_modules"));
    assert_eq!(SYS_STATX, 332);
}

#[test]
fn unassigned_numbers_have_no_row() {
    assert_eq!(syscall_name(335), None);
    assert_eq!(syscall_name(423), None);
    assert_eq!(syscall_name(100_000), None);
    assert_eq!(lookup(u64::MAX), None);
    assert_eq!(syscall_table().len(), 335 + (LAST_NUMBER as usize - 423));
}

#[test]
fn every_row_is_found_by_its_number() {
    for row in syscall_table() {
        assert_eq!(lookup(row.number), Some(row));
    }
}

/// A syscall some family runs has a support level other than
/// unsupported, and the reverse; notes say something.
#[test]
fn support_levels_agree_with_ownership() {
    for row in syscall_table() {
        assert!(Support::LEVELS.contains(&row.support.level()));
        let owned = row.family.is_some();
        assert_eq!(owned, row.support != Support::Unsupported, "{}", row.name);
        match row.support {
            Support::Partial(note) | Support::Refused(note) => {
                assert!(
                    note.len() > 10 && !note.ends_with('.'),
                    "{}: {note:?}",
                    row.name
                )
            }
            Support::Full | Support::Unsupported => assert_eq!(row.support.note(), ""),
        }
    }
}

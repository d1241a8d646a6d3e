//! The call-tree side: what the machine's block hook hands over, and how it
//! becomes the call tree.
//!
//! `machine/` is the guest (Unicorn, memory, syscalls); this folder is the
//! recorder. The hook decodes blocks once ([`blocks`]; each distinct
//! encoding with capstone once, [`instruction_memo`]) and feeds their
//! executions ([`tree_feed`]) to the builder ([`call_tree`]), which keeps a
//! shadow call stack ([`shadow_stack`]) and reads code through a snapshot of
//! the guest's code ([`code_snapshot`]); code mapped later counts itself
//! from a copy the emulation thread keeps ([`mapped_code`]). Decoding prices each block with the
//! instruction cost model ([`cost`]).

pub mod blocks;
pub mod call_tree;
pub mod code_snapshot;
pub mod cost;
pub mod costs;
mod instruction_memo;
pub mod mapped_code;
pub mod recorded;
pub mod shadow_stack;
pub mod tree_feed;
pub(crate) mod x86_length;

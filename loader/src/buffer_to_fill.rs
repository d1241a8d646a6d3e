//! Buffers filled whole right after they are made: a file read, a debug
//! section inflated. Their memory is asked for in one system call rather
//! than a page fault per 4 KiB as the filling writes them.

use std::sync::Arc;

/// Buffers smaller than this are left to fault in page by page.
const BACKED_AT_ONCE_FROM: usize = 64 * 1024;

/// `size` zero bytes, shared, their pages already backed by memory.
pub(crate) fn zeroed_to_fill(size: usize) -> Arc<[u8]> {
    let bytes = Arc::<[u8]>::new_zeroed_slice(size);
    // SAFETY: zero is a valid `u8`, so every element is initialised.
    let mut bytes = unsafe { bytes.assume_init() };
    if let Some(buffer) = Arc::get_mut(&mut bytes) {
        back_with_memory(buffer);
    }
    bytes
}

/// Asks the kernel for the memory behind `buffer`'s whole pages at once
/// (`MADV_POPULATE_WRITE`): a page fault per 4 KiB costs about twice as much
/// per page (docs/performance.md, "The fixed cost of a dynamically linked
/// program"). Only a hint: a kernel without it (before Linux 5.14) faults
/// the pages in as they are written, as before.
fn back_with_memory(buffer: &mut [u8]) {
    const PAGE: usize = 4096;
    if buffer.len() < BACKED_AT_ONCE_FROM {
        return;
    }
    let start = buffer.as_mut_ptr() as usize;
    let first = start.next_multiple_of(PAGE);
    let end = (start + buffer.len()) / PAGE * PAGE;
    if end <= first {
        return;
    }
    // SAFETY: [first, end) lies inside `buffer`, borrowed mutably here, and
    // populating only backs pages with memory as a write fault would: no
    // byte changes. The answer is ignored on purpose (see above).
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            end - first,
            libc::MADV_POPULATE_WRITE,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_zeros_of_its_size_whether_backed_at_once_or_not() {
        let sizes = [
            0,
            1,
            4095,
            BACKED_AT_ONCE_FROM - 1,
            BACKED_AT_ONCE_FROM,
            3 * BACKED_AT_ONCE_FROM + 123,
        ];
        for size in sizes {
            let bytes = zeroed_to_fill(size);
            assert_eq!(bytes.len(), size);
            assert!(bytes.iter().all(|&b| b == 0), "{size} bytes");
        }
    }
}

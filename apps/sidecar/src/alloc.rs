//! The sidecar's allocator: mimalloc, asked for an alignment only when a value needs more
//! than every mimalloc block has.

use std::alloc::{GlobalAlloc, Layout};

/// mimalloc (`mimalloc::MiMalloc` asks `mi_malloc_aligned` for every value). Its aligned entry
/// takes the fast path only while the size class's page has a free block ready; otherwise,
/// for the sizes that are not a power of two, it over-allocates through its generic path
/// (about a quarter of the event path's allocations did so). Every mimalloc block is aligned
/// to a word at least: a value that needs no more is allocated with `mi_malloc`, whose fast
/// path refills the page's free list itself.
pub(crate) struct Mimalloc;

/// What every mimalloc block is aligned to (its size classes are whole words).
const WORD: usize = size_of::<usize>();

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free` takes a block of any
// of its entries); a layout that needs more than a word's alignment is given to mimalloc's
// aligned entries, and `mi_malloc`'s blocks are aligned to a word at least.
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            // SAFETY: a plain allocation of a non-zero size (`GlobalAlloc`'s contract).
            unsafe { libmimalloc_sys::mi_malloc(layout.size()).cast() }
        } else {
            // SAFETY: as `mimalloc::MiMalloc` allocates.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            // SAFETY: as in `alloc`.
            unsafe { libmimalloc_sys::mi_zalloc(layout.size()).cast() }
        } else {
            // SAFETY: as `mimalloc::MiMalloc` allocates.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a block of this allocator, which `mi_free` takes whatever entry
        // made it.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `mimalloc::MiMalloc` reallocates (its aligned entry keeps the block's
        // alignment, and takes a block of either entry).
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

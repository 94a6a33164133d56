//! The bridge binaries' allocator: mimalloc, asked for an alignment only when a value needs
//! more than every mimalloc block has.

use std::alloc::{GlobalAlloc, Layout};

/// mimalloc (`mimalloc::MiMalloc` asks `mi_malloc_aligned` for every value). Its aligned entry
/// takes the fast path only while the size class's page has a free block ready; otherwise,
/// for the sizes that are not a power of two, it over-allocates through its generic path
/// (about a quarter of the event path's allocations did so). Every mimalloc block is aligned
/// to a word at least: a value that needs no more is allocated with `mi_malloc`, whose fast
/// path refills the page's free list itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mimalloc;

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

#[cfg(test)]
mod tests {
    use std::alloc::{GlobalAlloc, Layout};

    use super::Mimalloc;

    /// Every layout is served aligned as it asks, from either entry, zeroed when asked, and
    /// keeps its alignment and bytes when it grows.
    #[test]
    fn every_layout_is_served_aligned_and_grows_in_place_or_moved_whole() {
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 7, 8, 24, 40, 100, 1_000, 5_000, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a layout of non-zero size; each block is written within its size,
                // grown once and freed once, with the layout it has then.
                unsafe {
                    let zeroed = Mimalloc.alloc_zeroed(layout);
                    assert_eq!(zeroed.addr() % align, 0, "{size} {align}");
                    assert!(std::slice::from_raw_parts(zeroed, size).iter().all(|&b| b == 0));
                    Mimalloc.dealloc(zeroed, layout);
                    let block = Mimalloc.alloc(layout);
                    assert_eq!(block.addr() % align, 0, "{size} {align}");
                    block.write_bytes(0xa5, size);
                    let grown = Mimalloc.realloc(block, layout, size * 3);
                    assert_eq!(grown.addr() % align, 0, "{size} {align}");
                    assert!(std::slice::from_raw_parts(grown, size).iter().all(|&b| b == 0xa5));
                    Mimalloc.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                }
            }
        }
    }
}

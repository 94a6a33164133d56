//! The executable's relocation table is read once, by the dynamic loader before `main`, to
//! relocate the binary where it was loaded (a position-independent executable). Nothing reads
//! it again, yet its pages (~370 KB, `.rela.dyn`) stay mapped and count in the resident set
//! of an idle sidecar for its whole life. [`release_relocation_table`] hands them back with
//! `madvise(MADV_DONTNEED)`: the mapping is read-only and file-backed, so a later read (there
//! is none) would fault the same bytes in again from the file; nothing is lost either way.
//! Linux on 64-bit targets only; elsewhere it does nothing.

/// One entry of the dynamic section (`Elf64_Dyn`).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
#[repr(C)]
struct Dyn {
    tag: i64,
    value: u64,
}

/// Drops the resident pages of the executable's relocation table (`DT_RELA`); the bytes
/// released, or `None` when the table was not found in a read-only segment.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub(crate) fn release_relocation_table() -> Option<usize> {
    // SAFETY: the program headers are where the kernel's auxiliary vector says, in memory
    // for the life of the process (AT_PHDR, AT_PHNUM of this executable); the dynamic section
    // they point to is mapped and ends with DT_NULL; `madvise` gets a page-aligned range
    // inside a read-only, private, file-backed segment of this executable, whose contents
    // DONTNEED cannot change.
    unsafe {
        let phdr = libc::getauxval(libc::AT_PHDR) as *const libc::Elf64_Phdr;
        let phnum = usize::try_from(libc::getauxval(libc::AT_PHNUM)).ok()?;
        if phdr.is_null() || phnum == 0 {
            return None;
        }
        let headers = std::slice::from_raw_parts(phdr, phnum);
        let own = headers.iter().find(|h| h.p_type == libc::PT_PHDR)?;
        let bias = (phdr as usize).checked_sub(usize::try_from(own.p_vaddr).ok()?)?;
        let dynamic = headers.iter().find(|h| h.p_type == libc::PT_DYNAMIC)?;
        let mut entry = (bias + usize::try_from(dynamic.p_vaddr).ok()?) as *const Dyn;
        let (mut rela, mut size) = (None, None);
        loop {
            let Dyn { tag, value } = *entry;
            let value = usize::try_from(value).ok()?;
            match tag {
                0 => break,              // DT_NULL
                7 => rela = Some(value), // DT_RELA
                8 => size = Some(value), // DT_RELASZ
                _ => {}
            }
            entry = entry.add(1);
        }
        let (rela, size) = (rela?, size?);
        // The loader may have rewritten the entry to the relocated address.
        let vaddr = if rela >= bias && bias != 0 { rela - bias } else { rela };
        let segment = headers.iter().find(|h| {
            let (start, len) = (h.p_vaddr as usize, h.p_memsz as usize);
            h.p_type == libc::PT_LOAD && vaddr >= start && vaddr + size <= start + len
        })?;
        if segment.p_flags & libc::PF_W != 0 {
            return None;
        }
        let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).ok()?;
        let start = (bias + vaddr).next_multiple_of(page);
        let end = (bias + vaddr + size) / page * page;
        if end <= start {
            return Some(0);
        }
        let done = libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
        (done == 0).then_some(end - start)
    }
}

/// Elsewhere: nothing to release.
#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub(crate) fn release_relocation_table() -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    /// The test binary is a position-independent executable too: its table is found and
    /// released, and the process goes on (its relocated data still reads right).
    #[test]
    fn the_table_is_found_and_released() {
        static GREETING: &str = "relocated";
        let released = super::release_relocation_table();
        assert!(released.is_some_and(|n| n > 0), "{released:?}");
        assert_eq!(GREETING.len(), 9);
        assert_eq!(format!("{GREETING}!"), "relocated!");
    }
}

//! The CPU access a tensor is declared with, and the check every map goes through.

use crate::{Error, Result};

/// What the CPU may do with a buffer. Hardware access is always implied; only CPU involvement is
/// declared, because it decides the heap (uncached for `None`/`Write`) and the cache maintenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CpuAccess {
    None,
    Read,
    Write,
    #[default]
    ReadWrite,
}

impl CpuAccess {
    pub const ALL: [CpuAccess; 4] =
        [CpuAccess::None, CpuAccess::Read, CpuAccess::Write, CpuAccess::ReadWrite];

    pub const fn can_read(self) -> bool {
        matches!(self, CpuAccess::Read | CpuAccess::ReadWrite)
    }

    pub const fn can_write(self) -> bool {
        matches!(self, CpuAccess::Write | CpuAccess::ReadWrite)
    }

    /// Whether a tensor declared `self` may be mapped for `requested`. A `None` request is no
    /// CPU access at all, so it is never a mapping direction.
    pub const fn covers(self, requested: CpuAccess) -> bool {
        let wants_read = requested.can_read();
        let wants_write = requested.can_write();
        (wants_read || wants_write) && (!wants_read || self.can_read()) && (!wants_write || self.can_write())
    }

    /// The one check every map, sync and pin makes before it touches the backing.
    pub fn check(self, requested: CpuAccess) -> Result<()> {
        if self.covers(requested) {
            Ok(())
        } else {
            Err(Error::CpuAccessDenied { declared: self, requested })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CpuAccess::{self, *};

    #[test]
    fn matrix() {
        // rows: declared; columns: requested None, Read, Write, ReadWrite
        let table: [(CpuAccess, [bool; 4]); 4] = [
            (None, [false, false, false, false]),
            (Read, [false, true, false, false]),
            (Write, [false, false, true, false]),
            (ReadWrite, [false, true, true, true]),
        ];
        for (declared, row) in table {
            for (requested, ok) in CpuAccess::ALL.into_iter().zip(row) {
                assert_eq!(declared.covers(requested), ok, "{declared:?} / {requested:?}");
                assert_eq!(declared.check(requested).is_ok(), ok);
            }
        }
        assert_eq!(CpuAccess::default(), ReadWrite);
    }
}

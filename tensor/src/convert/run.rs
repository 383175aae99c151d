//! One frame through a converter's plan: the source and destination checked, the rows shared
//! among the bands, and the letterbox padding stored or left as it is.

use super::finish::SendPtr;
use super::{driver, Converter, SrcImage, CHUNKS_PER_BAND};
use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// A converter's `id`: 1 for the first made in the process, then counting up.
pub(super) fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Converter {
    /// Unique to this converter among those made in this process: a destination that this
    /// converter wrote holds its padding, and `convert_picture` may be asked to leave it.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Convert one frame. The source must have the planned format and size; every plane and the
    /// destination are checked to hold what the layout says before a byte is touched.
    pub fn convert(&self, src: &SrcImage<'_>, dst: &mut [u8]) -> Result<()> {
        self.frame(src, dst, true)
    }

    /// `convert`, but only the picture's bytes (`content().rect`) are written: the letterbox
    /// padding around it is left as it is. For a
    /// destination known to hold this converter's padding already — a pool's tensor that this
    /// converter wrote and nobody has written since. The padding is a tenth of a uint8 letterbox
    /// frame's time and a quarter of a float32 one's (docs/benchmark-log.md, twenty-seventh
    /// session), the same bytes every frame.
    pub fn convert_picture(&self, src: &SrcImage<'_>, dst: &mut [u8]) -> Result<()> {
        self.frame(src, dst, false)
    }

    fn frame(&self, src: &SrcImage<'_>, dst: &mut [u8], pad: bool) -> Result<()> {
        if (src.format, src.width, src.height) != (self.format, self.src_w, self.src_h) {
            return Err(Error::InvalidArgument(format!(
                "planned for {} {}x{}, given {} {}x{}",
                self.format.name(),
                self.src_w,
                self.src_h,
                src.format.name(),
                src.width,
                src.height
            )));
        }
        for p in 0..self.format.num_planes() {
            let s = self.format.plane_sampling(p, 1);
            let (bytes, stride) = src.planes[p];
            let (rows, row) = (s.rows(src.height), s.row_bytes(src.width));
            let Some(need) = (rows - 1).checked_mul(stride).and_then(|steps| steps.checked_add(row)) else {
                return Err(Error::InvalidArgument(format!(
                    "source plane {p}: {rows} rows of {row} bytes at stride {stride} span more than \
                     usize::MAX bytes"
                )));
            };
            if stride < row || bytes.len() < need {
                return Err(Error::BufferTooSmall {
                    what: format!("source plane {p} ({rows} rows of {row} bytes at stride {stride})"),
                    needed: need,
                    available: bytes.len(),
                });
            }
        }
        if dst.len() < self.dst.bytes() {
            return Err(Error::BufferTooSmall {
                what: "the destination tensor".into(),
                needed: self.dst.bytes(),
                available: dst.len(),
            });
        }
        let bands = self.workers.bands();
        let h = self.dst.height;
        let out = SendPtr(dst.as_mut_ptr());
        // Rows in chunks taken from a counter, so a worker that wakes late takes fewer of them
        // instead of the caller waiting for it (workers.rs says what waking costs). One band: one
        // chunk, as before.
        let chunks = if bands == 1 { 1 } else { (bands * CHUNKS_PER_BAND).min(h.max(1)) };
        let next = std::sync::atomic::AtomicUsize::new(0);
        self.workers.run(&|band| {
            let mut scratch = self.scratch[band].lock().unwrap();
            loop {
                let c = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if c >= chunks {
                    break;
                }
                let (r0, r1) = (h * c / chunks, h * (c + 1) / chunks);
                // Chunks are disjoint destination rows of a buffer that outlives `run`.
                unsafe {
                    driver::rows(self, src, driver::Band { dst: out, rows: r0..r1, pad }, &mut scratch)
                };
            }
        });
        Ok(())
    }
}

//! Allocates one tensor per backing this machine can serve and prints what it got: which heap
//! served it, the filesystem magic of its fd, and whether a CPU round trip works.
//!
//!     cargo run -p edgefirst-tensor --example tensor-info

use edgefirst_tensor::{import, Tensor, TensorMemory};

fn main() {
    for &memory in TensorMemory::ALL {
        let available = memory.is_available();
        print!("{:<13} available={available:<5}", memory.name());
        if !available {
            println!();
            continue;
        }
        match Tensor::<u8>::new(&[480, 640, 3], Some(memory), None) {
            Ok(t) => {
                let magic = t.fd().map(|fd| import::fs_magic(fd).map(|m| format!("{m:#010x}")));
                let ok = t.map().map(|mut m| {
                    m[0] = 42;
                    m[0] == 42
                });
                println!(
                    " heap={} contiguity={:?} fs_magic={} cpu_round_trip={}",
                    t.heap_source(),
                    t.contiguity(),
                    magic.map_or("-".into(), |m| m.unwrap_or_else(|e| e.to_string())),
                    ok.unwrap_or(false)
                );
            }
            Err(e) => println!(" error: {e}"),
        }
    }
    let auto = Tensor::<u8>::new(&[16], None, None).expect("the heap always serves");
    println!("automatic choice (DMA → SHM → Mem): {}", auto.memory());
}

//! `EDGEFIRST_TENSOR_FORCE_MEM=1` in its own test binary: the environment is process-wide, so it
//! must not race the auto-selection tests.

use edgefirst_tensor::{Tensor, TensorMemory};

#[test]
fn force_mem_short_circuits_the_chain() {
    std::env::set_var("EDGEFIRST_TENSOR_FORCE_MEM", "1");
    assert!(edgefirst_tensor::force_mem());
    let t = Tensor::<f32>::new(&[8, 8], None, None).unwrap();
    assert_eq!(t.memory(), TensorMemory::Mem);
    // An explicit request is still honoured: the variable only steers automatic choices.
    let s = Tensor::<f32>::new(&[8, 8], Some(TensorMemory::Shm), None).unwrap();
    assert_eq!(s.memory(), TensorMemory::Shm);
    std::env::set_var("EDGEFIRST_TENSOR_FORCE_MEM", "0");
    assert!(!edgefirst_tensor::force_mem());
    assert_ne!(Tensor::<f32>::new(&[8, 8], None, None).unwrap().memory(), TensorMemory::Mem);
}

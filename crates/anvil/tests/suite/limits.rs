//! Shapes and allocations beyond what the machine (or 64-bit index arithmetic) can hold are
//! errors that name the op and the shape, raised before anything is allocated: never a
//! wrapped size, a panic or an abort.

use anvil::ndarray::array;
use anvil::{ad, vmap, Arg, DType, Error, NumericalFunction, Tensor};

fn op_error(t: &Tensor) -> (&'static str, String) {
    match t.check() {
        Err(Error::Op { op, message, .. }) => (op, message),
        other => panic!("expected an op error, got {other:?}"),
    }
}

#[test]
fn shape_arithmetic_that_would_overflow_is_an_error_naming_the_op_and_shape() {
    let x = Tensor::input(0, [3], DType::F64);
    let cases = [
        (Tensor::input(1, [1 << 32, 1 << 32], DType::F64), "input"),
        (Tensor::full([1 << 33, 1 << 31], 0.0, DType::F64), "full"),
        (Tensor::zeros([0, 1 << 40, 1 << 40]), "full"),
        (x.pad(&[(usize::MAX, 0)]), "pad"),
        (x.pad(&[(1 << 50, 0)]), "pad"),
        (x.reshape([3, 1 << 40, 1 << 40, 0]).reshape([0, 1 << 40, 1 << 40]), "reshape"),
        (x.unsqueeze(0).expand([1 << 62, 3]), "expand"),
        (Tensor::input(1, [1 << 30, 1], DType::F64) + Tensor::input(2, [1, 1 << 30], DType::F64), "add"),
        (Tensor::scatter_add(&x, &Tensor::full([3], 0.0, DType::I64), [1 << 40, 1 << 40]), "scatter_add"),
        (Tensor::cat(&[x.unsqueeze(0).expand([1 << 46, 3]), x.unsqueeze(0).expand([1 << 46, 3])], 0), "cat"),
    ];
    for (t, want) in cases {
        let (op, message) = op_error(&t);
        assert_eq!(op, want, "{message}");
        assert!(message.contains("too large") || message.contains("overflows"), "{op}: {message}");
    }
    let err = NumericalFunction::new("f", |[x]| x.sum(), [Arg::new([1 << 32, 1 << 32])]).unwrap_err();
    assert!(err.to_string().contains("[4294967296, 4294967296]"), "{err}");
}

#[test]
fn allocations_beyond_the_machines_memory_are_errors_before_allocating() {
    // 2^46 doubles: a valid shape, but 512 TiB.
    for n in [1 << 23, 1 << 40] {
        let eye = Tensor::eye(n);
        assert!(matches!(eye.check(), Err(Error::OutOfMemory { .. })), "{:?}", eye.check());
    }

    let big = NumericalFunction::new("big", |[x]| x.expand([1 << 40]) * 2.0, [Arg::new(1)]).unwrap();
    let x = array![1.0].into_dyn();
    let err = big.eval(&[x.view()]).unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    assert!(err.to_string().contains("8.0 TiB"), "{err}");
    // The native call refuses before compiling or allocating anything.
    assert!(matches!(big.call(&[x.view()]).unwrap_err(), Error::OutOfMemory { .. }));

    // A dense Jacobian of 2^22 inputs needs a 2^44-element seed.
    let wide = NumericalFunction::new("wide", |[x]| &x * 2.0, [Arg::new(1 << 22)]).unwrap();
    assert!(matches!(ad::jacobian(&wide).unwrap_err(), Error::OutOfMemory { .. }));
    // Its pattern is the diagonal, found with memory linear in the inputs; a dense pattern of
    // 2^44 entries is refused before anything is allocated.
    assert_eq!(ad::jacobian_sparsity(&wide).unwrap().nnz(), 1 << 22);
    let dense = NumericalFunction::new("dense", |[x]| &x * x.sum(), [Arg::new(1 << 22)]).unwrap();
    let err = ad::jacobian_sparsity(&dense).unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    assert!(err.to_string().contains("sparsity detection"), "{err}");
    // Input elements are numbered in 32 bits: more is an error that says so, not a wrap.
    let huge = NumericalFunction::new("huge", |[x]| &x * 2.0, [Arg::new(1usize << 33)]).unwrap();
    let err = ad::jacobian_sparsity(&huge).unwrap_err();
    assert!(matches!(err, Error::Transform { .. }) && err.to_string().contains("8589934592 input elements"), "{err}");

    // A batch too large for 64-bit indices.
    let small = NumericalFunction::new("small", |[x]| x.exp(), [Arg::new(1 << 10)]).unwrap();
    let err = vmap(&small, 1 << 40, &[]).unwrap_err();
    assert!(err.to_string().contains("too large"), "{err}");
}

//! One function called from several threads at once gives every caller its own result.

use anvil::ndarray::{Array1, ArrayD};
use anvil::{Arg, NumericalFunction, Tensor};

#[test]
fn concurrent_calls_are_safe() {
    let w = Tensor::from_array(&anvil::ndarray::Array2::from_shape_fn((16, 16), |(i, j)| ((i * 16 + j) as f64).sin()));
    // Intermediates live in the workspace: a shared one would race.
    let f = NumericalFunction::new("threaded", |[x]| w.matmul(&w.matmul(&x).tanh()).sum(), [Arg::new(16)]).unwrap();
    f.compile().unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let f = &f;
            s.spawn(move || {
                for k in 0..200 {
                    let x: ArrayD<f64> = Array1::from_shape_fn(16, |i| (t * 1000 + k + i) as f64 * 1e-3).into_dyn();
                    let got = f.call(&[x.view()]).unwrap();
                    let want = f.eval(&[x.view()]).unwrap();
                    assert_eq!(got[0], want[0], "thread {t}, call {k}");
                }
            });
        }
    });
}

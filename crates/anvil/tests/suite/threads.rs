//! One function called from several threads at once gives every caller its own result.

use anvil::ndarray::{Array1, ArrayD};
use anvil::{Arg, NumericalFunction, Tensor};

#[test]
fn concurrent_calls_are_safe() {
    let w = Tensor::from_array(&anvil::ndarray::Array2::from_shape_fn((16, 16), |(i, j)| ((i * 16 + j) as f64).sin()));
    // Intermediates live in the workspace: a shared one would race.
    let f = NumericalFunction::new("threaded", |[x]| w.matmul(&w.matmul(&x).tanh()).sum(), [Arg::new(16)]).unwrap();
    let input = |t: usize, k: usize| -> ArrayD<f64> {
        Array1::from_shape_fn(16, |i| (t * 1000 + k + i) as f64 * 1e-3).into_dyn()
    };
    // Native code is deterministic: the serial results are what every concurrent call must give.
    let serial: Vec<Vec<f64>> =
        (0..8).map(|t| (0..200).map(|k| f.call(&[input(t, k).view()]).unwrap()[0].sum()).collect()).collect();
    let x = input(3, 5);
    assert!((serial[3][5] - f.eval(&[x.view()]).unwrap()[0].sum()).abs() < 1e-10);
    std::thread::scope(|s| {
        for t in 0..8 {
            let (f, serial) = (&f, &serial);
            s.spawn(move || {
                for (k, want) in serial[t].iter().enumerate() {
                    let got = f.call(&[input(t, k).view()]).unwrap()[0].sum();
                    assert_eq!(got, *want, "thread {t}, call {k}");
                }
            });
        }
    });
}

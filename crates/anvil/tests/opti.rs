//! SQP solvers (anvil::opti): results against known optima, statuses, bad input.

use anvil::opti::{Problem, SqpFunction, SqpSettings, Status, WarmStart};
use anvil::{Arg, NumericalFunction, Tensor};

fn args(n: usize) -> [Arg; 2] {
    [Arg::new(n), Arg::new(0)]
}

fn el(x: &Tensor, i: usize) -> Tensor {
    x.get(i as isize)
}

/// The original's guide example: x ∈ R⁴, cost (x1 − 2)² − x2 + x3, x0² + x1 = 1.
fn guide_problem() -> Problem {
    let f = NumericalFunction::new("guide_f", |[x, _p]| (el(&x, 1) - 2.0).square() - el(&x, 2) + el(&x, 3), args(4))
        .unwrap();
    let g = NumericalFunction::new("guide_g", |[x, _p]| (el(&x, 0).square() + el(&x, 1) - 1.0).reshape([1]), args(4))
        .unwrap();
    Problem::new(&f)
        .unwrap()
        .eq_constraints(&g, 0.0)
        .unwrap()
        .bounds([-1.0, -1e6, -1.0, -1.0], [1.0, 1e6, 1.0, 1.0])
        .unwrap()
}

#[test]
fn guide_example_dense_and_sparse() {
    for dense in [true, false] {
        let settings = SqpSettings { verbose: 1, ..SqpSettings::default() };
        let name = if dense { "guide_dense" } else { "guide_sparse" };
        let solver = if dense {
            SqpFunction::dense(name, &guide_problem(), settings)
        } else {
            SqpFunction::sparse(name, &guide_problem(), settings)
        }
        .unwrap();
        let sol = solver.solve(&[0.5, 0.5, 0.0, 0.0], &[], &WarmStart::default()).unwrap();
        println!("{sol:?}");
        assert_eq!(sol.info.status, Status::Solved);
        assert!((sol.info.objective + 1.0).abs() < 1e-8);
    }
}

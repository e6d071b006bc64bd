//! Bad input gets a clear error that says what was wrong, never a panic.

use anvil::jit::CompilerOptions;
use anvil::ndarray::{array, ArrayD};
use anvil::{generate_module, Arg, DType, Error, HostArray, NumericalFunction, Tensor};

#[test]
fn incompatible_shapes_name_the_op_the_shapes_and_the_callers_line() {
    let line = line!() + 1;
    let err = NumericalFunction::new("f", |[x, y]| (x + y).sin(), [Arg::new(3), Arg::new(4)]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Op { op: "add", .. }), "{msg}");
    assert!(msg.contains("[3]") && msg.contains("[4]"), "{msg}");
    assert!(msg.contains(&format!("errors.rs:{line}")), "{msg}");
}

#[test]
fn each_op_reports_its_own_misuse() {
    let x = Tensor::input(0, [2, 3], DType::F64);
    let cases: Vec<(Tensor, &str)> = vec![
        (x.reshape([4, 2]), "reshape"),
        (x.matmul(&x), "matmul"),
        (x.sum_axes(2, false), "sum"),
        (x.permute([0, 0]), "permute"),
        (x.expand([3, 3]), "expand"),
        (x.pad(&[(1, 1)]), "pad"),
        (x.shrink(&[(0, 3), (0, 3)]), "shrink"),
        (x.get(5), "index"),
        (Tensor::cat(&[x.clone(), Tensor::input(1, [2, 2], DType::F64)], 0), "cat"),
        (Tensor::stack(&[], 0), "cat"),
        (x.flip(4), "flip"),
        (x.idiv(2.0), "idiv"),
        (x.outer(&x), "outer"),
        (x.squeeze(0), "squeeze"),
        (x.where_(&x, Tensor::input(1, [5], DType::F64)), "where"),
    ];
    for (t, op) in cases {
        match t.check() {
            Err(Error::Op { op: got, .. }) => assert_eq!(got, op),
            other => panic!("expected an error from `{op}`, got {other:?}"),
        }
    }
}

#[test]
fn errors_propagate_through_later_ops() {
    let x = Tensor::input(0, 3, DType::F64);
    let bad = x.reshape(4);
    let later = (bad.exp() + 1.0).sum();
    assert!(matches!(later.check(), Err(Error::Op { op: "reshape", .. })));
}

#[test]
fn wrong_number_of_arguments() {
    let f = NumericalFunction::new("two", |[x, y]| x + y, [Arg::new(2), Arg::new(2)]).unwrap();
    let a = array![1.0, 2.0].into_dyn();
    let err = f.call(&[a.view()]).unwrap_err();
    assert!(matches!(err, Error::ArgumentCount { expected: 2, got: 1, .. }), "{err}");
    assert!(f.eval(&[a.view(), a.view(), a.view()]).is_err());
}

#[test]
fn arrays_of_the_wrong_shape_or_dtype() {
    let f = NumericalFunction::new("shape_check", |[x]| x * 2.0, [Arg::new([2, 2])]).unwrap();
    let err = f.call(&[array![1.0, 2.0, 3.0, 4.0].into_dyn().view()]).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("input 0") && msg.contains("[2, 2]") && msg.contains("[4]"), "{msg}");
    let err = f.call_dyn(&[HostArray::F32(ArrayD::zeros(vec![2, 2]))]).unwrap_err();
    assert!(err.to_string().contains("f32"), "{err}");
    let g = NumericalFunction::new("dtype_check", |[x]| x * 2.0, [Arg::with_dtype(2, DType::F32)]).unwrap();
    let err = g.call(&[array![1.0, 2.0].into_dyn().view()]).unwrap_err();
    assert!(err.to_string().contains("call_dyn"), "{err}");
}

#[test]
fn invalid_and_duplicate_names() {
    for bad in ["", "1f", "my-fn", "namespace", "__f"] {
        let err = NumericalFunction::new(bad, |[x]| x, [Arg::new(1)]).unwrap_err();
        assert!(matches!(err, Error::InvalidName { .. }), "{bad:?}: {err}");
    }
    let f = NumericalFunction::new("same", |[x]| x * 2.0, [Arg::new(1)]).unwrap();
    let g = NumericalFunction::new("same", |[x]| x * 3.0, [Arg::new(1)]).unwrap();
    let err = generate_module("m", &[&f, &g], std::env::temp_dir()).unwrap_err();
    assert!(err.to_string().contains("unique"), "{err}");
    let err = generate_module("bad-module", &[&f], std::env::temp_dir()).unwrap_err();
    assert!(matches!(err, Error::InvalidName { .. }));
}

#[test]
fn unwritable_output_directory() {
    let f = NumericalFunction::new("unwritable", |[x]| x * 2.0, [Arg::new(1)]).unwrap();
    // A path below a regular file can never be created, even as root.
    let file = std::env::temp_dir().join(format!("anvil_not_a_dir_{}", std::process::id()));
    std::fs::write(&file, "x").unwrap();
    let err = generate_module("m", &[&f], file.join("sub")).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert!(err.to_string().contains("anvil_not_a_dir"), "{err}");
    std::fs::remove_file(file).unwrap();
}

#[test]
fn a_compiler_that_cannot_run_is_named_with_what_to_do() {
    let options = CompilerOptions { compiler: Some("no-such-compiler-anvil".into()), ..CompilerOptions::default() };
    let f = NumericalFunction::new("no_compiler", |[x]| x * 2.0, [Arg::new(1)]).unwrap().with_compiler(options);
    let err = f.call(&[array![1.0].into_dyn().view()]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::InvalidCompiler { .. }), "{msg}");
    assert!(msg.contains("no-such-compiler-anvil") && msg.contains("cannot be run") && msg.contains("g++"), "{msg}");
    // The interpreter still works without a compiler.
    assert_eq!(f.eval(&[array![1.5].into_dyn().view()]).unwrap()[0], array![3.0].into_dyn());
}

#[test]
fn compile_errors_carry_the_compilers_message_and_the_source_path() {
    let options = CompilerOptions {
        compiler: None,
        flags: vec!["-include".into(), "/nonexistent/anvil.h".into()],
        vector_math: false,
        ..CompilerOptions::default()
    };
    let f = NumericalFunction::new("bad_flags", |[x]| x * 2.0, [Arg::new(1)]).unwrap().with_compiler(options);
    let err = f.call(&[array![1.0].into_dyn().view()]).unwrap_err();
    match &err {
        Error::Compile { source_path, message, .. } => {
            assert!(source_path.to_string_lossy().ends_with(".cpp"), "{err}");
            assert!(source_path.exists(), "the source is kept for inspection: {err}");
            assert!(message.contains("anvil.h"), "{err}");
        }
        other => panic!("expected a compile error, got {other}"),
    }
}

#[test]
fn a_function_must_return_something() {
    let err = NumericalFunction::new("nothing", |[_x]| Vec::<Tensor>::new(), [Arg::new(1)]).unwrap_err();
    assert!(err.to_string().contains("at least one"), "{err}");
}

#[test]
fn tensors_from_another_trace_are_rejected() {
    // A hand-made input symbol inside a traced function.
    let stray = Tensor::input(1, [3], DType::F64);
    let err = NumericalFunction::new("stray", |[x]| x + &stray, [Arg::new(3)]).unwrap_err();
    assert!(matches!(err, Error::LeakedTensor { .. }), "{err}");
    // A tensor kept from tracing one function, used in another of the same signature: it
    // must not be taken for the second function's input.
    let mut kept = None;
    NumericalFunction::new(
        "first",
        |[x]| {
            kept = Some(x.sin());
            x * 2.0
        },
        [Arg::new(3)],
    )
    .unwrap();
    let leaked = kept.unwrap();
    let err = NumericalFunction::new("second", |[y]| &y + &leaked, [Arg::new(3)]).unwrap_err();
    assert!(matches!(err, Error::LeakedTensor { ref function } if function == "second"), "{err}");
    let err = NumericalFunction::new("only_leaked", |[_y]| leaked.clone(), [Arg::new(3)]).unwrap_err();
    assert!(matches!(err, Error::LeakedTensor { .. }), "{err}");
    // Graphs built by hand mix no traces either.
    let err =
        NumericalFunction::from_tensors("mixed", vec![Arg::new(3)], &[&leaked + &Tensor::input(0, [3], DType::F64)])
            .unwrap_err();
    assert!(matches!(err, Error::LeakedTensor { .. }), "{err}");
}

//! Functions travel without the code that traced them: anvil's versioned function format
//! round-trips every kind of function exactly, and bytes that are not a valid function
//! (truncated, corrupted, hostile, another version) are errors, never panics.

use crate::common;

use anvil::ad::{self, SparseNumericalFunction};
use anvil::ndarray::{array, Array1};
use anvil::{vmap, Arg, DType, Error, HostArray, NumericalFunction, Tensor};
use common::{random, rng};
use rand::Rng;

fn sample_functions() -> Vec<NumericalFunction> {
    let weights = Tensor::from_array(&array![[1.5, -2.0, 0.25], [f64::NAN, f64::INFINITY, -0.0]]);
    let ints = Tensor::from_array(&array![3i32, -7, i32::MIN]);
    let flags = Tensor::from_array(&array![true, false, true]);
    let f = NumericalFunction::new(
        "model",
        |[x, k]| {
            let h = weights.matmul(&x).tanh().maximum(-1e300);
            let picked = x.take(&Tensor::from_array(&array![2i64, 0]));
            let mixed = (&k + &ints).cast(DType::F64) * flags.where_(1.0, -1.0);
            (h.sum() + picked.sum(), mixed.pad(&[(1, 0)]).flip(0), x.reshape([3, 1]).expand([3, 2]).permute([1, 0]))
        },
        [Arg::new(3), Arg::with_dtype(3, DType::I32)],
    )
    .unwrap();
    let g = NumericalFunction::new("energy", |[x]| (x.square() * x.sin()).sum() + x.prod(), [Arg::new(4)]).unwrap();
    let derived =
        vec![ad::gradient(&g).unwrap(), ad::hessian(&g).unwrap(), ad::jvp(&g).unwrap(), vmap(&g, 5, &[]).unwrap()];
    let mut all = vec![f, g];
    all.extend(derived);
    all
}

fn inputs_for(f: &NumericalFunction, seed: u64) -> Vec<HostArray> {
    let mut r = rng(seed);
    f.inputs().iter().map(|a| random(&mut r, &a.shape, a.dtype, -1.5, 1.5)).collect()
}

fn same(a: &[HostArray], b: &[HostArray]) {
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.dtype(), y.dtype());
        assert_eq!(x.shape(), y.shape());
        for (p, q) in x.to_f64_vec().iter().zip(y.to_f64_vec()) {
            assert!(p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()), "{p} vs {q}");
        }
    }
}

#[test]
fn functions_round_trip_exactly() {
    let dir = std::env::temp_dir().join(format!("anvil_serial_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in sample_functions() {
        let path = dir.join(format!("{}.anvil", f.name()));
        f.save(&path).unwrap();
        let g = NumericalFunction::load(&path).unwrap();
        assert_eq!((g.name(), g.inputs(), g.outputs()), (f.name(), f.inputs(), f.outputs()));
        let inputs = inputs_for(&f, 3);
        same(&g.eval_dyn(&inputs).unwrap(), &f.eval_dyn(&inputs).unwrap());
        same(&g.call_dyn(&inputs).unwrap(), &f.call_dyn(&inputs).unwrap());
        // A loaded function is as good as a traced one: differentiate it, emit it.
        if g.outputs()[0].numel() == 1 && g.inputs()[0].dtype.is_float() {
            assert!(ad::gradient(&g.output(0).unwrap()).is_ok());
        }
        assert_eq!(g.module_source().source, f.module_source().source);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn sparse_functions_keep_their_pattern() {
    let n = 12;
    let f = NumericalFunction::new(
        "band",
        |[x]| {
            let p = x.pad(&[(1, 1)]);
            p.shrink(&[(0, n)]) - &x * 2.0 + p.shrink(&[(2, n + 2)]) + x.exp()
        },
        [Arg::new(n)],
    )
    .unwrap();
    for sparse in [
        ad::spjacobian(&f).unwrap(),
        ad::sphessian(
            &NumericalFunction::new("s", |[x]| (x.sin() * x.pad(&[(1, 0)]).shrink(&[(0, n)])).sum(), [Arg::new(n)])
                .unwrap(),
        )
        .unwrap(),
    ] {
        let loaded = SparseNumericalFunction::from_bytes(&sparse.to_bytes()).unwrap();
        assert_eq!(
            (loaded.shape(), loaded.indices(), loaded.indptr(), loaded.colors()),
            (sparse.shape(), sparse.indices(), sparse.indptr(), sparse.colors())
        );
        let x = Array1::linspace(0.1, 0.9, n).into_dyn();
        assert_eq!(loaded.call(&[x.view()]).unwrap(), sparse.call(&[x.view()]).unwrap());
        // Loaded as a plain function: the function of its values, with the pattern in C++.
        let values = NumericalFunction::from_bytes(&sparse.to_bytes()).unwrap();
        assert!(values.sparsity().is_some());
        assert!(values.module_source().header.contains("innerIndices"));
    }
    let dense = NumericalFunction::new("dense", |[x]| x * 2.0, [Arg::new(2)]).unwrap();
    let err = SparseNumericalFunction::from_bytes(&dense.to_bytes()).unwrap_err();
    assert!(err.to_string().contains("not a sparse function"), "{err}");
}

#[test]
fn tensors_round_trip() {
    let c = (Tensor::from_array(&array![1.0, 2.0]) * 3.0).exp();
    let back = Tensor::from_bytes(&c.to_bytes().unwrap()).unwrap();
    assert_eq!(anvil::eval(&[back], &[]).unwrap(), anvil::eval(&[c], &[]).unwrap());
}

fn expect_deserialize_error(bytes: &[u8], what: &str) {
    match NumericalFunction::from_bytes(bytes) {
        Err(Error::Deserialize { message }) => assert!(!message.is_empty(), "{what}"),
        Err(other) => panic!("{what}: expected a deserialisation error, got {other:?}"),
        Ok(_) => panic!("{what}: accepted"),
    }
}

fn edit(f: &NumericalFunction, change: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut doc: serde_json::Value = serde_json::from_slice(&f.to_bytes()).unwrap();
    change(&mut doc);
    serde_json::to_vec(&doc).unwrap()
}

#[test]
fn invalid_files_are_errors_not_crashes() {
    let f = &sample_functions()[0];
    let good = f.to_bytes();
    expect_deserialize_error(b"", "empty");
    expect_deserialize_error(b"\x7fELF\x02\x01", "a binary");
    expect_deserialize_error(&good[..good.len() / 2], "truncated");
    expect_deserialize_error(&edit(f, |d| d["version"] = 99.into()), "a newer version");
    expect_deserialize_error(&edit(f, |d| d["format"] = "anvil.tensor".into()), "another format");
    expect_deserialize_error(
        &edit(f, |d| d["graph"]["nodes"][3]["shape"] = serde_json::json!([1u64 << 40, 1u64 << 40])),
        "huge shape",
    );
    expect_deserialize_error(
        &edit(f, |d| d["graph"]["nodes"][5]["srcs"] = serde_json::json!([99999])),
        "forward reference",
    );
    expect_deserialize_error(&edit(f, |d| d["graph"]["nodes"][2]["dtype"] = "i8".into()), "unknown dtype");
    expect_deserialize_error(&edit(f, |d| d["graph"]["arrays"][0]["data"] = "AAAA".into()), "short array");
    expect_deserialize_error(&edit(f, |d| d["graph"]["outputs"] = serde_json::json!([123456])), "missing output");
    expect_deserialize_error(&edit(f, |d| d["name"] = "sin".into()), "reserved name");
    expect_deserialize_error(&edit(f, |d| d["inputs"][0]["shape"] = serde_json::json!([4])), "inputs that disagree");
    let sparse = ad::spjacobian(&NumericalFunction::new("d", |[x]| x.exp(), [Arg::new(3)]).unwrap()).unwrap();
    let mut doc: serde_json::Value = serde_json::from_slice(&sparse.to_bytes()).unwrap();
    doc["sparsity"]["indices"] = serde_json::json!([5, 1, 0]);
    expect_deserialize_error(&serde_json::to_vec(&doc).unwrap(), "a row out of range");
    doc["sparsity"]["rows"] = serde_json::json!(u64::MAX);
    assert!(NumericalFunction::from_bytes(&serde_json::to_vec(&doc).unwrap()).is_err(), "huge pattern");
    // Random corruption: every mutation is rejected or yields a valid function, never a panic.
    let mut r = rng(8);
    for _ in 0..300 {
        let mut bytes = good.clone();
        for _ in 0..r.gen_range(1..4) {
            let i = r.gen_range(0..bytes.len());
            bytes[i] = r.gen();
        }
        if let Ok(g) = NumericalFunction::from_bytes(&bytes) {
            let inputs: Vec<HostArray> = g.inputs().iter().map(|a| HostArray::zeros(a.dtype, &a.shape)).collect();
            let _ = g.eval_dyn(&inputs);
        }
    }
}

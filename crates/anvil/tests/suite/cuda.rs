//! The CUDA backend. Everywhere: every generated CUDA kernel runs on the CPU's emulation of a
//! GPU (the translation unit compiled as C++, the grid run serially) and must agree with the
//! reference interpreter, bad values, odd batch sizes and every dtype included; and NVRTC must
//! compile it for sm_80 and sm_90 with an empty log. On a machine with a GPU
//! (scripts/gpu_check.sh), the same on the device.

use crate::common;
use crate::vmap::cases;

use anvil::jit::cuda::{compile_cubin_cached, nvrtc, nvrtc_options, Context, FAST_COMPILE_BYTES};
use anvil::ndarray::{ArrayD, IxDyn};
use anvil::{ad, vmap, Arg, Backend, CudaOptions, DType, Error, HostArray, NumericalFunction};
use rand::Rng;

fn emulated() -> Backend {
    Backend::Cuda(CudaOptions { emulate: true, ..CudaOptions::default() })
}

/// Random inputs of `f`, with NaN, infinities and huge values sprinkled in.
fn inputs_with_bad_values(f: &NumericalFunction, r: &mut rand::rngs::StdRng) -> Vec<HostArray> {
    f.inputs()
        .iter()
        .map(|a| {
            let shape = a.shape.clone();
            let values = ArrayD::from_shape_fn(IxDyn(&shape), |_| match r.gen_range(0..40) {
                0 => f64::NAN,
                1 => f64::INFINITY,
                2 => f64::NEG_INFINITY,
                3 => 1e300,
                _ => r.gen_range(-1.5..1.5),
            });
            match a.dtype {
                DType::F32 => HostArray::F32(values.mapv(|v| v as f32)),
                _ => HostArray::F64(values),
            }
        })
        .collect()
}

/// Runs `f` (on the emulated GPU) and the interpreter and compares every output; compiles
/// its CUDA source with NVRTC for sm_80 and sm_90, which must say nothing.
fn check_emulated(f: &NumericalFunction, inputs: &[HostArray]) {
    assert_eq!(f.backend().name(), "CUDA");
    let want = f.eval_dyn(inputs).expect("interpreter");
    let got = f.call_dyn(inputs).unwrap_or_else(|e| panic!("emulated CUDA of `{}` failed: {e}", f.name()));
    let any_f32 = inputs.iter().any(|a| a.dtype() == DType::F32) || f.outputs().iter().any(|o| o.dtype == DType::F32);
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        common::assert_close(&format!("{} output {k}", f.name()), g, w, if any_f32 { 2e-5 } else { 1e-10 });
    }
    check_nvrtc(f);
}

/// NVRTC compiles `f`'s CUDA source for sm_80 and sm_90 without a word (NVRTC has no
/// -Werror: an empty log is the check).
fn check_nvrtc(f: &NumericalFunction) {
    let source = f.cuda_source();
    for arch in ["sm_80", "sm_90"] {
        let cubin = nvrtc()
            .and_then(|n| n.compile_cubin(f.name(), &source.text, arch, &nvrtc_options(true, source.text.len())))
            .unwrap_or_else(|e| panic!("NVRTC on `{}` for {arch}: {e}", f.name()));
        assert_eq!(cubin.log.trim(), "", "NVRTC warned on `{}` for {arch}:\n{}", f.name(), source.text);
        assert!(cubin.image.starts_with(b"\x7fELF"));
    }
}

#[test]
fn every_primitive_vmapped_runs_on_the_emulated_gpu() {
    let mut r = common::rng(32);
    for (name, op) in cases() {
        let f =
            NumericalFunction::new(&format!("op_{name}"), |[x, y]| op(&x, &y), [Arg::new([3, 4]), Arg::new([3, 4])])
                .unwrap()
                .with_backend(emulated());
        for (batch, in_axes) in [(1, [Some(0), None]), (127, [Some(2), Some(1)]), (129, [None, Some(0)])] {
            let v = vmap(&f, batch, &in_axes).unwrap();
            let inputs = inputs_with_bad_values(&v, &mut r);
            check_emulated(&v, &inputs);
        }
    }
}

/// Functions of one item, and whether a batch of them runs a warp per item: long reductions
/// that are most of an item's work do (each dealt over the lanes), the rest a thread per item.
type WarpCase = (&'static str, Arg, bool, Box<dyn Fn(&Tensor) -> Tensor>);

fn warp_cases() -> Vec<WarpCase> {
    let m = Tensor::from_array(&anvil::ndarray::Array2::from_shape_fn((64, 16), |(i, j)| ((i * 16 + j) as f64).cos()));
    vec![
        ("energy", Arg::new(1024), true, Box::new(|x| (x.square() * 0.5 + x.sin()).sum())),
        ("energy_f32", Arg::with_dtype(vec![1000], DType::F32), true, Box::new(|x| (x.square() * 0.5 + x.sin()).sum())),
        ("max_and_norm", Arg::new(700), true, Box::new(|x| x.max() * 2.0 + x.abs().sum())),
        ("product", Arg::new(300), true, Box::new(|x| (x * 1e-3).cos().prod())),
        (
            "rows",
            Arg::new([2, 600]),
            true,
            Box::new(|x| x.exp().sum_axes(1, false) * x.slice(anvil::ndarray::s![.., 0])),
        ),
        ("sum_then_scale", Arg::new(512), true, Box::new(|x| x.tanh().sum() * x.slice(anvil::ndarray::s![0..3]))),
        ("short_sum", Arg::new(100), false, Box::new(|x| x.sin().sum())),
        ("matvec", Arg::new(16), false, Box::new(move |x| m.matmul(x).tanh())),
    ]
}

#[test]
fn long_reductions_of_an_item_are_dealt_over_a_warp() {
    let mut r = common::rng(41);
    for (name, arg, warp, body) in warp_cases() {
        let f =
            NumericalFunction::new(&format!("warp_{name}"), |[x]| body(&x), [arg]).unwrap().with_backend(emulated());
        for batch in [1, 127, 129] {
            let v = vmap(&f, batch, &[]).unwrap();
            let source = v.cuda_source();
            assert_eq!(source.entries[0].lanes, if warp { 32 } else { 1 }, "{name}");
            assert_eq!(source.text.contains("__shfl_down_sync"), warp, "{name}");
            check_emulated(&v, &inputs_with_bad_values(&v, &mut r));
        }
    }
}

#[test]
fn a_function_that_is_no_vmap_spreads_each_kernel_over_a_grid() {
    let mut r = common::rng(40);
    let m = Tensor::from_array(&anvil::ndarray::Array2::from_shape_fn((300, 200), |(i, j)| ((i * 7 + j) as f64).sin()));
    let idx = Tensor::from_array(&anvil::ndarray::Array1::from_shape_fn(5000, |i| ((i * 37) % 1000) as i64));
    type Body = Box<dyn Fn(&Tensor) -> Tensor>;
    let cases: Vec<(&str, usize, Body)> = vec![
        ("elementwise", 100_000, Box::new(|x| (x.square() * 0.5 + x.sin()).exp())),
        ("full_sum", 100_000, Box::new(|x| (x.square() * 0.5 + x.sin()).sum())),
        ("sums_and_max", 50_000, Box::new(|x| x.square().sum() / (x.abs().sum() + 1.0) + x.max() * 2.0)),
        ("long_product", 30_000, Box::new(|x| (x * 1e-4).cos().prod())),
        (
            "rows_and_columns",
            60_000,
            Box::new(|x| {
                let a = x.reshape([300, 200]);
                a.sum_axes(0, false).sum() + a.max_axes(1, false).sum()
            }),
        ),
        ("matvec", 200, Box::new(move |x| m.matmul(x).tanh())),
        ("scatter", 5000, Box::new(move |x| Tensor::scatter_add(&x.sin(), &idx, [1000]))),
        ("few_long_rows", 3 * 20_000, Box::new(|x| x.reshape([3, 20_000]).cos() * 2.0)),
    ];
    for (name, n, body) in cases {
        let f = NumericalFunction::new(&format!("grid_{name}"), |[x]| body(&x), [Arg::new(n)])
            .unwrap()
            .with_backend(emulated());
        let source = f.cuda_source();
        assert!(source.entries.iter().all(|e| e.threads.is_some()), "{name}: the grid form");
        if name == "full_sum" {
            assert!(source.entries.iter().any(|e| e.exact), "{name}: the sum is split over many threads");
        }
        if matches!(name, "elementwise" | "few_long_rows") {
            let most = source.entries.iter().filter_map(|e| e.threads).max().unwrap();
            assert!(most >= 20_000, "{name}: the elements spread over threads ({most})");
        }
        check_emulated(&f, &inputs_with_bad_values(&f, &mut r));
    }
}

#[test]
fn every_primitive_runs_unbatched_on_the_emulated_gpu() {
    let mut r = common::rng(33);
    for (name, op) in cases().into_iter().take(6) {
        let f =
            NumericalFunction::new(&format!("one_{name}"), |[x, y]| op(&x, &y), [Arg::new([3, 4]), Arg::new([3, 4])])
                .unwrap()
                .with_backend(emulated());
        let inputs = inputs_with_bad_values(&f, &mut r);
        check_emulated(&f, &inputs);
    }
}

#[test]
fn derivatives_and_float32_run_on_the_emulated_gpu() {
    let mut r = common::rng(34);
    let f = NumericalFunction::new(
        "pend",
        |[x, u]| {
            let (th, om) = (x.slice(anvil::ndarray::s![0..1]), x.slice(anvil::ndarray::s![1..2]));
            let accel = th.sin() * -9.81 + u.sum() - &om * 0.1;
            Tensor::cat(&[om, accel], 0)
        },
        [Arg::new(2), Arg::new(1)],
    )
    .unwrap()
    .with_backend(emulated());
    let jac = ad::jacobian_wrt(&f, 0).unwrap();
    assert_eq!(jac.backend().name(), "CUDA", "derived functions keep the backend");
    let v = vmap(&jac, 65, &[]).unwrap();
    check_emulated(&v, &inputs_with_bad_values(&v, &mut r));
    let single = NumericalFunction::new(
        "f32",
        |[x]| (x.square() * 0.5 + x.sin()).sum(),
        [Arg::with_dtype(vec![33], DType::F32)],
    )
    .unwrap()
    .with_backend(emulated());
    let v = vmap(&single, 129, &[]).unwrap();
    check_emulated(&v, &inputs_with_bad_values(&v, &mut r));
}

use anvil::Tensor;

#[test]
fn a_large_batch_wraps_the_grid() {
    let mut r = common::rng(35);
    let f = NumericalFunction::new("axpy", |[x, a]| &x * &a + x.cos(), [Arg::new(3), Arg::new(3)])
        .unwrap()
        .with_backend(emulated());
    let v = vmap(&f, 65_537, &[Some(0), None]).unwrap();
    check_emulated(&v, &inputs_with_bad_values(&v, &mut r));
}

#[test]
fn the_batch_axis_of_outputs_can_be_placed_on_the_gpu() {
    let f = NumericalFunction::new("outer", |[x]| x.outer(&x), [Arg::new(3)]).unwrap().with_backend(emulated());
    let v = ad::vmap_out(&f, 4, &[Some(1)], 1).unwrap();
    let x = HostArray::F64(ArrayD::from_shape_fn(IxDyn(&[3, 4]), |p| (p[0] * 4 + p[1]) as f64 * 0.1));
    check_emulated(&v, &[x]);
}

#[test]
fn cubins_are_cached() {
    let f = NumericalFunction::new("cached", |[x]| x.exp(), [Arg::new(3)]).unwrap();
    let source = f.with_backend(emulated()).cuda_source();
    let dir = tempdir();
    let options = CudaOptions { cache_dir: Some(dir.clone()), ..CudaOptions::default() };
    let first = compile_cubin_cached("cached", &source.text, "sm_90", &options).unwrap();
    let files = std::fs::read_dir(&dir).unwrap().count();
    let second = compile_cubin_cached("cached", &source.text, "sm_90", &options).unwrap();
    assert_eq!(first, second);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), files, "the second compile is a cache hit");
    // Large sources compile in NVRTC's fast mode (and so to another CUBIN).
    assert!(nvrtc_options(true, FAST_COMPILE_BYTES + 1).iter().any(|o| o == "--Ofast-compile=mid"));
    assert!(!nvrtc_options(true, source.text.len()).iter().any(|o| o.starts_with("--Ofast-compile")));
    // Another option is another CUBIN.
    let unfused = CudaOptions { fused_multiply_add: false, ..options };
    compile_cubin_cached("cached", &source.text, "sm_90", &unfused).unwrap();
    assert!(std::fs::read_dir(&dir).unwrap().count() > files);
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("anvil-cuda-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn without_a_gpu_a_cuda_call_says_so() {
    let f = NumericalFunction::new("nogpu", |[x]| x.exp(), [Arg::new(3)])
        .unwrap()
        .with_backend(Backend::Cuda(CudaOptions { emulate: false, ..CudaOptions::default() }));
    let x = HostArray::F64(ArrayD::zeros(IxDyn(&[3])));
    match (Context::open(0), f.call_dyn(&[x])) {
        (Ok(_), result) => {
            eprintln!("a GPU is present: the CUDA call ran ({})", if result.is_ok() { "ok" } else { "failed" });
            result.unwrap();
        }
        (Err(_), Err(e)) => assert!(
            matches!(e, Error::CudaUnavailable { .. } | Error::Cuda { .. }),
            "without a GPU the error says CUDA is unavailable, got {e}"
        ),
        (Err(e), Ok(_)) => panic!("no GPU ({e}), yet the CUDA call succeeded"),
    }
}

#[test]
fn device_calls_read_and_write_in_place() {
    // Under the emulation, device memory is host memory: the device entry point runs on it.
    let f = NumericalFunction::new("affine", |[x, w]| (&x * &w).sum() + x.sin(), [Arg::new(4), Arg::new(4)])
        .unwrap()
        .with_backend(emulated());
    let v = vmap(&f, 130, &[Some(0), None]).unwrap();
    let x = ArrayD::from_shape_fn(IxDyn(&[130, 4]), |p| (p[0] as f64 - 60.0) * 0.01 + p[1] as f64);
    let w = ArrayD::from_shape_fn(IxDyn(&[4]), |p| 0.5 - p[0] as f64);
    let mut out = ArrayD::<f64>::zeros(IxDyn(&[130, 4]));
    let addresses = [x.as_ptr() as u64, w.as_ptr() as u64, out.as_mut_ptr() as u64];
    // SAFETY: emulated: the addresses are host arrays of the declared shapes.
    unsafe { v.call_device(&addresses).unwrap() };
    let want = v.eval(&[x.view(), w.view()]).unwrap().remove(0);
    assert!((&out - &want).iter().all(|d| d.abs() < 1e-12));
    // Once loaded and sized, a device call allocates nothing on the host.
    let before = common::allocations();
    // SAFETY: as above.
    unsafe { v.call_device(&addresses).unwrap() };
    assert_eq!(common::allocations() - before, 0, "a device call allocated");
    // A wrong count of arguments, and a batch axis that is not first, are errors.
    // SAFETY: refused before any memory is touched.
    assert!(matches!(unsafe { v.call_device(&addresses[..2]) }, Err(Error::ArgumentCount { .. })));
    // A function of the CPU backend has no CUDA code to load.
    let cpu = NumericalFunction::new("cpu_only", |[x]| x.exp(), [Arg::new(3)]).unwrap();
    let err = cpu.compile_cuda().unwrap_err();
    assert!(matches!(err, Error::Device { .. }) && err.to_string().contains("with_backend"), "{err}");
    let moved = vmap(&f, 4, &[Some(1), None]).unwrap();
    // SAFETY: as above.
    let err = unsafe { moved.call_device(&addresses) }.unwrap_err().to_string();
    assert!(err.contains("batch axis first"), "{err}");
}

/// The GPU backend where a GPU is present; elsewhere `None`, said on stderr (with
/// `ANVIL_TEST_CUDA=1`, as scripts/gpu_check.sh sets, a missing GPU fails instead).
fn gpu() -> Option<Backend> {
    match Context::open(0) {
        Ok(context) => {
            eprintln!("GPU: {} ({})", context.device_name(), context.arch());
            Some(Backend::Cuda(CudaOptions { emulate: false, ..CudaOptions::default() }))
        }
        Err(e) if std::env::var("ANVIL_TEST_CUDA").is_ok_and(|v| v == "1") => panic!("ANVIL_TEST_CUDA=1 but: {e}"),
        Err(e) => {
            eprintln!("no GPU here, the test checks nothing on one: {e}");
            None
        }
    }
}

/// Runs `f` on the GPU and the interpreter and compares every output. CUDA contracts
/// `a * b + c` into fused multiply-adds, so the last bits may differ.
fn check_gpu(f: &NumericalFunction, inputs: &[HostArray]) {
    let want = f.eval_dyn(inputs).expect("interpreter");
    let got = f.call_dyn(inputs).unwrap_or_else(|e| panic!("CUDA of `{}` failed: {e}", f.name()));
    let any_f32 = inputs.iter().any(|a| a.dtype() == DType::F32) || f.outputs().iter().any(|o| o.dtype == DType::F32);
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        common::assert_close(&format!("{} output {k} (GPU)", f.name()), g, w, if any_f32 { 2e-5 } else { 1e-9 });
    }
}

#[test]
fn on_the_gpu_every_primitive_agrees_with_the_interpreter() {
    let Some(fused) = gpu() else { return };
    // Bad values at the edge of overflow round differently with fused multiply-adds: the
    // GPU without them must agree with the interpreter everywhere.
    let Backend::Cuda(options) = fused else { unreachable!() };
    let gpu = Backend::Cuda(CudaOptions { fused_multiply_add: false, ..options });
    let mut r = common::rng(36);
    for (name, op) in cases() {
        let f =
            NumericalFunction::new(&format!("gpu_{name}"), |[x, y]| op(&x, &y), [Arg::new([3, 4]), Arg::new([3, 4])])
                .unwrap()
                .with_backend(gpu.clone());
        check_gpu(&f, &inputs_with_bad_values(&f, &mut r));
        for (batch, in_axes) in [(1, [Some(0), None]), (127, [Some(2), Some(1)]), (65_537, [None, Some(0)])] {
            let v = vmap(&f, batch, &in_axes).unwrap();
            check_gpu(&v, &inputs_with_bad_values(&v, &mut r));
        }
    }
    let g = NumericalFunction::new(
        "gpu_f32",
        |[x]| (x.square() * 0.5 + x.sin()).sum(),
        [Arg::with_dtype(vec![1024], DType::F32)],
    )
    .unwrap()
    .with_backend(gpu.clone());
    let v = vmap(&g, 129, &[]).unwrap();
    check_gpu(&v, &inputs_with_bad_values(&v, &mut r));
    let jac = vmap(&ad::gradient(&g.with_backend(gpu)).unwrap(), 4097, &[]).unwrap();
    check_gpu(&jac, &inputs_with_bad_values(&jac, &mut r));
}

#[test]
fn on_the_gpu_long_reductions_of_an_item_are_dealt_over_a_warp() {
    let Some(gpu) = gpu() else { return };
    let mut r = common::rng(42);
    for (name, arg, _, body) in warp_cases() {
        let f = NumericalFunction::new(&format!("gpu_warp_{name}"), |[x]| body(&x), [arg])
            .unwrap()
            .with_backend(gpu.clone());
        for batch in [1, 127, 65_537] {
            let v = vmap(&f, batch, &[]).unwrap();
            check_gpu(&v, &inputs_with_bad_values(&v, &mut r));
        }
    }
}

#[test]
fn on_the_gpu_fused_multiply_adds_agree_on_ordinary_values() {
    let Some(gpu) = gpu() else { return };
    let mut r = common::rng(38);
    for (name, op) in cases() {
        let f =
            NumericalFunction::new(&format!("fma_{name}"), |[x, y]| op(&x, &y), [Arg::new([3, 4]), Arg::new([3, 4])])
                .unwrap()
                .with_backend(gpu.clone());
        let v = vmap(&f, 1000, &[]).unwrap();
        let inputs: Vec<HostArray> =
            v.inputs().iter().map(|a| common::random(&mut r, &a.shape, a.dtype, -1.5, 1.5)).collect();
        check_gpu(&v, &inputs);
    }
}

/// A table read at the loop's index (constant memory) and gathered at an index from the
/// data (device memory), each checked by `check`.
fn check_constant_placement(backend: Backend, check: fn(&NumericalFunction, &[HostArray])) {
    let table = Tensor::from_array(&anvil::ndarray::Array1::from_shape_fn(5000, |i| (i as f64 * 0.01).sin()));
    let weights =
        Tensor::from_array(&anvil::ndarray::Array2::from_shape_fn((24, 16), |(i, j)| ((i * 16 + j) as f64).cos()));
    let read = NumericalFunction::new("table_read", move |[x]| weights.matmul(&x).tanh(), [Arg::new(16)])
        .unwrap()
        .with_backend(backend.clone());
    let gathered = NumericalFunction::new(
        "table_gather",
        move |[x]| table.take(&(x.abs() * 1000.0).floor().cast(DType::I64)),
        [Arg::new(16)],
    )
    .unwrap()
    .with_backend(backend);
    let mut r = common::rng(39);
    for (f, in_constant_memory) in [(read, true), (gathered, false)] {
        let v = vmap(&f, 777, &[]).unwrap();
        assert_eq!(v.cuda_source().constant_memory, in_constant_memory, "{}", f.name());
        let inputs: Vec<HostArray> =
            v.inputs().iter().map(|a| common::random(&mut r, &a.shape, a.dtype, -4.0, 4.0)).collect();
        check(&v, &inputs);
    }
}

#[test]
fn constants_live_in_constant_memory_where_all_threads_read_them_alike() {
    check_constant_placement(emulated(), check_emulated);
}

#[test]
fn on_the_gpu_constants_in_constant_memory_and_in_device_memory() {
    let Some(gpu) = gpu() else { return };
    check_constant_placement(gpu, check_gpu);
}

#[test]
fn on_the_gpu_calls_from_threads_are_safe() {
    let Some(gpu) = gpu() else { return };
    let f = NumericalFunction::new("gpu_threads", |[x]| x.exp().sum(), [Arg::new(8)]).unwrap().with_backend(gpu);
    let v = vmap(&f, 1000, &[]).unwrap();
    let x = HostArray::F64(ArrayD::from_shape_fn(IxDyn(&[1000, 8]), |p| (p[0] % 7) as f64 * 0.1 - p[1] as f64 * 0.01));
    let want = v.eval_dyn(std::slice::from_ref(&x)).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..20 {
                    let got = v.call_dyn(std::slice::from_ref(&x)).unwrap();
                    common::assert_close("threads", &got[0], &want[0], 1e-12);
                }
            });
        }
    });
}

#[test]
fn large_intermediates_live_in_global_scratch_memory() {
    // 40 x 40 doubles between two kernels: beyond what a thread keeps in local memory.
    let f = NumericalFunction::new(
        "big",
        |[x]| {
            let a = (x.reshape([40, 1]) * x.reshape([1, 40])).sin();
            a.matmul(&a).sum_axes(0, false)
        },
        [Arg::new(40)],
    )
    .unwrap()
    .with_backend(emulated());
    let v = vmap(&f, 200, &[]).unwrap();
    let source = v.cuda_source();
    assert!(source.scratch_stride >= 40 * 40 * 8, "{}", source.scratch_stride);
    assert!(source.text.contains("a.scratch + (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) *"));
    let mut r = common::rng(37);
    check_emulated(&v, &inputs_with_bad_values(&v, &mut r));
    // A small program keeps its intermediates in local memory.
    let small =
        vmap(&NumericalFunction::new("small", |[x]| x.sin().sum() * x, [Arg::new(4)]).unwrap(), 3, &[]).unwrap();
    assert_eq!(small.cuda_source().scratch_stride, 0);
}

#[test]
fn a_cuda_function_s_module_has_a_device_function_for_your_own_kernels() {
    // The MPPI use: dynamics and their Jacobian written once, called per sample from CUDA C++.
    let f = NumericalFunction::new(
        "pend",
        |[x, u]| {
            let (th, om) = (x.slice(anvil::ndarray::s![0..1]), x.slice(anvil::ndarray::s![1..2]));
            let weights = Tensor::from_array(&anvil::ndarray::array![1.0, f64::NAN, f64::INFINITY]);
            let accel = th.sin() * -9.81 + u.sum() - &om * 0.1 + weights.slice(anvil::ndarray::s![0..1]);
            Tensor::cat(&[om, accel], 0)
        },
        [Arg::new(2), Arg::new(1)],
    )
    .unwrap()
    .with_backend(emulated());
    let jac = ad::jacobian_wrt(&f, 0).unwrap();
    let dir = tempdir().join("device_module");
    anvil::generate_module("dyn", &[&f, &jac], &dir).unwrap();
    let header = std::fs::read_to_string(dir.join("dyn.hpp")).unwrap();
    assert!(header.contains("__device__ inline void call_device("), "{header}");
    // Your kernel, compiled as C++ with the emulation (what nvcc would compile for a GPU).
    std::fs::write(dir.join("emulation.hpp"), anvil::jit::cuda::EMULATION_HEADER).unwrap();
    let user = r#"#include "emulation.hpp"
#include "dyn.hpp"
extern "C" void run(long long n, const double* x, const double* u, double* dx, double* jac) {
  for (long long i = 0; i < n; ++i) {
    pend::call_device(x + 2 * i, u + i, dx + 2 * i);
    pend_jac::call_device(x + 2 * i, u + i, jac + 4 * i);
  }
}
"#;
    std::fs::write(dir.join("user.cpp"), user).unwrap();
    let library = dir.join("libuser.so");
    let status = std::process::Command::new("g++")
        .args(["-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(dir.join("user.cpp"))
        .status()
        .unwrap();
    assert!(status.success(), "the header's device code compiles warning-free");
    let n = 33;
    let x: Vec<f64> = (0..2 * n).map(|i| (i as f64 * 0.37).sin() * 2.0).collect();
    let u: Vec<f64> = (0..n).map(|i| i as f64 * 0.1 - 1.0).collect();
    let (mut dx, mut dj) = (vec![0.0; 2 * n], vec![0.0; 4 * n]);
    // SAFETY: the symbol's signature is `user`'s; the buffers hold n samples each.
    unsafe {
        let lib = libloading::Library::new(&library).unwrap();
        let run: libloading::Symbol<unsafe extern "C" fn(i64, *const f64, *const f64, *mut f64, *mut f64)> =
            lib.get(b"run").unwrap();
        run(n as i64, x.as_ptr(), u.as_ptr(), dx.as_mut_ptr(), dj.as_mut_ptr());
    }
    for i in 0..n {
        let xi = ArrayD::from_shape_vec(IxDyn(&[2]), x[2 * i..2 * i + 2].to_vec()).unwrap();
        let ui = ArrayD::from_shape_vec(IxDyn(&[1]), vec![u[i]]).unwrap();
        let want = f.eval(&[xi.view(), ui.view()]).unwrap().remove(0);
        let want_jac = jac.eval(&[xi.view(), ui.view()]).unwrap().remove(0);
        for (g, w) in
            dx[2 * i..2 * i + 2].iter().zip(want.iter()).chain(dj[4 * i..4 * i + 4].iter().zip(want_jac.iter()))
        {
            assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "sample {i}: {g} vs {w}");
        }
    }
    // The host side (NVRTC in init_ws, copies and launches in call) compiles warning-free
    // against CUDA's headers (running it needs a GPU: scripts/gpu_check.sh).
    let vmapped = vmap(&f, 64, &[Some(0), None]).unwrap().renamed("pend_batch").unwrap();
    anvil::generate_module("dyn_host", &[&f, &vmapped], &dir).unwrap();
    let host = r#"#include <cuda.h>
#include <nvrtc.h>
#define ANVIL_CUDA_HOST
#include "dyn_host.hpp"
int run_on_gpu() {
  pend::gpu::WS_t ws = pend::gpu::init_ws();
  double x[2] = {0.1, 0.2}, u[1] = {0.3}, dx[2];
  int error = pend::gpu::call(x, u, dx, ws);
  pend::gpu::free_ws(ws);
  pend_batch::gpu::WS_t batch = pend_batch::gpu::init_ws(0);
  double xs[128] = {}, out[128];
  error |= pend_batch::gpu::call(xs, u, out, batch);
  pend_batch::gpu::free_ws(batch);
  return error;
}
"#;
    std::fs::write(dir.join("host.cu"), host).unwrap();
    // nvcc (from pip's CUDA wheels beside NVRTC; scripts/setup.sh installs them) compiles the
    // host side, and a kernel of yours calling the device code, with every warning an error.
    let lib_dirs = std::env::var_os("ANVIL_CUDA_LIB_DIRS").expect("NVRTC's directory (scripts/test.sh sets it)");
    let cuda = std::env::split_paths(&lib_dirs).next().unwrap_or_default().join("..");
    let nvcc = cuda.join("bin/nvcc");
    assert!(
        nvcc.exists(),
        "nvcc not found at {} (pip install nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88)",
        nvcc.display()
    );
    let kernel_of_yours = r#"#include "dyn.hpp"
__global__ void mppi_step(const double* x, const double* u, double* dx, double* jac, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    pend::call_device(x + 2 * i, u + i, dx + 2 * i);
    pend_jac::call_device(x + 2 * i, u + i, jac + 4 * i);
  }
}
"#;
    std::fs::write(dir.join("kernel.cu"), kernel_of_yours).unwrap();
    for file in ["host.cu", "kernel.cu"] {
        let output = std::process::Command::new(&nvcc)
            .args(["-std=c++17", "-arch=sm_80", "-Werror", "all-warnings", "-Xcompiler", "-Wall,-Wextra", "-c", "-o"])
            .arg(dir.join(format!("{file}.o")))
            .arg(format!("-I{}", dir.display()))
            .arg(format!("-I{}", cuda.join("include").display()))
            .arg(dir.join(file))
            .output()
            .unwrap();
        assert!(output.status.success(), "nvcc on {file}: {}", String::from_utf8_lossy(&output.stderr));
    }
    // NVRTC compiles the device code as a CUDA compiler sees it, without a word.
    let kernel = format!(
        "namespace pend {{\n{}\n}}\nextern \"C\" __global__ void k(const double* x, const double* u, double* dx) {{ pend::call_device(x, u, dx); }}\n",
        f.cuda_device_source()
    );
    let cubin =
        nvrtc().unwrap().compile_cubin("device_module", &kernel, "sm_90", &nvrtc_options(true, kernel.len())).unwrap();
    assert_eq!(cubin.log.trim(), "");
}

#[test]
fn on_the_gpu_a_module_s_host_code_runs_its_kernels() {
    let Some(gpu) = gpu() else { return };
    let f = NumericalFunction::new("roll", |[x, u]| (&x * 0.5 + u.sum()).sin() * &x, [Arg::new(3), Arg::new(2)])
        .unwrap()
        .with_backend(gpu);
    let batch = vmap(&f, 1000, &[Some(0), None]).unwrap().renamed("roll_batch").unwrap();
    // A warp per item (its long sum dealt over the lanes).
    let energy = NumericalFunction::new("energy", |[x]| (x.square() * 0.5 + x.sin()).sum(), [Arg::new(512)])
        .unwrap()
        .with_backend(batch.backend().clone());
    let energies = vmap(&energy, 100, &[]).unwrap().renamed("energy_batch").unwrap();
    assert_eq!(energies.cuda_source().entries[0].lanes, 32);
    let dir = tempdir().join("gpu_module");
    anvil::generate_module("gpu_mod", &[&f, &batch, &energies], &dir).unwrap();
    let main = r#"#include <cuda.h>
#include <nvrtc.h>
#include <cstdio>
#define ANVIL_CUDA_HOST
#include "gpu_mod.hpp"
int main() {
  static double xs[3000], out[3000];
  double u[2] = {0.25, -0.5};
  for (int i = 0; i < 3000; ++i) xs[i] = 0.001 * i - 1.0;
  roll_batch::gpu::WS_t ws = roll_batch::gpu::init_ws();
  int error = roll_batch::gpu::call(xs, u, out, ws);
  roll_batch::gpu::free_ws(ws);
  static double es[51200], energies[100];
  for (int i = 0; i < 51200; ++i) es[i] = 0.0001 * i - 2.0;
  energy_batch::gpu::WS_t energy_ws = energy_batch::gpu::init_ws();
  error |= energy_batch::gpu::call(es, energies, energy_ws);
  energy_batch::gpu::free_ws(energy_ws);
  if (error != 0) { std::printf("error %d\n", error); return 1; }
  for (int i = 0; i < 3000; ++i) std::printf("%.17g\n", out[i]);
  for (int i = 0; i < 100; ++i) std::printf("%.17g\n", energies[i]);
  return 0;
}
"#;
    std::fs::write(dir.join("main.cpp"), main).unwrap();
    let cuda = std::env::var("CUDA_HOME").unwrap_or_else(|_| "/usr/local/cuda".into());
    let status = std::process::Command::new("g++")
        .args(["-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(dir.join("main"))
        .arg(dir.join("main.cpp"))
        .arg(format!("-I{cuda}/include"))
        .arg(format!("-L{cuda}/lib64"))
        .args(["-lnvrtc", "-lcuda"])
        .status()
        .expect("g++ (the GPU machine's, beside nvcc)");
    assert!(status.success());
    let run =
        std::process::Command::new(dir.join("main")).env("LD_LIBRARY_PATH", format!("{cuda}/lib64")).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stdout));
    let got: Vec<f64> = String::from_utf8_lossy(&run.stdout).lines().map(|l| l.parse().unwrap()).collect();
    let xs = ArrayD::from_shape_fn(IxDyn(&[1000, 3]), |p| 0.001 * (p[0] * 3 + p[1]) as f64 - 1.0);
    let u = ArrayD::from_shape_vec(IxDyn(&[2]), vec![0.25, -0.5]).unwrap();
    let want = batch.eval(&[xs.view(), u.view()]).unwrap().remove(0);
    let es = ArrayD::from_shape_fn(IxDyn(&[100, 512]), |p| 0.0001 * (p[0] * 512 + p[1]) as f64 - 2.0);
    let want_energies = energies.eval(&[es.view()]).unwrap().remove(0);
    assert_eq!(got.len(), 3100);
    for (g, w) in got.iter().zip(want.iter().chain(want_energies.iter())) {
        assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{g} vs {w}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, failure_persistence: None, ..Default::default() })]

    /// Random graphs (the property tests' generator) on the emulated GPU, as one function
    /// (a grid per kernel, as loops too) and vmapped (a thread per item), agree with the
    /// interpreter, and NVRTC compiles each without a word.
    #[test]
    fn random_graphs_on_the_emulated_gpu_agree_with_the_interpreter(
        shapes in proptest::collection::vec(crate::property::shape(), 1..3),
        steps in proptest::collection::vec(proptest::prelude::any::<crate::property::Step>(), 1..12),
        seed in proptest::prelude::any::<u64>(),
    ) {
        use crate::property::{build, host_inputs};
        let inputs = host_inputs(&shapes, seed);
        check_emulated(&build(&shapes, &steps).with_backend(emulated()), &inputs);
        let loops = build(&shapes, &steps).with_lowering(anvil::LowerOptions::loops_only()).with_backend(emulated());
        check_emulated(&loops, &inputs);
        let v = vmap(&build(&shapes, &steps).with_backend(emulated()), 33, &[]).unwrap();
        let mut r = common::rng(seed);
        let batched: Vec<HostArray> = shapes
            .iter()
            .map(|s| common::random(&mut r, &std::iter::once(33).chain(s.iter().copied()).collect::<Vec<_>>(), DType::F64, -2.0, 2.0))
            .collect();
        check_emulated(&v, &batched);
    }
}

#[test]
fn host_arrays_of_the_wrong_shape_or_dtype_are_refused_before_the_gpu() {
    let f = NumericalFunction::new("shapes", |[x]| x.exp(), [Arg::new(3)]).unwrap().with_backend(emulated());
    let v = vmap(&f, 5, &[]).unwrap();
    let wrong = [
        HostArray::F64(ArrayD::zeros(IxDyn(&[4, 3]))),
        HostArray::F32(ArrayD::zeros(IxDyn(&[5, 3]))),
        HostArray::F64(ArrayD::zeros(IxDyn(&[15]))),
    ];
    for input in wrong {
        let err = v.call_dyn(std::slice::from_ref(&input)).unwrap_err();
        assert!(matches!(err, Error::InputMismatch { .. }), "{err}");
    }
    assert!(matches!(v.call_dyn(&[]), Err(Error::ArgumentCount { .. })));
}

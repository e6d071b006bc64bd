//! Host arrays: the data that flows into and out of functions outside of tracing.

use crate::dtype::DType;
use crate::error::{Error, Result};
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use std::sync::OnceLock;

/// Fails with [`Error::OutOfMemory`] unless `count` values of `size` bytes fit in this
/// machine's memory (RAM and swap), before anything is allocated: a huge allocation must be
/// an error, not an abort (or an out-of-memory kill once the pages are touched).
pub fn check_alloc(what: impl FnOnce() -> String, count: usize, size: usize) -> Result<()> {
    let bytes = (count as u64).checked_mul(size as u64);
    let available = memory_limit();
    match bytes {
        Some(b) if b <= available => Ok(()),
        _ => Err(Error::OutOfMemory { what: what(), bytes, available }),
    }
}

/// RAM plus swap in bytes (Linux: from /proc/meminfo), read once; unlimited if unknown.
pub(crate) fn memory_limit() -> u64 {
    static LIMIT: OnceLock<u64> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kib = |field: &str| -> Option<u64> {
            let line = info.lines().find(|l| l.starts_with(field))?;
            line.split_whitespace().nth(1)?.parse().ok()
        };
        match (kib("MemTotal:"), kib("SwapTotal:")) {
            (Some(ram), swap) => (ram + swap.unwrap_or(0)).saturating_mul(1024),
            _ => u64::MAX,
        }
    })
}

/// An array of `shape` filled by `f`, or [`Error::OutOfMemory`] if it cannot fit.
pub fn try_from_shape_fn<T>(
    what: impl FnOnce() -> String,
    shape: &[usize],
    f: impl FnMut(IxDyn) -> T,
) -> Result<ArrayD<T>> {
    let count = crate::shape::checked_numel(shape).unwrap_or(usize::MAX);
    check_alloc(what, count, std::mem::size_of::<T>())?;
    Ok(ArrayD::from_shape_fn(IxDyn(shape), f))
}

/// An owned n-dimensional array of any supported dtype.
///
/// This is what [`crate::NumericalFunction::call_dyn`] and [`crate::tensor::eval`] take and
/// return; for `f64` data the typed [`crate::NumericalFunction::call`] is simpler.
///
/// ```
/// use anvil::{HostArray, DType, ndarray::arr1};
/// let a = HostArray::from(arr1(&[1.0f32, 2.0]).into_dyn());
/// assert_eq!(a.dtype(), DType::F32);
/// assert_eq!(a.shape(), &[2]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum HostArray {
    /// `bool` elements.
    Bool(ArrayD<bool>),
    /// `i32` elements.
    I32(ArrayD<i32>),
    /// `i64` elements.
    I64(ArrayD<i64>),
    /// `f32` elements.
    F32(ArrayD<f32>),
    /// `f64` elements.
    F64(ArrayD<f64>),
}

/// Applies `$body` to the array inside a [`HostArray`], whatever its element type.
macro_rules! with_host_array {
    ($value:expr, $a:ident => $body:expr) => {
        match $value {
            HostArray::Bool($a) => $body,
            HostArray::I32($a) => $body,
            HostArray::I64($a) => $body,
            HostArray::F32($a) => $body,
            HostArray::F64($a) => $body,
        }
    };
}

impl HostArray {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            HostArray::Bool(_) => DType::Bool,
            HostArray::I32(_) => DType::I32,
            HostArray::I64(_) => DType::I64,
            HostArray::F32(_) => DType::F32,
            HostArray::F64(_) => DType::F64,
        }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        with_host_array!(self, a => a.shape())
    }

    /// The elements in row-major order, converted to `f64`.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        with_host_array!(self, a => a.iter().map(|&v| Element::to_f64(v)).collect())
    }

    /// The elements in row-major order as the bytes of a C++ array of the dtype (native
    /// byte order; `bool` as one byte, 0 or 1), borrowed when the array is contiguous.
    ///
    /// ```
    /// use anvil::{HostArray, ndarray::arr1};
    /// let a = HostArray::from(arr1(&[1i32, -2]).into_dyn());
    /// assert_eq!(&*a.bytes(), [1i32.to_ne_bytes(), (-2i32).to_ne_bytes()].concat().as_slice());
    /// ```
    pub fn bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        fn of<T: Copy>(a: &ArrayD<T>, to_bytes: impl Fn(T) -> Vec<u8>) -> std::borrow::Cow<'_, [u8]> {
            match a.as_slice() {
                // SAFETY: `T` is one of bool, i32, i64, f32, f64: no padding, and every byte of
                // an initialised value may be read as `u8`.
                Some(s) => {
                    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }.into()
                }
                None => a.iter().flat_map(|&v| to_bytes(v)).collect::<Vec<u8>>().into(),
            }
        }
        match self {
            HostArray::Bool(a) => of(a, |v| vec![v as u8]),
            HostArray::I32(a) => of(a, |v| v.to_ne_bytes().to_vec()),
            HostArray::I64(a) => of(a, |v| v.to_ne_bytes().to_vec()),
            HostArray::F32(a) => of(a, |v| v.to_ne_bytes().to_vec()),
            HostArray::F64(a) => of(a, |v| v.to_ne_bytes().to_vec()),
        }
    }

    /// True if every element is an integer index into `0..len` (integer arrays only).
    ///
    /// ```
    /// use anvil::{HostArray, ndarray::arr1};
    /// assert!(HostArray::from(arr1(&[0i32, 2]).into_dyn()).indices_within(3));
    /// assert!(!HostArray::from(arr1(&[0i64, 3]).into_dyn()).indices_within(3));
    /// ```
    pub fn indices_within(&self, len: usize) -> bool {
        let within = |v: i64| usize::try_from(v).is_ok_and(|v| v < len);
        match self {
            HostArray::I32(a) => a.iter().all(|&v| within(v as i64)),
            HostArray::I64(a) => a.iter().all(|&v| within(v)),
            _ => false,
        }
    }

    /// The array converted to `f64`.
    pub fn to_f64(&self) -> ArrayD<f64> {
        with_host_array!(self, a => a.mapv(Element::to_f64))
    }

    /// The element at row-major position `k` as an `f64` (exact for every dtype but large
    /// `i64`s: see [`i64_at`](Self::i64_at)), or `None` past the end.
    ///
    /// ```
    /// use anvil::HostArray;
    /// let a = HostArray::F32(ndarray::arr2(&[[1.5f32, 2.0], [3.0, 4.0]]).into_dyn());
    /// assert_eq!((a.f64_at(0), a.f64_at(4)), (Some(1.5), None));
    /// ```
    pub fn f64_at(&self, k: usize) -> Option<f64> {
        with_host_array!(self, a => nth(a, k).map(Element::to_f64))
    }

    /// The element at row-major position `k` of an `i64` array (`None` past the end, or for
    /// another dtype).
    pub fn i64_at(&self, k: usize) -> Option<i64> {
        match self {
            HostArray::I64(a) => nth(a, k),
            _ => None,
        }
    }

    /// A zero-filled array of the given dtype and shape, or [`Error::OutOfMemory`] if it
    /// cannot fit in this machine's memory.
    pub fn try_zeros(dtype: DType, shape: &[usize]) -> Result<Self> {
        let count = crate::shape::checked_numel(shape).unwrap_or(usize::MAX);
        let what = || format!("a {dtype} array of shape {shape:?}");
        check_alloc(what, count, dtype.size())?;
        Ok(Self::zeros(dtype, shape))
    }

    /// A zero-filled array of the given dtype and shape (see [`try_zeros`](Self::try_zeros)
    /// for shapes that come from users).
    pub fn zeros(dtype: DType, shape: &[usize]) -> Self {
        let dim = IxDyn(shape);
        match dtype {
            DType::Bool => HostArray::Bool(ArrayD::from_elem(dim, false)),
            DType::I32 => HostArray::I32(ArrayD::zeros(dim)),
            DType::I64 => HostArray::I64(ArrayD::zeros(dim)),
            DType::F32 => HostArray::F32(ArrayD::zeros(dim)),
            DType::F64 => HostArray::F64(ArrayD::zeros(dim)),
        }
    }
}

/// A Rust element type that anvil arrays can hold: `f64`, `f32`, `i64`, `i32`, `bool`.
pub trait Element: Copy + Send + Sync + 'static + std::fmt::Debug {
    /// The matching [`DType`].
    const DTYPE: DType;
    /// Wraps an owned array.
    fn wrap(array: ArrayD<Self>) -> HostArray;
    /// Borrows the array inside `host` if it has this element type.
    fn view(host: &HostArray) -> Option<ArrayViewD<'_, Self>>;
    /// The value as `f64` (`true` is 1).
    fn to_f64(self) -> f64;
}

macro_rules! impl_element {
    ($t:ty, $variant:ident, $to_f64:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            fn wrap(array: ArrayD<Self>) -> HostArray {
                HostArray::$variant(array)
            }
            fn view(host: &HostArray) -> Option<ArrayViewD<'_, Self>> {
                match host {
                    HostArray::$variant(a) => Some(a.view()),
                    _ => None,
                }
            }
            fn to_f64(self) -> f64 {
                $to_f64(self)
            }
        }
        impl From<ArrayD<$t>> for HostArray {
            fn from(array: ArrayD<$t>) -> Self {
                HostArray::$variant(array)
            }
        }
    };
}

impl_element!(f64, F64, |v: f64| v);
impl_element!(f32, F32, |v: f32| v as f64);
impl_element!(i64, I64, |v: i64| v as f64);
impl_element!(i32, I32, |v: i32| v as f64);
impl_element!(bool, Bool, |v: bool| v as u8 as f64);

pub(crate) use with_host_array;

/// The element at row-major position `k` of `a`, or `None` past the end.
fn nth<T: Copy>(a: &ArrayD<T>, k: usize) -> Option<T> {
    match a.as_slice() {
        Some(elements) => elements.get(k).copied(),
        None => a.iter().nth(k).copied(),
    }
}

//! Shapes, broadcasting and axis arguments.

/// A tensor shape: the extent of each dimension, outermost first. `[]` is a scalar.
pub type Shape = Vec<usize>;

/// Anything that names a shape: `()`, `n`, `[m, n]`, `&[m, n]`, `vec![m, n]`.
pub trait IntoShape {
    /// The shape as a vector of extents.
    fn into_shape(self) -> Shape;
}

impl IntoShape for () {
    fn into_shape(self) -> Shape {
        Vec::new()
    }
}
impl IntoShape for usize {
    fn into_shape(self) -> Shape {
        vec![self]
    }
}
impl<const N: usize> IntoShape for [usize; N] {
    fn into_shape(self) -> Shape {
        self.to_vec()
    }
}
impl IntoShape for &[usize] {
    fn into_shape(self) -> Shape {
        self.to_vec()
    }
}
impl IntoShape for Vec<usize> {
    fn into_shape(self) -> Shape {
        self
    }
}
impl IntoShape for &Vec<usize> {
    fn into_shape(self) -> Shape {
        self.clone()
    }
}

/// Anything that names a set of axes; negative axes count from the end (`-1` is the last).
pub trait IntoAxes {
    /// The axes as signed integers, not yet checked against a rank.
    fn into_axes(self) -> Vec<isize>;
}
impl IntoAxes for isize {
    fn into_axes(self) -> Vec<isize> {
        vec![self]
    }
}
impl IntoAxes for i32 {
    fn into_axes(self) -> Vec<isize> {
        vec![self as isize]
    }
}
impl IntoAxes for usize {
    fn into_axes(self) -> Vec<isize> {
        vec![self as isize]
    }
}
impl<const N: usize> IntoAxes for [isize; N] {
    fn into_axes(self) -> Vec<isize> {
        self.to_vec()
    }
}
impl<const N: usize> IntoAxes for [i32; N] {
    fn into_axes(self) -> Vec<isize> {
        self.iter().map(|&a| a as isize).collect()
    }
}
impl<const N: usize> IntoAxes for [usize; N] {
    fn into_axes(self) -> Vec<isize> {
        self.iter().map(|&a| a as isize).collect()
    }
}
impl IntoAxes for &[isize] {
    fn into_axes(self) -> Vec<isize> {
        self.to_vec()
    }
}
impl IntoAxes for Vec<isize> {
    fn into_axes(self) -> Vec<isize> {
        self
    }
}
impl IntoAxes for &[usize] {
    fn into_axes(self) -> Vec<isize> {
        self.iter().map(|&a| a as isize).collect()
    }
}
impl IntoAxes for Vec<usize> {
    fn into_axes(self) -> Vec<isize> {
        self.iter().map(|&a| a as isize).collect()
    }
}

/// The most elements one tensor may have: 2^48. Index arithmetic in generated code (64-bit)
/// and byte sizes then stay far from overflowing.
pub const MAX_ELEMENTS: usize = 1 << 48;

/// Number of elements of a shape.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The number of elements of `shape`, or `None` if the shape is too large for anvil: some
/// stride (a product of trailing extents, zero extents counting as one) exceeds
/// [`MAX_ELEMENTS`] or overflows.
///
/// ```
/// use anvil::internals::shape::checked_numel;
/// assert_eq!(checked_numel(&[3, 4]), Some(12));
/// assert_eq!(checked_numel(&[1 << 32, 1 << 32]), None);
/// assert_eq!(checked_numel(&[0, 1 << 40, 1 << 40]), None); // no elements, but its strides overflow
/// ```
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    let mut strides = 1usize;
    for &n in shape {
        strides = strides.checked_mul(n.max(1)).filter(|&s| s <= MAX_ELEMENTS)?;
    }
    Some(numel(shape))
}

/// Why `shape` is rejected by [`checked_numel`], for messages.
pub fn too_large(shape: &[usize]) -> String {
    format!("shape {} is too large: anvil supports at most 2^48 elements per tensor", fmt_shape(shape))
}

/// Row-major strides (in elements) of a contiguous buffer of this shape.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// The numpy broadcast of two shapes, or `None` if they are incompatible.
pub fn broadcast(a: &[usize], b: &[usize]) -> Option<Shape> {
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], d: usize| {
        if d + s.len() < rank {
            1
        } else {
            s[d + s.len() - rank]
        }
    };
    (0..rank)
        .map(|d| match (dim(a, d), dim(b, d)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// Resolves possibly negative axes against `rank`; `None` if one is out of range or repeated.
pub fn normalize_axes(axes: &[isize], rank: usize) -> Option<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let a = if a < 0 { a + rank as isize } else { a };
        if a < 0 || a as usize >= rank || out.contains(&(a as usize)) {
            return None;
        }
        out.push(a as usize);
    }
    Some(out)
}

/// Formats a shape the way messages show it: `[3, 4]`.
pub fn fmt_shape(shape: &[usize]) -> String {
    format!("{shape:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast(&[3, 1], &[4]), Some(vec![3, 4]));
        assert_eq!(broadcast(&[], &[2, 2]), Some(vec![2, 2]));
        assert_eq!(broadcast(&[3], &[4]), None);
    }

    #[test]
    fn strides_are_row_major() {
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(strides(&[]), Vec::<usize>::new());
    }

    #[test]
    fn axes_normalize() {
        assert_eq!(normalize_axes(&[-1, 0], 3), Some(vec![2, 0]));
        assert_eq!(normalize_axes(&[3], 3), None);
        assert_eq!(normalize_axes(&[1, -2], 3), None);
    }
}

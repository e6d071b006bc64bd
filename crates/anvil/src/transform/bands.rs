//! Banded Jacobians: the Jacobian of a vector function of a vector, one diagonal at a time.
//!
//! Stencils, finite differences and chains of neighbour terms (`x[i+1] - x[i]²`) are
//! elementwise math on shifted copies of one vector. Their Jacobian is banded, and each band
//! is itself such a vector: `B_d[i] = ∂y_i/∂x_{i+d}`. The bands follow from the forward
//! rules: an elementwise op maps the bands of its operands with offset `d` to its band `d`
//! (its forward-mode tangent rule, [`super::jvp`], applied to them), and a shift (pad or shrink of a
//! vector) moves every band to another offset, shifted the same way. So the non-zeros of a
//! sparse Jacobian or Hessian are computed with contiguous vector code and no seed matrix,
//! where colouring would compute each colour's mixture of bands from a seed read from
//! memory. Anything else reached from `x` (a reduction, a gather, a reshape, an axis of
//! another extent) leaves the banded class, and the caller colours instead.
//!
//! ```
//! use anvil::{Tensor, DType, internals::transform::bands::jacobian_bands};
//! let x = Tensor::input(0, 5, DType::F64);
//! let p = x.pad(&[(1, 1)]);
//! let y = p.shrink(&[(0, 5)]) - &x * 2.0 + p.shrink(&[(2, 7)]); // a second difference
//! let bands = jacobian_bands(&y, &x).unwrap().unwrap();
//! assert_eq!(bands.keys().copied().collect::<Vec<_>>(), [-1, 0, 1]);
//! ```

use super::jvp::tangent_rule;
use crate::error::Result;
use crate::graph::{map_graph, NodeRef, Op};
use crate::tensor::Tensor;
use std::collections::{BTreeMap, BTreeSet};

/// The bands of a node's Jacobian: offset `d` → the vector `B_d` (the node's shape).
pub type Bands = BTreeMap<i64, Tensor>;

/// The most bands a Jacobian is computed by: a wider one is coloured.
pub const MAX_BANDS: usize = 64;

/// The bands of the Jacobian of `y` with respect to `x` (both vectors), or `None` if the
/// graph between them is not a banded one (see the module doc) or has more than
/// [`MAX_BANDS`] bands.
pub fn jacobian_bands(y: &Tensor, x: &Tensor) -> Result<Option<Bands>> {
    let (y_node, x_node) = (y.node()?.clone(), x.node()?.clone());
    if x.ndim() != 1 || y.ndim() != 1 || !x.dtype().is_float() {
        return Ok(None);
    }
    // `Err(None)`: the graph leaves the banded class (an answer, not an error).
    let found = map_graph(
        std::slice::from_ref(&y_node),
        |node, srcs: &[&Bands]| -> std::result::Result<Bands, Option<crate::error::Error>> {
            let own = if node.id() == x_node.id() {
                Bands::from([(0, Tensor::full(node.shape.clone(), 1.0, node.dtype))])
            } else if !node.dtype.is_float() || srcs.iter().all(|b| b.is_empty()) {
                Bands::new()
            } else {
                let srcs: Vec<Option<&Bands>> = srcs.iter().map(|&b| Some(b)).collect();
                match node_bands(node, &srcs) {
                    Some(b) if b.len() <= MAX_BANDS => b,
                    _ => return Err(None),
                }
            };
            for t in own.values() {
                t.check().map_err(Some)?;
            }
            Ok(own)
        },
    );
    match found {
        Ok(mut bands) => Ok(Some(bands.remove(0))),
        Err(None) => Ok(None),
        Err(Some(e)) => Err(e),
    }
}

/// The bands of `node` from those of its sources (some non-empty); `None` outside the
/// banded class.
fn node_bands(node: &NodeRef, srcs: &[Option<&Bands>]) -> Option<Bands> {
    if node.shape.len() != 1 {
        return None;
    }
    let band = |s: usize, d: i64| srcs[s].and_then(|b| b.get(&d)).cloned();
    match &node.op {
        Op::Unary(_) | Op::Binary(_) | Op::Where | Op::Cast => {
            let offsets: BTreeSet<i64> = srcs.iter().flatten().flat_map(|b| b.keys().copied()).collect();
            let mut out = Bands::new();
            for d in offsets {
                let tangents: Vec<Option<Tensor>> = (0..srcs.len()).map(|s| band(s, d)).collect();
                if let Some(t) = tangent_rule(node, &tangents) {
                    out.insert(d, t);
                }
            }
            Some(out)
        }
        // y[i] = a[i - before]: a's band d' is y's band d' - before.
        Op::Pad(pads) => {
            let before = i64::try_from(pads[0].0).ok()?;
            Some(srcs[0]?.iter().map(|(&d, t)| (d - before, t.pad(pads))).collect())
        }
        // y[i] = a[i + start]: a's band d' is y's band d' + start.
        Op::Shrink(ranges) => {
            let start = i64::try_from(ranges[0].0).ok()?;
            Some(srcs[0]?.iter().map(|(&d, t)| (d + start, t.shrink(ranges))).collect())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn only_shifts_and_elementwise_math_of_a_vector_are_banded() {
        let x = Tensor::input(0, 6, DType::F64);
        let shifted = x.shrink(&[(1, 6)]).pad(&[(0, 1)]) * x.sin(); // y[i] = x[i+1]·sin x[i]
        let bands = jacobian_bands(&shifted, &x).unwrap().unwrap();
        assert_eq!(bands.keys().copied().collect::<Vec<_>>(), [0, 1]);
        assert!(jacobian_bands(&(&x * 2.0).floor(), &x).unwrap().unwrap().is_empty());
        let outside = [&x * x.sum(), x.flip(0), x.reshape([2, 3]).sum_axes(1, false)];
        for y in outside {
            assert!(jacobian_bands(&y, &x).unwrap().is_none());
        }
        let matrix = Tensor::input(0, [2, 3], DType::F64);
        assert!(jacobian_bands(&matrix.sin().flatten(), &matrix).unwrap().is_none());
        let wide = Tensor::input(0, 200, DType::F64);
        let p = wide.pad(&[(40, 40)]);
        let stencil = (0..81).map(|k| p.shrink(&[(k, k + 200)])).reduce(|a, b| a + b).unwrap();
        assert!(jacobian_bands(&stencil, &wide).unwrap().is_none(), "81 bands > MAX_BANDS");
    }
}

//! Graph colouring for compressed derivatives.
//!
//! Columns of a Jacobian that share no row can be probed by one directional derivative:
//! a distance-2 colouring of the column intersection graph groups them. For a symmetric
//! Hessian a star colouring (no two-coloured path on four vertices) needs fewer colours
//! and still lets every entry be read off directly. Both are greedy in natural order,
//! which is optimal on banded patterns (tridiagonal: 3 colours, diagonal: 1); the star
//! colouring keeps the better of two greedy passes (see [`star_coloring`]).

use crate::pattern::SparsityPattern;
use std::collections::HashMap;

/// A colour per column, and the number of colours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coloring {
    /// The colour of each column, `0..count`.
    pub colors: Vec<usize>,
    /// The number of colours (directional derivatives needed).
    pub count: usize,
}

impl Coloring {
    fn from_colors(colors: Vec<usize>) -> Self {
        let count = colors.iter().map(|&c| c + 1).max().unwrap_or(0);
        Coloring { colors, count }
    }
}

/// The smallest colour not in `forbidden` (marked with `stamp`).
fn first_free(forbidden: &[usize], stamp: usize) -> usize {
    forbidden.iter().position(|&f| f != stamp).unwrap_or(forbidden.len())
}

/// Distance-2 colouring of the columns: two columns with a non-zero in the same row get
/// different colours.
///
/// ```
/// use anvil::ad::{column_coloring, SparsityPattern};
/// let tridiagonal = SparsityPattern::new(5, 5, (0..5usize).flat_map(|i| [i.saturating_sub(1), i, (i + 1).min(4)].map(|j| (i, j)))).unwrap();
/// assert_eq!(column_coloring(&tridiagonal).count, 3);
/// ```
pub fn column_coloring(pattern: &SparsityPattern) -> Coloring {
    let (_, cols) = pattern.shape();
    let columns = pattern.columns();
    let mut colors = vec![usize::MAX; cols];
    let mut forbidden = vec![usize::MAX; cols + 1];
    for j in 0..cols {
        for &i in &columns[j] {
            for &k in pattern.row(i) {
                if colors[k] != usize::MAX {
                    forbidden[colors[k]] = j;
                }
            }
        }
        colors[j] = first_free(&forbidden, j);
    }
    Coloring::from_colors(colors)
}

/// Star colouring of a symmetric pattern (the diagonal is ignored): a proper colouring in
/// which every path on four vertices uses at least three colours.
///
/// Two greedy passes in natural order, the one with fewer colours kept: the plain greedy,
/// and one that also keeps apart vertices two steps away through a vertex not yet coloured.
/// The second is what a Hessian with a few dense rows needs (the parameters of a parameter
/// estimation, coupled to every state, but not to each other): the plain greedy gives those
/// hubs one colour, and then every other vertex a colour of its own (COPS gasoil: 126
/// colours of 253 columns, against 7).
///
/// ```
/// use anvil::ad::{star_coloring, SparsityPattern};
/// // An arrowhead: the first row and column are full. Star colouring needs only 2 colours.
/// let n = 6;
/// let arrow = SparsityPattern::new(n, n, (0..n).flat_map(|i| [(0, i), (i, 0), (i, i)])).unwrap();
/// assert_eq!(star_coloring(&arrow).count, 2);
/// ```
pub fn star_coloring(pattern: &SparsityPattern) -> Coloring {
    let plain = star_greedy(pattern, false);
    let apart = star_greedy(pattern, true);
    if apart.count < plain.count {
        apart
    } else {
        plain
    }
}

/// One greedy star colouring in natural order; `apart`: also forbid the colours of vertices
/// two steps away through an uncoloured vertex (never needed for validity, which the other
/// rules ensure; it only steers the choices).
fn star_greedy(pattern: &SparsityPattern, apart: bool) -> Coloring {
    let (n, _) = pattern.shape();
    let neighbours = |v: usize| pattern.row(v).iter().copied().filter(move |&w| w != v);
    const NONE: usize = usize::MAX;
    let mut colors = vec![NONE; n];
    // For each vertex, how many of its neighbours have each colour.
    let mut around: Vec<HashMap<usize, usize>> = vec![HashMap::new(); n];
    let mut forbidden = vec![NONE; n + 1];
    for v in 0..n {
        let mut seen: HashMap<usize, usize> = HashMap::new(); // colour -> neighbours of v with it
        for w in neighbours(v) {
            if colors[w] != NONE {
                forbidden[colors[w]] = v; // proper colouring
                *seen.entry(colors[w]).or_default() += 1;
            }
        }
        for w in neighbours(v) {
            let a = colors[w];
            if a == NONE {
                if apart {
                    for x in neighbours(w).filter(|&x| x != v && colors[x] != NONE) {
                        forbidden[colors[x]] = v;
                    }
                }
                continue;
            }
            for x in neighbours(w).filter(|&x| x != v) {
                let c = colors[x];
                if c == NONE {
                    continue;
                }
                // u - v - w - x with colour(u) = colour(w) = a: v must not take colour(x).
                // v - w - x - y with colour(y) = colour(w) = a: likewise.
                let other_a_around_v = seen[&a] >= 2;
                let other_a_around_x = around[x].get(&a).copied().unwrap_or(0) >= 2;
                if other_a_around_v || other_a_around_x {
                    forbidden[c] = v;
                }
            }
        }
        let c = first_free(&forbidden, v);
        colors[v] = c;
        for w in neighbours(v) {
            *around[w].entry(c).or_default() += 1;
        }
    }
    Coloring::from_colors(colors)
}

/// True if `coloring` is a valid distance-2 column colouring of `pattern` (no row has two
/// non-zero columns of one colour).
pub fn is_column_coloring(pattern: &SparsityPattern, coloring: &Coloring) -> bool {
    let (rows, _) = pattern.shape();
    (0..rows).all(|i| {
        let mut used = std::collections::HashSet::new();
        pattern.row(i).iter().all(|&j| used.insert(coloring.colors[j]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn banded(n: usize, half: usize) -> SparsityPattern {
        SparsityPattern::new(
            n,
            n,
            (0..n).flat_map(|i| (i.saturating_sub(half)..=(i + half).min(n - 1)).map(move |j| (i, j))),
        )
        .unwrap()
    }

    #[test]
    fn banded_patterns_get_the_optimal_colour_count() {
        let diagonal = banded(10, 0);
        assert_eq!(column_coloring(&diagonal).count, 1);
        assert_eq!(star_coloring(&diagonal).count, 1);
        assert_eq!(column_coloring(&banded(10, 1)).count, 3);
        assert_eq!(star_coloring(&banded(10, 1)).count, 3);
        assert_eq!(column_coloring(&banded(20, 2)).count, 5);
    }

    #[test]
    fn colourings_are_valid() {
        let p = SparsityPattern::new(
            6,
            6,
            [(0, 0), (0, 3), (1, 1), (1, 3), (2, 2), (2, 5), (3, 0), (3, 1), (4, 4), (5, 2)],
        )
        .unwrap();
        assert!(is_column_coloring(&p, &column_coloring(&p)));
    }

    /// Three parameters coupled to every state of ten blocks of three (not to each other):
    /// the Hessian of a parameter estimation.
    fn hubs_and_blocks() -> SparsityPattern {
        let (hubs, blocks, size) = (3, 10, 3);
        let n = hubs + blocks * size;
        let mut entries: Vec<(usize, usize)> = (0..n).map(|i| (i, i)).collect();
        for h in 0..hubs {
            entries.extend((hubs..n).flat_map(|s| [(h, s), (s, h)]));
        }
        for b in 0..blocks {
            let first = hubs + b * size;
            for i in first..first + size {
                entries.extend((first..first + size).map(|j| (i, j)));
            }
        }
        SparsityPattern::new(n, n, entries).unwrap()
    }

    #[test]
    fn star_colouring_keeps_parameters_apart() {
        // The plain greedy gives the three hubs one colour and then each state its own (31).
        assert!(star_coloring(&hubs_and_blocks()).count <= 6, "{:?}", star_coloring(&hubs_and_blocks()));
        assert_eq!(star_greedy(&hubs_and_blocks(), false).count, 31);
    }

    #[test]
    fn star_colouring_has_no_two_coloured_path_of_four() {
        for p in [banded(12, 2).symmetrized(), hubs_and_blocks()] {
            assert_star(&p);
        }
    }

    fn assert_star(p: &SparsityPattern) {
        let c = star_coloring(p);
        let n = p.shape().0;
        let nb = |v: usize| p.row(v).iter().copied().filter(move |&w| w != v).collect::<Vec<_>>();
        for a in 0..n {
            for b in nb(a) {
                assert_ne!(c.colors[a], c.colors[b]);
                for cc in nb(b).into_iter().filter(|&x| x != a) {
                    for d in nb(cc).into_iter().filter(|&x| x != b && x != a) {
                        let two = c.colors[a] == c.colors[cc] && c.colors[b] == c.colors[d];
                        assert!(!two, "path {a}-{b}-{cc}-{d} uses two colours");
                    }
                }
            }
        }
    }
}

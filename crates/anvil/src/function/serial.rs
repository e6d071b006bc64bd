//! Functions as files: anvil's versioned function format (JSON; `docs/function-format.md`).
//! A function travels without the code that traced it: its graph, inputs, name and (for
//! sparse functions) its pattern.

use super::arg::Arg;
use super::numerical::NumericalFunction;
use crate::error::{Error, Result};
use crate::graph::serial::{self, invalid, GraphDoc};
use crate::graph::TraceId;
use crate::pattern::SparsityPattern;
use crate::tensor::Tensor;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` field of a function file.
pub const FUNCTION_FORMAT: &str = "anvil.function";
/// The `format` field of a tensor file.
pub const TENSOR_FORMAT: &str = "anvil.tensor";
/// The version this anvil writes and reads.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct FunctionDoc {
    format: String,
    version: u32,
    name: String,
    inputs: Vec<ArgDoc>,
    graph: GraphDoc,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sparsity: Option<SparsityDoc>,
}

#[derive(Serialize, Deserialize)]
struct ArgDoc {
    shape: Vec<usize>,
    dtype: String,
}

/// A sparse output's CSC pattern, and how many directional derivatives compute it.
#[derive(Serialize, Deserialize)]
struct SparsityDoc {
    rows: usize,
    cols: usize,
    indices: Vec<usize>,
    indptr: Vec<usize>,
    colors: usize,
}

#[derive(Serialize, Deserialize)]
struct TensorDoc {
    format: String,
    version: u32,
    graph: GraphDoc,
}

/// Checks the `format` and `version` fields before anything else is read.
fn check_header(bytes: &[u8], format: &str) -> Result<()> {
    #[derive(Deserialize)]
    struct Header {
        format: Option<String>,
        version: Option<u32>,
    }
    let header: Header = serde_json::from_slice(bytes)
        .map_err(|e| invalid(format!("not an anvil file (expected JSON with a `format` field: {e})")))?;
    match (header.format.as_deref(), header.version) {
        (Some(f), Some(v)) if f == format && v == FORMAT_VERSION => Ok(()),
        (Some(f), Some(v)) if f == format => Err(invalid(format!(
            "it is version {v} of the `{format}` format; this anvil reads version {FORMAT_VERSION} (use the anvil that \
             wrote it)"
        ))),
        (f, _) => Err(invalid(format!(
            "expected the `{format}` format, found {}",
            f.map_or("none".into(), |f| format!("`{f}`"))
        ))),
    }
}

impl NumericalFunction {
    /// The function in anvil's function format: its graph, inputs, name and sparsity, with
    /// no reference to the code that traced it (captured arrays are included).
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction, ndarray::array};
    /// # fn main() -> anvil::Result<()> {
    /// let f = NumericalFunction::new("f", |[x]| (x.sin() * 2.0).sum(), [Arg::new(3)])?;
    /// let g = NumericalFunction::from_bytes(&f.to_bytes())?;
    /// let x = array![0.1, 0.2, 0.3].into_dyn();
    /// assert_eq!(g.name(), "f");
    /// assert_eq!(g.eval(&[x.view()])?, f.eval(&[x.view()])?);
    /// # Ok(()) }
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_bytes_with_colors(0)
    }

    pub(crate) fn to_bytes_with_colors(&self, colors: usize) -> Vec<u8> {
        let outputs: Vec<_> = self.output_tensors().iter().map(|t| t.node().expect("traced").clone()).collect();
        let (graph, _) = serial::encode(&outputs);
        let doc = FunctionDoc {
            format: FUNCTION_FORMAT.into(),
            version: FORMAT_VERSION,
            name: self.name().into(),
            inputs: self
                .inputs()
                .iter()
                .map(|a| ArgDoc { shape: a.shape.clone(), dtype: a.dtype.name().into() })
                .collect(),
            graph,
            sparsity: self.sparsity().map(|p| {
                let ((rows, cols), (indptr, indices)) = (p.shape(), p.csc());
                SparsityDoc { rows, cols, indices, indptr, colors }
            }),
        };
        serde_json::to_vec(&doc).expect("a function document serialises")
    }

    /// A function from [`to_bytes`](Self::to_bytes) (a sparse function comes back as the
    /// function of its values, with its pattern). The bytes are checked: a corrupted or
    /// foreign file is an [`Error::Deserialize`], never a crash.
    pub fn from_bytes(bytes: &[u8]) -> Result<NumericalFunction> {
        Ok(Self::from_bytes_with_colors(bytes)?.0)
    }

    /// [`from_bytes`](Self::from_bytes), also returning the stored colour count.
    pub(crate) fn from_bytes_with_colors(bytes: &[u8]) -> Result<(NumericalFunction, usize)> {
        check_header(bytes, FUNCTION_FORMAT)?;
        let doc: FunctionDoc =
            serde_json::from_slice(bytes).map_err(|e| invalid(format!("malformed function file: {e}")))?;
        let inputs = doc
            .inputs
            .iter()
            .map(|a| Ok(Arg::with_dtype(a.shape.clone(), serial::parse_dtype(&a.dtype)?)))
            .collect::<Result<Vec<Arg>>>()?;
        let trace = TraceId::fresh();
        let outputs: Vec<Tensor> = serial::decode(&doc.graph, trace)?.into_iter().map(Tensor::from_node).collect();
        let function = NumericalFunction::from_trace(&doc.name, inputs, &outputs, trace).map_err(|e| match e {
            Error::InvalidName { .. } | Error::InputMismatch { .. } => invalid(e.to_string()),
            other => other,
        })?;
        match doc.sparsity {
            None => Ok((function, 0)),
            Some(s) => {
                let pattern = SparsityPattern::from_csc(s.rows, s.cols, &s.indices, &s.indptr).map_err(invalid)?;
                let sparse = super::sparse::SparseNumericalFunction::new(function, pattern, s.colors)
                    .map_err(|e| invalid(e.to_string()))?;
                Ok((sparse.into_function(), s.colors))
            }
        }
    }

    /// Writes the function to `path` in anvil's function format ([`to_bytes`](Self::to_bytes)),
    /// as CasADi's `Function.save`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.to_bytes()).map_err(|e| Error::io("write", path, e))
    }

    /// Reads a function written by [`save`](Self::save).
    pub fn load(path: impl AsRef<Path>) -> Result<NumericalFunction> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
        Self::from_bytes(&bytes)
    }
}

impl Tensor {
    /// The tensor's graph in anvil's tensor format (for pickling symbolic and constant
    /// tensors). Inputs it depends on come back as inputs of a new trace.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let (graph, _) = serial::encode(std::slice::from_ref(self.node()?));
        let doc = TensorDoc { format: TENSOR_FORMAT.into(), version: FORMAT_VERSION, graph };
        Ok(serde_json::to_vec(&doc).expect("a tensor document serialises"))
    }

    /// A tensor from [`to_bytes`](Self::to_bytes).
    pub fn from_bytes(bytes: &[u8]) -> Result<Tensor> {
        check_header(bytes, TENSOR_FORMAT)?;
        let doc: TensorDoc =
            serde_json::from_slice(bytes).map_err(|e| invalid(format!("malformed tensor file: {e}")))?;
        let mut outputs = serial::decode(&doc.graph, TraceId::fresh())?;
        if outputs.len() != 1 {
            return Err(invalid(format!("a tensor file has one output, this one has {}", outputs.len())));
        }
        Ok(Tensor::from_node(outputs.remove(0)))
    }
}

//! `+ - * /` and unary `-` on owned and borrowed tensors and `f64` scalars.

use super::Tensor;
use crate::graph::BinaryOp;
use std::ops::{Add, Div, Mul, Neg, Sub};

macro_rules! binary_operator {
    ($trait:ident, $method:ident, $op:expr, $name:literal) => {
        impl $trait<&Tensor> for &Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                self.binary(rhs, $op, $name)
            }
        }
        impl $trait<Tensor> for &Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                self.binary(&rhs, $op, $name)
            }
        }
        impl $trait<&Tensor> for Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                self.binary(rhs, $op, $name)
            }
        }
        impl $trait<Tensor> for Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                self.binary(&rhs, $op, $name)
            }
        }
        impl $trait<f64> for &Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: f64) -> Tensor {
                self.binary(&Tensor::scalar(rhs), $op, $name)
            }
        }
        impl $trait<f64> for Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: f64) -> Tensor {
                self.binary(&Tensor::scalar(rhs), $op, $name)
            }
        }
        impl $trait<&Tensor> for f64 {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                Tensor::scalar(self).binary(rhs, $op, $name)
            }
        }
        impl $trait<Tensor> for f64 {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                Tensor::scalar(self).binary(&rhs, $op, $name)
            }
        }
    };
}

binary_operator!(Add, add, BinaryOp::Add, "add");
binary_operator!(Sub, sub, BinaryOp::Sub, "sub");
binary_operator!(Mul, mul, BinaryOp::Mul, "mul");
binary_operator!(Div, div, BinaryOp::Div, "div");

impl Neg for &Tensor {
    type Output = Tensor;
    #[track_caller]
    fn neg(self) -> Tensor {
        Tensor::neg(self)
    }
}

impl Neg for Tensor {
    type Output = Tensor;
    #[track_caller]
    fn neg(self) -> Tensor {
        Tensor::neg(&self)
    }
}

//! One module per route.

pub mod not_found;
pub mod pay;
pub mod shop;
pub mod signin;

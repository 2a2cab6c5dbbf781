//! The pure half of the daily bill reconciliation: reading the platform's bill
//! ([`bill`]) and comparing it with what we hold ([`classify`]). The backend's
//! `reconcile/` fetches the bill, reads the books under the date's advisory
//! lock and stores every classified row.

pub mod bill;
pub mod classify;

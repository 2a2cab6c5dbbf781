//! The checkout's pure rules: functions of what the backend read under its
//! locks, or of the text a request or a bill brought, with no database, no
//! network and no clock of their own. The backend carries out what they
//! decide; here they are tested without a database, the decisions on every
//! combination of their inputs.
//!
//! - [`charge`]: what a payment result does to its order (`decide`), and what
//!   an order may spend;
//! - [`refund`]: what a refund result does to its refund (`decide_refund`);
//! - [`order_no`]: the order number's one shape, made and parsed;
//! - [`origin`]: how a result reached us, which the refund rule weighs;
//! - [`query_schedule`]: when the platform is asked about a payment without a
//!   result, and when it is flagged as stuck;
//! - [`reconcile`]: a day's bill read and compared with what we hold;
//! - [`return_url`]: where a merchant may send its shoppers back to;
//! - [`state`]: the moves an order's and a payment attempt's state machines allow.

#![warn(missing_docs)]

pub mod charge;
pub mod order_no;
pub mod origin;
pub mod query_schedule;
pub mod reconcile;
pub mod refund;
pub mod return_url;
pub mod state;

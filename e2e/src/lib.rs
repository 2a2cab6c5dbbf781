//! Browser end-to-end test support.

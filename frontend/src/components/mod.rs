//! Small view pieces both pages use.

mod frame;
mod notice;
mod status_badge;

pub use frame::Frame;
pub use notice::NoticeBox;
pub use status_badge::StatusBadge;

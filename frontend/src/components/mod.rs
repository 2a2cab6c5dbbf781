//! Small view pieces the pages use.

mod frame;
mod notice;
mod sign_out;
mod status_badge;

pub use frame::Frame;
pub use notice::NoticeBox;
pub use sign_out::SignOutButton;
pub use status_badge::StatusBadge;

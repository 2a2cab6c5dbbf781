//! Who is calling: shoppers by session cookie ([`session`], passwords in
//! [`passwords`]), operators and merchants by bearer key ([`bearer`]).

pub mod bearer;
pub mod operator;
pub mod passwords;
pub mod session;

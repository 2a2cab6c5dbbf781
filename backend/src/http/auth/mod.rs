//! Who is calling: shoppers by session cookie ([`session`], passwords in
//! [`passwords`]), operators by the admin token ([`bearer`]), merchants by
//! their own API keys ([`merchant`]).

pub mod bearer;
pub mod merchant;
pub mod operator;
pub mod passwords;
pub mod session;
